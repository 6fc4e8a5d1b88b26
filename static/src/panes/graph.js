// The Graph view: the dataflow graph of the snapshots the diff shows (after the pass, or
// before | after side by side), coloured by the pass's node diff, one selection with the
// text, the provenance panel and the layer list. Groups (layer paths, fused functions, runs
// of nodes) expand and collapse; only what is expanded is laid out (elkjs, in a worker).
import { getJSON } from "../api.js";
import { errorBox, h, replace } from "../dom.js";
import { GraphCanvas } from "../graph/canvas.js";
import { download, toPng, toSvg } from "../graph/export.js";
import { layoutBoxes, warmUp } from "../graph/layout.js";
import { GraphModel } from "../graph/model.js";
import { layerNodeIds, loadMissing, searchRemote } from "../graph/remote.js";
import { layoutSideBySide } from "../graph/union.js";
import { TOPIC } from "../hub.js";
import { LruCache } from "../lru.js";
import { Pane } from "../pane.js";
import { ROUTES } from "../protocol.js";

const graphs = new LruCache(6);
const fetchGraph = (id) => graphs.get(id, () => getJSON(ROUTES.snapshotGraph(id)));
const STATUS_RANK = { removed: 3, rewritten: 2, created: 1 };
const RANKED = [null, "created", "rewritten", "removed"];

export class GraphPane extends Pane {
  render() {
    const button = (text, title, testid, onClick) => h("button.btn.small", { type: "button", title,
      "data-testid": testid, on: { click: onClick } }, text);
    this.direction = h("select", { "data-testid": "graph-direction", title: "Layout direction",
      on: { change: () => this.relayout({ keepView: false }) } },
    h("option", { value: "LR" }, "left → right"), h("option", { value: "TB" }, "top → down"));
    this.sideBySide = h("input", { type: "checkbox", "data-testid": "graph-side-by-side",
      on: { change: () => this.reload() } });
    this.constants = h("input", { type: "checkbox", "data-testid": "graph-constants",
      on: { change: () => this.reload() } });
    this.search = h("input.graph-search", { type: "search", placeholder: "op, layer or node id",
      "data-testid": "graph-search", "aria-label": "Search the graph",
      on: { keydown: (e) => e.key === "Enter" && this.find(e.shiftKey ? -1 : 1), input: () => { this.hits = null; } } });
    this.hitCount = h("span.graph-hits", { "data-testid": "graph-hits" });
    this.status = h("span.graph-status", { "data-testid": "graph-status" });
    this.legend = h("span.graph-legend", {},
      h("span.lg.created", {}, "created"), h("span.lg.rewritten", {}, "rewritten"), h("span.lg.removed", {}, "removed"));
    this.body = h("div.graph-body");
    return h("div.pane.graph-pane", { "data-testid": "graph-pane" },
      h("div.pane-toolbar.graph-toolbar", {},
        this.direction,
        h("label.inline", { title: "Before and after the pass, side by side" }, this.sideBySide, "before | after"),
        h("label.inline", { title: "Show the constants (weights) as nodes" }, this.constants, "constants"),
        this.search, this.hitCount,
        button("fit", "Fit the graph to the pane", "graph-fit", () => this.canvases().forEach((c) => c.fit())),
        button("collapse", "Back to the opening view: groups collapsed", "graph-collapse", () => this.collapseAll()),
        button("PNG", "Download the graph as PNG", "graph-png", () => this.export("png")),
        button("SVG", "Download the graph as SVG", "graph-svg", () => this.export("svg")),
        this.legend, this.status),
      this.body);
  }

  afterMount() {
    this.active = false;
    this.compare = null;
    this.sides = {}; // "a" / "b": {snapshot, model, canvas, layout}
    this.selectedId = null;
    this.selectedKey = null;
    this.related = new Set();
    this.expandedKeys = null; // stable group keys to restore on the next snapshot
    this.status_ = new Map(); // node id -> created / rewritten (after) or removed (before)
    this.indexes = null;
    this.badgeInfo = { drifted: new Set(), kernels: [] };
    this.seq = 0;
    this.listen(TOPIC.COMPARE, (c) => { this.compare = c; this.reload(); });
    this.listen(TOPIC.RUN_RESET, () => this.clear());
    this.listen(TOPIC.SNAPSHOTS_SHOWN, ({ indexes }) => { this.indexes = indexes; this.paintMarks(); });
    this.listen(TOPIC.EXPR_SELECTED, (sel) => this.follow(sel));
    this.listen(TOPIC.LAYER_SELECTED, (sel) => this.followLayer(sel));
    this.listen(TOPIC.RUN_CHANGED, (model) => this.runChanged(model));
  }

  /** The dock is shown (true) or hidden: a hidden graph is not laid out. */
  setActive(active) {
    this.active = active;
    if (active && !this.warm) {
      this.warm = true;
      warmUp();
    }
    if (active && this.dirty) this.reload();
  }

  canvases() {
    return Object.values(this.sides).map((s) => s.canvas).filter(Boolean);
  }

  clear() {
    this.seq++;
    this.compare = null;
    this.selectedId = null;
    this.groupKey = null;
    this.expandedKeys = null;
    for (const c of this.canvases()) c.destroy();
    this.sides = {};
    replace(this.body, h("p.placeholder", {}, "Select a pass to see its graph."));
    this.root.dataset.state = "empty";
  }

  async reload() {
    if (!this.compare) return;
    if (!this.active) {
      this.dirty = true;
      return;
    }
    this.dirty = false;
    const seq = ++this.seq;
    const { left, right } = this.compare;
    const both = this.sideBySide.checked && right !== null && right !== left;
    const shown = both ? { a: left, b: right } : { b: right ?? left };
    this.root.dataset.state = "loading";
    this.status.textContent = "loading…";
    try {
      const t0 = performance.now();
      // the node diff (slower on big modules) colours the graph when it comes
      const diff = right !== null && right !== left ? getJSON(ROUTES.diffNodes(left, right)).catch(() => null) : null;
      this.root.dataset.diff = "loading";
      const graphsById = await Promise.all(Object.values(shown).map(fetchGraph));
      if (seq !== this.seq) return;
      this.root.dataset.fetchMs = String(Math.round(performance.now() - t0));
      this.rememberExpanded();
      this.groupKey = null;
      for (const c of this.canvases()) c.destroy();
      replace(this.body);
      this.body.classList.toggle("two", both);
      this.sides = {};
      const tm = performance.now();
      Object.keys(shown).forEach((side, i) => {
        const model = new GraphModel(graphsById[i], { constants: this.constants.checked });
        this.restoreExpanded(model);
        const host = h("div.graph-host", { dataset: { side } });
        if (both) host.append(h("div.graph-caption", {}, side === "a" ? "before" : "after"));
        this.body.append(host);
        const canvas = new GraphCanvas(host, { label: side,
          onSelect: (item) => this.pick(item, side), onToggle: (item) => this.toggle(item),
          onView: (view) => this.syncView(side, view) });
        this.sides[side] = { snapshot: shown[side], model, canvas, layout: null };
      });
      this.root.dataset.modelMs = String(Math.round(performance.now() - tm));
      this.setDiff(null);
      Promise.resolve(diff).then((d) => {
        if (seq !== this.seq) return;
        const td = performance.now();
        this.setDiff(d);
        this.paintMarks();
        this.root.dataset.diffMarkMs = String(Math.round(performance.now() - td)); // the diff's colours
        this.root.dataset.diff = "ready";
      });
      if (this.selectedId !== null) for (const s of Object.values(this.sides)) s.model.reveal(this.selectedId);
      await this.relayout({ keepView: false });
      if (seq !== this.seq) return;
      if (this.selectedId !== null) this.centreOn(this.selectedId);
      this.root.dataset.firstRenderMs = String(Math.round(performance.now() - t0));
      this.root.dataset.snapshot = String(shown.b);
      this.root.dataset.state = "ready";
    } catch (err) {
      if (seq !== this.seq) return;
      this.root.dataset.state = "error";
      this.status.textContent = "";
      replace(this.body, errorBox("Could not draw the graph:", err.message));
    }
  }

  setDiff(diff) {
    this.diffStamp = (this.diffStamp ?? 0) + 1;
    this.status_ = new Map();
    this.removed = new Set(diff?.nodes.removed ?? []);
    if (!diff) return;
    const rewritten = new Set(diff.nodes.rewritten);
    for (const id of diff.nodes.added) this.status_.set(id, rewritten.has(id) ? "rewritten" : "created");
    for (const id of rewritten) this.status_.set(id, "rewritten");
  }

  /** Lay out what each side shows (both sides in parallel), then paint. */
  async relayout({ keepView = true } = {}) {
    const seq = this.seq;
    const sides = Object.values(this.sides);
    const t0 = performance.now();
    // a lazy graph: the nodes of the groups just opened come from the server first
    if (await loadMissing(sides)) {
      if (seq !== this.seq) return;
      this.root.dataset.fetches = String(Number(this.root.dataset.fetches ?? 0) + 1);
      for (const s of sides) s.roll = null;
    }
    this.root.dataset.membersMs = String(Math.round(performance.now() - t0)); // lazy members
    const shown = sides.map((s) => ({ model: s.model, boxes: s.model.boxes(), edges: s.model.edges() }));
    const prepared = performance.now();
    // side by side: one layout of both, so a node both show sits at the same place
    const layouts = shown.length === 2
      ? await layoutSideBySide(shown, (m, g) => this.stableKey(m, g), this.direction.value)
      : [await layoutBoxes(shown[0].boxes, shown[0].edges, this.direction.value)];
    if (seq !== this.seq) return;
    const laidOut = performance.now();
    sides.forEach((s, i) => {
      s.layout = layouts[i];
      s.canvas.setLayout(layouts[i], { keepView });
    });
    this.paintMarks();
    // main-thread parts of a relayout (the worker's part is the rest of layoutMs)
    this.root.dataset.prepareMs = String(Math.round(prepared - t0));
    this.root.dataset.applyMs = String(Math.round(performance.now() - laidOut));
    const boxes = layouts.reduce((n, l) => n + l.items.length, 0);
    this.root.dataset.boxes = String(layouts.at(-1)?.items.length ?? 0);
    this.root.dataset.layoutMs = String(Math.round(performance.now() - t0));
    const nodes = sides.at(-1)?.model.size ?? 0;
    this.root.dataset.nodes = String(nodes);
    this.status.textContent = `${boxes} boxes · ${nodes} nodes · layout ${Math.round(performance.now() - t0)} ms`;
  }

  /** Colours, selection, related boxes and badges of each side (O(boxes shown) a paint). */
  paintMarks() {
    let created = 0;
    for (const [side, s] of Object.entries(this.sides)) {
      if (!s.layout) continue;
      const roll = this.rollups(side, s);
      const status = new Map();
      const badges = new Map();
      for (const it of s.layout.items) {
        const group = it.box.kind === "group";
        const rank = group ? roll.rank[it.box.group] : this.rankOf(side, it.box.id);
        const best = RANKED[rank];
        if (best && !it.box.expanded) status.set(it.key, best);
        if (best === "created" && !group) created++;
        const node = group ? null : s.model.byId.get(it.box.id);
        const bare = group ? roll.bare[it.box.group] : Number(s.model.isBare(it.box.id));
        const drift = group ? roll.drift[it.box.group] : this.drifts(node);
        const b = this.badgesOf(it, bare, drift);
        if (b.length) badges.set(it.key, b);
      }
      const key = this.selectedId === null ? this.groupKey ?? null : s.model.ownerKey(this.selectedId);
      const related = new Set();
      for (const id of this.related) {
        const k = s.model.ownerKey(id);
        if (k && k !== key) related.add(k);
      }
      Object.assign(s.canvas.marks, { status, badges, selected: key, related, hits: this.hitKeys(s.model) });
      s.canvas.redraw();
      if (side === "b") this.root.dataset.selectedKey = key ?? "";
    }
    this.root.dataset.created = String(created);
  }

  rankOf(side, id) {
    const st = side === "a" ? (this.removed.has(id) ? "removed" : null) : this.status_.get(id);
    return st ? STATUS_RANK[st] : 0;
  }

  drifts(n) {
    const { drifted } = this.badgeInfo;
    return Boolean(drifted.size && n && n.kind === "call" && n.spans.some((x) => drifted.has(x)));
  }

  /** Per group of a side: its members' strongest diff status, calls without a span, drift;
   * folded once per diff / run change, not per paint. */
  rollups(side, s) {
    const stamp = `${this.diffStamp}/${this.badgeInfo.drifted.size}/${s.driftIds?.size ?? -1}`;
    if (s.roll?.stamp !== stamp) {
      const m = s.model;
      if (m.lazy && this.badgeInfo.drifted.size && s.driftIds === undefined) this.driftOfLazy(s);
      s.roll = { stamp, rank: m.rollup((id) => this.rankOf(side, id), Math.max, 0),
        bare: m.rollup((id) => Number(m.isBare(id)), (a, b) => a + b, 0),
        drift: m.rollup((id, n) => this.drifts(n) || Boolean(s.driftIds?.has(id)), (a, b) => a || b, false) };
    }
    return s.roll;
  }

  /** A lazy graph's drifted nodes (most not loaded here) by their layers, from the server. */
  driftOfLazy(s) {
    s.driftIds = null;
    layerNodeIds(s.snapshot, [...this.badgeInfo.drifted]).then((ids) => {
      s.driftIds = ids;
      this.paintMarks();
    }).catch(() => null);
  }

  badgesOf(it, bare, drift) {
    const out = [];
    if (bare) out.push({ text: it.box.kind === "node" ? "no span" : `${bare} no span`, color: "#8a94a8", title: "expressions without a span" });
    if (drift) out.push({ text: "drift", color: "#c2185b", title: "a layer whose numerics drifted" });
    const { kernels } = this.badgeInfo;
    if (kernels.length && it.box.kind === "group") {
      const fn = it.box.id === null ? null : this.indexes?.b?.entriesOfNode(it.box.id)[0];
      const spans = fn ? [...new Set(fn.spans ?? [])].sort().join("\n") : null;
      const k = spans && kernels.find((x) => [...new Set(x.spans)].sort().join("\n") === spans);
      if (k) out.push({ text: `kernel ${k.index}`, color: "#00838f", title: k.func_name || k.name });
    }
    return out;
  }

  hitKeys(model) {
    const keys = new Set();
    for (const hit of this.hits ?? []) {
      const k = hit.group !== null ? `g${hit.group}` : model.ownerKey(hit.id);
      if (k) keys.add(k);
    }
    return keys;
  }

  /** A box was clicked on side `side`: it becomes the selection everywhere. */
  pick(item, side) {
    if (!item) return;
    const s = this.sides[side];
    if (item.box.id === null) { // a layer path or a run of nodes: selected here only
      this.selectedId = null;
      this.groupKey = item.key;
      this.paintMarks();
      return;
    }
    this.groupKey = null;
    const id = item.box.id;
    const node = s.model.byId.get(id);
    const entry = this.indexes?.[side]?.entriesOfNode(id)[0];
    this.selectedId = id;
    this.hub.emit(TOPIC.EXPR_SELECTED, { nodeId: id, spans: entry?.spans ?? node?.spans ?? [],
      kind: entry?.kind ?? node?.kind ?? "function", op: entry?.op ?? node?.op ?? null, side,
      snapshotId: s.snapshot, origin: "graph" });
  }

  /** The selection changed (here, in the text, from the URL): select and centre its box. */
  async follow(sel) {
    this.related = new Set();
    if (!sel) {
      this.selectedId = null;
      this.groupKey = null;
      this.paintMarks();
      return;
    }
    this.selectedId = sel.nodeId;
    this.groupKey = null;
    const spans = new Set(sel.spans);
    const model = this.sides.b?.model;
    if (model && spans.size) for (const n of model.nodes) if (n.id !== sel.nodeId && n.spans.some((x) => spans.has(x))) this.related.add(n.id);
    if (sel.origin !== "graph") await this.revealAndCentre(sel.nodeId);
    else this.paintMarks();
  }

  async followLayer(sel) {
    this.related = new Set();
    const side = this.sides.b;
    const model = side?.model;
    if (sel && model?.lazy) {
      const seq = this.seq;
      const ids = await layerNodeIds(side.snapshot, [sel.name]).catch(() => new Set());
      if (seq !== this.seq) return;
      this.related = ids;
    } else if (sel && model) {
      for (const n of model.nodes) if (n.spans.includes(sel.name)) this.related.add(n.id);
    }
    this.paintMarks();
    const first = [...this.related][0];
    if (first !== undefined) side.canvas.centre(model.ownerKey(first));
  }

  /** Side by side, the two views pan and zoom together (one layout of both sides). */
  syncView(side, view) {
    const other = this.sides[side === "a" ? "b" : "a"];
    if (!other) return;
    other.canvas.view = { ...view };
    other.canvas.redraw();
  }

  async revealAndCentre(id) {
    let changed = false;
    for (const s of Object.values(this.sides)) changed = s.model.reveal(id) || changed;
    if (changed) await this.relayout();
    this.paintMarks();
    this.centreOn(id);
  }

  centreOn(id) {
    for (const s of Object.values(this.sides)) {
      const key = s.model.ownerKey(id);
      if (key) s.canvas.centre(key);
    }
  }

  async toggle(item) {
    const key = this.stableKey(this.sides.b?.model ?? Object.values(this.sides)[0].model, item.box.group);
    for (const s of Object.values(this.sides)) {
      const g = s.model === undefined ? null : this.groupByStableKey(s.model, key);
      if (g !== null) s.model.toggle(g);
    }
    await this.relayout();
    this.root.dataset.toggles = String(Number(this.root.dataset.toggles ?? 0) + 1);
  }

  async collapseAll() {
    for (const s of Object.values(this.sides)) s.model.openDefault();
    await this.relayout({ keepView: false });
  }

  /** Search: the next (or previous) match becomes the selection, its box revealed. */
  async find(step) {
    const model = this.sides.b?.model;
    if (!model) return;
    if (!this.hits) {
      const query = this.search.value;
      const { snapshot } = this.sides.b;
      const hits = model.lazy ? await searchRemote(snapshot, query, this.constants.checked)
        : model.search(query);
      // (the same snapshot redrawn meanwhile has the same node ids: the hits still hold)
      if (snapshot !== this.sides.b?.snapshot || query !== this.search.value) return;
      this.hits = hits;
      this.hitIndex = step > 0 ? -1 : 0;
    }
    if (!this.hits.length) {
      this.hitCount.textContent = "no match";
      this.paintMarks();
      return;
    }
    this.hitIndex = (this.hitIndex + step + this.hits.length) % this.hits.length;
    const hit = this.hits[this.hitIndex];
    this.hitCount.textContent = `${this.hitIndex + 1}/${this.hits.length}`;
    if (hit.id !== null) {
      const entry = this.indexes?.b?.entriesOfNode(hit.id)[0];
      this.selectedId = hit.id;
      await this.revealAndCentre(hit.id); // (loads a lazy graph's group holding it)
      const node = this.sides.b?.model.byId.get(hit.id);
      this.hub.emit(TOPIC.EXPR_SELECTED, { nodeId: hit.id, spans: entry?.spans ?? node?.spans ?? [],
        kind: entry?.kind ?? node?.kind ?? "function", op: entry?.op ?? node?.op ?? null, side: "b",
        snapshotId: this.sides.b.snapshot, origin: "graph" });
    }
  }

  // --- expansion kept across snapshots, by a key made of group labels ----------------
  stableKey(model, g) {
    const parts = [];
    for (let i = g; i >= 0; i = model.groups[i].parent) {
      const grp = model.groups[i];
      const siblings = grp.parent < 0 ? model.topGroups : model.childGroups[grp.parent];
      const name = (j) => (model.groups[j].kind === "range" ? "range" : `${model.groups[j].kind}:${model.groups[j].label}`);
      const same = siblings.filter((j) => name(j) === name(i));
      parts.push(`${name(i)}#${same.indexOf(i)}`);
    }
    return parts.reverse().join("/");
  }

  groupByStableKey(model, key) {
    model.stableIndex ??= new Map(model.groups.map((_, i) => [this.stableKey(model, i), i]));
    return model.stableIndex.get(key) ?? null;
  }

  rememberExpanded() {
    const model = this.sides.b?.model;
    if (model) this.expandedKeys = [...model.expanded].map((g) => this.stableKey(model, g));
  }

  restoreExpanded(model) {
    if (!this.expandedKeys) return;
    model.expanded.clear();
    for (const key of this.expandedKeys) {
      const g = this.groupByStableKey(model, key);
      if (g !== null) model.expanded.add(g);
    }
  }

  // --- badges from the run: numerics drift, built kernels --------------------------------
  runChanged(run) {
    const drifted = new Set(run.summary?.drifted_layers ?? []);
    for (const row of run.rows?.() ?? []) for (const l of row.numerics?.drifted_layers ?? []) drifted.add(l);
    const changed = drifted.size !== this.badgeInfo.drifted.size;
    this.badgeInfo.drifted = drifted;
    if (run.finished && run.options?.build && this.kernelsOf !== run.runId) {
      this.kernelsOf = run.runId;
      getJSON(ROUTES.schedules(run.runId)).then(({ nodes }) => {
        this.badgeInfo.kernels = nodes ?? [];
        this.paintMarks();
      }).catch(() => null);
    }
    if (changed) this.paintMarks();
  }

  async export(kind) {
    const s = this.sides.b ?? Object.values(this.sides)[0];
    if (!s?.layout) return;
    const name = `graph-${s.snapshot}`;
    if (kind === "svg") download(new Blob([toSvg(s.layout, s.canvas.marks)], { type: "image/svg+xml" }), `${name}.svg`);
    else download(await toPng(s.layout, s.canvas.marks), `${name}.png`);
  }
}

