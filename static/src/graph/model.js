// The graph of one snapshot (GET /api/snapshots/<id>/graph) and what of it is shown: which
// groups are expanded, which box holds each node, the edges between the boxes shown.
// No DOM here: the static report imports it as it is.

/** Boxes a graph opens with, at most (groups expand breadth-first while they fit). */
export const OPEN_BUDGET = 48;

/**
 * @typedef {import("../protocol.js").SnapshotGraph} SnapshotGraph
 * @typedef {{key: string, kind: "node"|"group", id: (number|null), group: (number|null),
 *   label: string, sub: string, expanded: boolean, children: Array<Box>, members: number}} Box
 */

export class GraphModel {
  /** @param {SnapshotGraph} graph @param {{constants?: boolean}} [options] */
  constructor(graph, { constants = false } = {}) {
    this.graph = graph;
    this.constants = constants;
    this.nodes = graph.nodes;
    this.groups = graph.groups;
    /** @type {Map<number, any>} */
    this.byId = new Map(this.nodes.map((n) => [n.id, n]));
    /** group index -> its child groups and nodes, in text order */
    this.childGroups = this.groups.map(() => []);
    this.childNodes = this.groups.map(() => []);
    this.topGroups = [];
    this.topNodes = [];
    this.groups.forEach((g, i) => (g.parent < 0 ? this.topGroups : this.childGroups[g.parent]).push(i));
    for (const n of this.nodes) (n.group < 0 ? this.topNodes : this.childNodes[n.group]).push(n.id);
    /** node ids of a function group (its function and its call) -> the group */
    this.groupOfNodeId = new Map();
    this.groups.forEach((g, i) => g.node_ids.forEach((id) => this.groupOfNodeId.set(id, i)));
    /** @type {Set<number>} */
    this.expanded = new Set();
    this.openDefault();
  }

  shows(n) {
    return this.constants || n.kind !== "constant";
  }

  /** Expand breadth-first, in text order, while the boxes shown stay within the budget. */
  openDefault(budget = OPEN_BUDGET) {
    this.expanded.clear();
    let shown = this.topGroups.length + this.topNodes.filter((id) => this.shows(this.byId.get(id))).length;
    const queue = [...this.topGroups];
    while (queue.length) {
      const g = queue.shift();
      const more = this.childGroups[g].length + this.childNodes[g].filter((id) => this.shows(this.byId.get(id))).length;
      if (shown - 1 + more > budget) continue;
      this.expanded.add(g);
      shown += more - 1;
      queue.push(...this.childGroups[g]);
    }
  }

  /** Group indexes from the top down to the group holding node `id` (excluded: the node). */
  ancestors(id) {
    const n = this.byId.get(id);
    const chain = [];
    for (let g = n ? n.group : this.groupOfNodeId.get(id) ?? -1; g >= 0; g = this.groups[g].parent) chain.push(g);
    if (!n && this.groupOfNodeId.has(id)) chain.shift(); // a function group: its own parents
    return chain.reverse();
  }

  /** The key of the box that shows node (or function group) `id` now. */
  ownerKey(id) {
    for (const g of this.ancestors(id)) if (!this.expanded.has(g)) return `g${g}`;
    if (!this.byId.has(id) && this.groupOfNodeId.has(id)) return `g${this.groupOfNodeId.get(id)}`;
    const n = this.byId.get(id);
    if (n && !this.shows(n)) return null;
    return n ? `n${id}` : null;
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

  /** Edges between the boxes shown: [{from, to, count}], one per pair of boxes. */
  edges() {
    const seen = new Map();
    const owners = new Map();
    const owner = (id) => {
      let key = owners.get(id);
      if (key === undefined) owners.set(id, (key = this.ownerKey(id)));
      return key;
    };
    for (const n of this.nodes) {
      if (!this.shows(n)) continue;
      const to = owner(n.id);
      for (const src of n.inputs) {
        const p = this.byId.get(src);
        if (!p || !this.shows(p)) continue;
        const from = owner(src);
        if (!from || from === to) continue;
        const key = `${from}>${to}`;
        const e = seen.get(key);
        if (e) e.count++;
        else seen.set(key, { from, to, count: 1 });
      }
    }
    return [...seen.values()];
  }

  /** Node ids inside group `i`, at any depth. */
  membersOf(i) {
    const out = [];
    const stack = [i];
    while (stack.length) {
      const g = stack.pop();
      out.push(...this.childNodes[g]);
      stack.push(...this.childGroups[g]);
    }
    return out;
  }

  /**
   * Nodes and groups matching `query`: a node id, an operator or label, a layer name
   * (a part of a span), a group's label. In text order.
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
