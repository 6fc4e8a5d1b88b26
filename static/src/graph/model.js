// The graph of one snapshot (GET /api/snapshots/<id>/graph) and what of it is shown: which
// groups are expanded, which box holds each node, the edges between the boxes shown.
// A big graph comes lazy (the nodes of a group come when it is opened: `missing()` says
// which groups to fetch, `addMembers` takes the answer). No DOM here.

/** Boxes a graph opens with, at most (groups expand breadth-first while they fit;
 * explorer/graphview.py OPEN_BUDGET decides which groups a lazy answer loads). */
export const OPEN_BUDGET = 48;

const CONSTANT = 1;
const BARE = 2;

/**
 * @typedef {import("../protocol.js").SnapshotGraph} SnapshotGraph
 * @typedef {{key: string, kind: "node"|"group", id: (number|null), group: (number|null),
 *   label: string, sub: string, expanded: boolean, children: Array<Box>, members: number,
 *   width?: number}} Box
 */

export class GraphModel {
  /**
   * `graph.holders` names the group of every node, loaded or not; `graph.links` are the
   * operand edges into groups whose nodes are not loaded (by producer).
   * @param {SnapshotGraph} graph @param {{constants?: boolean}} [options]
   */
  constructor(graph, { constants = false } = {}) {
    this.graph = graph;
    this.lazy = Boolean(graph.lazy);
    this.constants = constants;
    this.groups = graph.groups;
    const H = graph.holders;
    this.ids = H.ids;
    this.size = H.ids.length;
    /** node id -> its position in `holders` */
    this.pos = new Map(H.ids.map((id, p) => [id, p]));
    this.hold = Int32Array.from(H.groups);
    this.flags = Uint8Array.from(H.flags);
    this.loaded = Uint8Array.from(this.groups, (g) => (g.loaded ? 1 : 0));
    /** group index -> its child groups and its loaded nodes */
    this.childGroups = this.groups.map(() => []);
    this.childNodes = this.groups.map(() => []);
    this.topGroups = [];
    this.topNodes = [];
    this.groups.forEach((g, i) => (g.parent < 0 ? this.topGroups : this.childGroups[g.parent]).push(i));
    /** the loaded nodes, by id */
    this.nodes = [];
    /** @type {Map<number, any>} */
    this.byId = new Map();
    this.edgeFrom = []; // operand edges into loaded nodes, as positions in `holders`
    this.edgeTo = [];
    this.addNodes(graph.nodes);
    this.linkFrom = Int32Array.from(graph.links, (l) => this.pos.get(l[0]) ?? -1);
    this.linkTo = Int32Array.from(graph.links, (l) => l[1]);
    this.linkCount = Int32Array.from(graph.links, (l) => l[2]);
    /** node ids of a function group (its function and its call) -> the group */
    this.groupOfNodeId = new Map();
    this.groups.forEach((g, i) => g.node_ids.forEach((id) => this.groupOfNodeId.set(id, i)));
    /** groups, deepest first: a child before its parent (for rollups) */
    const depth = this.groups.map(() => -1);
    const depthOf = (g) => (g < 0 ? -1 : depth[g] >= 0 ? depth[g] : (depth[g] = depthOf(this.groups[g].parent) + 1));
    this.groups.forEach((_, i) => depthOf(i));
    this.deepestFirst = this.groups.map((_, i) => i).sort((a, b) => depth[b] - depth[a]);
    /** @type {Set<number>} */
    this.expanded = new Set();
    this.openDefault();
  }

  addNodes(nodes) {
    for (const n of nodes) {
      if (this.byId.has(n.id)) continue;
      this.byId.set(n.id, n);
      this.nodes.push(n);
      (n.group < 0 ? this.topNodes : this.childNodes[n.group]).push(n.id);
      const to = this.pos.get(n.id);
      for (const src of n.inputs) {
        const from = this.pos.get(src);
        if (from !== undefined && to !== undefined) {
          this.edgeFrom.push(from);
          this.edgeTo.push(to);
        }
      }
    }
  }

  /** A GraphMembers answer: its groups' nodes join this model and the cached answer. */
  addMembers(members) {
    const fresh = members.nodes.filter((n) => !this.byId.has(n.id));
    this.addNodes(fresh);
    this.graph.nodes.push(...fresh);
    for (const g of members.groups) {
      if (g < 0) continue;
      this.loaded[g] = 1;
      this.graph.groups[g].loaded = true;
    }
  }

  /** Expanded groups (under expanded parents) whose nodes are not loaded yet. */
  missing() {
    const out = [];
    for (const g of this.expanded) {
      if (this.loaded[g]) continue;
      let up = this.groups[g].parent;
      while (up >= 0 && this.expanded.has(up)) up = this.groups[up].parent;
      if (up < 0) out.push(g);
    }
    return out.sort((a, b) => a - b);
  }

  shows(n) {
    return this.constants || n.kind !== "constant";
  }

  showsAt(p) {
    return this.constants || !(this.flags[p] & CONSTANT);
  }

  /** A call without a span (from `holders`, loaded or not). */
  isBare(id) {
    const p = this.pos.get(id);
    return p !== undefined && Boolean(this.flags[p] & BARE);
  }

  /** Expand breadth-first, in text order, while the boxes shown stay within the budget. */
  openDefault(budget = OPEN_BUDGET) {
    this.expanded.clear();
    let shown = this.topGroups.length + this.topNodes.filter((id) => this.shows(this.byId.get(id))).length;
    const queue = [...this.topGroups];
    while (queue.length) {
      const g = queue.shift();
      const grp = this.groups[g];
      const more = this.childGroups[g].length + grp.own + (this.constants ? grp.own_constants : 0);
      if (shown - 1 + more > budget) continue;
      this.expanded.add(g);
      shown += more - 1;
      queue.push(...this.childGroups[g]);
    }
  }

  /** Group indexes from the top down to the group holding node `id` (excluded: the node). */
  ancestors(id) {
    const p = this.pos.get(id);
    const chain = [];
    for (let g = p !== undefined ? this.hold[p] : this.groupOfNodeId.get(id) ?? -1; g >= 0; g = this.groups[g].parent) chain.push(g);
    if (p === undefined && this.groupOfNodeId.has(id)) chain.shift(); // a function group: its own parents
    return chain.reverse();
  }

  /** The key of the box that shows node (or function group) `id` now. */
  ownerKey(id) {
    for (const g of this.ancestors(id)) if (!this.expanded.has(g)) return `g${g}`;
    const p = this.pos.get(id);
    if (p === undefined) return this.groupOfNodeId.has(id) ? `g${this.groupOfNodeId.get(id)}` : null;
    if (!this.showsAt(p)) return null;
    return this.byId.has(id) ? `n${id}` : `g${this.hold[p]}`; // its group's nodes on their way
  }

  /** Expand every group above node `id` so that it shows as its own box. */
  reveal(id) {
    let changed = false;
    for (const g of this.ancestors(id)) {
      if (!this.expanded.has(g)) {
        this.expanded.add(g);
        changed = true;
      }
    }
    return changed;
  }

  toggle(group) {
    if (this.expanded.has(group)) this.collapse(group);
    else this.expanded.add(group);
  }

  collapse(group) {
    const stack = [group];
    while (stack.length) {
      const g = stack.pop();
      this.expanded.delete(g);
      stack.push(...this.childGroups[g]);
    }
  }

  groupLabel(i) {
    const g = this.groups[i];
    return g.kind === "range" ? g.label : g.label || "group";
  }

  /** @returns {Box} */
  groupBox(i) {
    const g = this.groups[i];
    const expanded = this.expanded.has(i);
    return { key: `g${i}`, kind: "group", id: g.node_ids[0] ?? null, group: i, label: this.groupLabel(i),
      sub: `${g.kind === "function" ? "fused function" : g.kind} · ${g.size} node${g.size === 1 ? "" : "s"}`,
      expanded, children: expanded ? this.boxesOf(this.childGroups[i], this.childNodes[i]) : [], members: g.size };
  }

  boxesOf(groups, nodeIds) {
    const boxes = groups.map((g) => ({ line: this.groups[g].line, box: () => this.groupBox(g) }));
    for (const id of nodeIds) {
      const n = this.byId.get(id);
      if (this.shows(n)) boxes.push({ line: n.line, box: () => nodeBox(n) });
    }
    return boxes.sort((a, b) => a.line - b.line).map((b) => b.box());
  }

  /** The boxes shown: top-level boxes with the children of the expanded groups. */
  boxes() {
    return this.boxesOf(this.topGroups, this.topNodes);
  }

  /**
   * For each group, the collapsed group whose box shows its members now, or -1 when it is
   * open all the way up (its nodes show as their own boxes or inside open groups).
   */
  collapsedOwners() {
    const owner = new Int32Array(this.groups.length).fill(-2);
    const of = (g) => {
      if (g < 0) return -1;
      if (owner[g] !== -2) return owner[g];
      const up = of(this.groups[g].parent);
      return (owner[g] = up >= 0 ? up : this.expanded.has(g) ? -1 : g);
    };
    for (let g = 0; g < this.groups.length; g++) of(g);
    return owner;
  }

  /**
   * Edges between the boxes shown: [{from, to, count}], one per pair of boxes. One pass
   * over the operand edges into loaded nodes and the links into groups not loaded, with
   * integer owners (a group's owner computed once), so an expand or collapse stays a few
   * milliseconds on a 50k-node graph.
   */
  edges() {
    const owner = this.collapsedOwners();
    const G = this.groups.length;
    const { hold, loaded } = this;
    const code = (p) => {
      const g = hold[p];
      if (g < 0) return G + p;
      return owner[g] >= 0 ? owner[g] : loaded[g] ? G + p : g;
    };
    const key = (c) => (c < G ? `g${c}` : `n${this.ids[c - G]}`);
    const seen = new Map();
    const span = G + this.size;
    const add = (a, b, n) => {
      if (a === b) return;
      const pair = a * span + b;
      const hit = seen.get(pair);
      if (hit) hit.count += n;
      else seen.set(pair, { from: a, to: b, count: n });
    };
    for (let e = 0; e < this.edgeFrom.length; e++) {
      const from = this.edgeFrom[e];
      const to = this.edgeTo[e];
      if (this.showsAt(from) && this.showsAt(to)) add(code(from), code(to), 1);
    }
    for (let l = 0; l < this.linkTo.length; l++) {
      const g = this.linkTo[l];
      const from = this.linkFrom[l];
      if (loaded[g] || from < 0 || !this.showsAt(from)) continue;
      add(code(from), owner[g] >= 0 ? owner[g] : g, this.linkCount[l]);
    }
    return [...seen.values()].map((e) => ({ from: key(e.from), to: key(e.to), count: e.count }));
  }

  /**
   * A value per group folded from its members at any depth, loaded or not, in
   * O(nodes + groups): `value(id, node)` per node (`node` undefined when not loaded),
   * `combine(a, b)` joins two, `empty` is the start.
   * @template T @param {(id: number, n: any) => T} value @param {(a: T, b: T) => T} combine
   * @param {T} empty @returns {Array<T>}
   */
  rollup(value, combine, empty) {
    const out = this.groups.map(() => empty);
    for (let p = 0; p < this.size; p++) {
      const g = this.hold[p];
      if (g >= 0) out[g] = combine(out[g], value(this.ids[p], this.byId.get(this.ids[p])));
    }
    for (const g of this.deepestFirst) {
      const up = this.groups[g].parent;
      if (up >= 0) out[up] = combine(out[up], out[g]);
    }
    return out;
  }

  /**
   * Nodes and groups matching `query`: a node id, an operator or label, a layer name
   * (a part of a span), a group's label, among the loaded nodes (a lazy graph asks the
   * server, GET .../graph/search, which matches the same way). In text order.
   * @returns {Array<{id: number|null, group: number|null, line: number}>}
   */
  search(query) {
    const q = query.trim().toLowerCase();
    if (!q) return [];
    const asId = /^\d+$/.test(q) ? Number(q) : null;
    const hits = [];
    for (const n of this.nodes) {
      if (!this.shows(n) && n.id !== asId) continue;
      if (n.id === asId || n.label.toLowerCase().includes(q) || (n.op ?? "").toLowerCase().includes(q)
        || n.spans.some((s) => s.toLowerCase().includes(q))) hits.push({ id: n.id, group: null, line: n.line });
    }
    this.groups.forEach((g, i) => {
      if (g.kind !== "range" && (g.label.toLowerCase().includes(q) || g.node_ids.includes(asId))) {
        hits.push({ id: g.node_ids[0] ?? null, group: i, line: g.line });
      }
    });
    return hits.sort((a, b) => a.line - b.line);
  }
}

function nodeBox(n) {
  return { key: `n${n.id}`, kind: "node", id: n.id, group: null, label: n.label,
    sub: n.type ? shortType(n.type) : n.kind, expanded: false, children: [], members: 1 };
}

/** "Tensor[(1, 64, 56, 56), float32]" -> "1×64×56×56 f32" */
export function shortType(type) {
  const m = /^Tensor\[\((.*?)\), (\w+)\]$/.exec(type);
  if (!m) return type.length > 28 ? `${type.slice(0, 27)}…` : type;
  const dtype = m[2].replace("float", "f").replace("uint", "u").replace("int", "i");
  return `${m[1].replace(/, /g, "×") || "scalar"} ${dtype}`;
}
