// Schedules: the build's kernels (one per distinct fused function, with the graph nodes
// that call it and the frontend layers of each call); per kernel its schedule record as a timeline of primitives, a slider / arrow keys to
// step, the loop nest diffed against the previous step, and the TEDD diagrams (DOT -> SVG).
import { api } from "../api.js";
import { diffLines } from "../diff-client.js";
import { errorBox, h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { LruCache } from "../lru.js";
import { Pane } from "../pane.js";
import { TEDD_VIEWS, URL_KEYS as K } from "../protocol.js";
import { renderDot } from "../svg.js";
import { tirLine } from "../tir-highlight.js";
import { ZoomPan } from "../zoompan.js";

const OPS = { "=": "eq", "+": "add", "-": "del" };
const GUTTER = { "=": " ", "+": "+", "-": "−" };
/** Past this many layers the header keeps them in one scrolling row, not a wall of chips. */
const COMPACT = 16;

export class SchedulesPane extends Pane {
  render() {
    this.filter = h("input.search", { type: "search", placeholder: "Filter kernels, ops, layers…",
      "aria-label": "Filter kernels", on: { input: () => this.renderNodes() } });
    this.count = h("span.count");
    this.nodeList = h("ul.sched-nodes", { "data-testid": "schedule-nodes", "aria-label": "Graph nodes",
      on: { keydown: (e) => this.onListKey(e) } });
    this.detail = h("div.sched-detail", { "data-testid": "schedule-detail", tabIndex: 0,
      "aria-label": "Schedule record (← → step, Home / End)", on: { keydown: (e) => this.onKey(e) } },
    h("p.hint", {}, "Pick a kernel to step through its schedule, primitive by primitive."));
    return h("div.pane.schedules-pane", { "data-testid": "schedules" },
      h("div.sched-side", {},
        h("div.pane-header", {}, h("span.pane-title", {}, "Kernels"), h("span.spacer"), this.count),
        h("div.pane-toolbar", {}, this.filter),
        this.nodeList),
      this.detail);
  }

  afterMount() {
    this.loadedFor = null;
    this.nodes = [];
    this.node = null;
    this.steps = [];
    this.k = 0;
    this.view = TEDD_VIEWS[0][0];
    this.renderSeq = 0;
    this.teddSeq = 0;
    this.openSeq = 0;
    this.records = new LruCache(24);
    this.listen(TOPIC.RUN_CHANGED, (model) => this.maybeLoad(model));
    this.listen(TOPIC.RUN_RESET, () => this.reset());
  }

  reset() {
    this.loadedFor = null;
    this.nodes = [];
    this.node = null;
    this.steps = [];
    this.openSeq++;
    this.count.textContent = "";
    replace(this.nodeList);
    replace(this.detail, h("p.hint", {}, "Pick a kernel to step through its schedule, primitive by primitive."));
  }

  /**
   * Called when the tab becomes visible, and on run changes.
   * @param {import("../run-model.js").RunModel} [model]
   */
  maybeLoad(model) {
    this.model = model ?? this.model;
    if (!this.model || !this.active) return;
    const ready = this.model.finished || (this.model.build && this.model.build !== "running");
    if (!ready) {
      this.loadedFor = null;
      const progress = this.model.buildProgressLabel();
      const msg = this.model.build === "running"
        ? `Building: lowering every fused kernel${progress ? ` (${progress})` : "…"}`
        : "The kernels appear when the pipeline finishes and the build has run.";
      replace(this.nodeList, h("li.hint", { "data-testid": "schedules-waiting" }, msg));
      return;
    }
    const key = `${this.model.runId}:${ready}`;
    if (this.loadedFor === key) return;
    this.loadedFor = key;
    this.loadNodes();
  }

  setActive(active) {
    this.active = active;
    if (active) this.maybeLoad(this.model);
  }

  async loadNodes() {
    const runId = this.model.runId;
    try {
      const { nodes } = await api.schedules(runId);
      if (runId !== this.model.runId) return;
      this.nodes = nodes;
      this.renderNodes();
      const wanted = this.ctx.url.getInt(K.SCHEDULE);
      if (wanted !== null) this.openNode(wanted, this.ctx.url.getInt(K.STEP) ?? 0);
    } catch (err) {
      replace(this.nodeList, h("li", {}, errorBox("Schedules unavailable:", err.message)));
    }
  }

  renderNodes() {
    const q = this.filter.value.trim().toLowerCase();
    const matches = (n) => !q || [n.name, n.func_name, ...(n.ops ?? []), ...(n.spans ?? [])]
      .some((t) => String(t ?? "").toLowerCase().includes(q));
    const shown = this.nodes.filter(matches);
    this.count.textContent = q ? `${shown.length}/${this.nodes.length}` : String(this.nodes.length);
    if (!this.nodes.length) return replace(this.nodeList, h("li.hint", {}, this.emptyMessage()));
    replace(this.nodeList, shown.map((n) => h("li", {},
      h("button.sched-node", { type: "button", dataset: { index: String(n.index) },
        "aria-pressed": String(this.node?.index === n.index),
        title: `${n.name}\nlayers: ${layerSummary(n.spans ?? []) || "none"}`,
        on: { click: () => this.openNode(n.index) } },
      h("span.sched-node-name", {}, n.name ?? n.func_name ?? `node ${n.index}`),
      h("span.sched-node-meta", {}, `#${n.index} · ${(n.ops ?? []).join(", ")} · ${n.num_steps} steps${callsText(n.num_calls)}`),
      (n.spans ?? []).length ? h("span.sched-node-spans", {}, layerSummary(n.spans)) : null))));
  }

  emptyMessage() {
    const m = this.model;
    if (m.options && m.options.build === false) {
      return "This run did not build. Enable “build” in the pipeline options and run again.";
    }
    if (m.build?.failed) return `No schedules: the build failed (${m.build.message}).`;
    if (m.failure) return `No schedules: the run failed (${m.failure.message ?? "see the timeline"}).`;
    return "The build produced no scheduled kernels.";
  }

  record(index) {
    const runId = this.model.runId;
    return this.records.get(`${runId}:${index}`, () => api.schedule(runId, index));
  }

  /** Open the kernel graph node `index` calls (any of its call sites). */
  async openNode(index, step = 0) {
    const seq = ++this.openSeq;
    if (this.node?.index !== index) {
      replace(this.detail, h("p.hint", {}, "loading schedule (its steps are made the first time a kernel is opened)…"));
    }
    try {
      const { node, steps } = await this.record(index);
      if (seq !== this.openSeq) return;
      for (const b of this.nodeList.querySelectorAll(".sched-node")) {
        b.setAttribute("aria-pressed", String(Number(b.dataset.index) === node.index));
      }
      this.nodeList.querySelector(`.sched-node[data-index="${node.index}"]`)?.scrollIntoView({ block: "nearest" });
      this.node = node;
      this.callIndex = (node.calls ?? []).some((c) => c.index === index) ? index : node.index;
      this.steps = steps;
      this.buildDetail();
      this.goto(Math.min(Math.max(0, step), steps.length - 1));
    } catch (err) {
      if (seq === this.openSeq) replace(this.detail, errorBox(`Schedule of node ${index} unavailable:`, err.message));
    }
  }

  buildDetail() {
    const n = this.steps.length;
    const node = this.node;
    this.slider = h("input.step-slider", { type: "range", min: 0, max: Math.max(0, n - 1), step: 1, value: 0,
      "aria-label": "Schedule step", "data-testid": "step-slider", on: { input: () => this.goto(Number(this.slider.value)) } });
    this.stepLabel = h("span.step-label", { "data-testid": "step-label" });
    this.chips = h("ol.primitive-chips", { "aria-label": "Primitives", "data-testid": "primitive-chips" },
      this.steps.map((s, i) => h("li", {}, h("button.chip", { type: "button", dataset: { k: String(i) },
        title: s.python ?? "", on: { click: () => this.goto(i) } }, h("span.chip-k", {}, String(i)), ` ${s.primitive}`))));
    this.python = h("pre.python-line", { "data-testid": "step-python" });
    this.nestStats = h("span.count");
    this.loopNest = h("pre.loop-nest", { "data-testid": "loop-nest", tabIndex: 0, "aria-label": "Loop nest" });
    this.teddTabs = h("div.tabs.small", { role: "tablist" }, TEDD_VIEWS.map(([key, label]) =>
      h("button.tab", { type: "button", role: "tab", dataset: { view: key },
        on: { click: () => { this.view = key; this.renderTedd(); } } }, label)));
    this.svgBox = h("div.tedd", { "data-testid": "tedd" });
    this.teddZoom = new ZoomPan(this.svgBox, { label: "tedd", apply: (scale) => this.sizeSvg(scale),
      fitScale: () => this.teddFitScale() });
    this.nestZoom = new ZoomPan(this.loopNest, { label: "nest", wheelNeedsCtrl: true,
      apply: (scale) => { this.loopNest.style.fontSize = `${(12 * scale).toFixed(2)}px`; } });
    const ops = (node.ops ?? []).join(" → ");
    const calls = node.calls?.length ? node.calls : [{ index: node.index, spans: node.spans ?? [] }];
    this.layersBox = h("ul.chip-list.sched-layers", { "data-testid": "schedule-layers" });
    this.callsBox = h(`ul.chip-list.sched-calls${calls.length > COMPACT ? ".compact" : ""}`,
      { "aria-label": `Call sites (${calls.length})`, "data-testid": "schedule-calls", hidden: calls.length < 2 },
      h("li.hint-inline", {}, "calls"),
      calls.map((c) => h("li", {}, h("button.chip.call-site", { type: "button", dataset: { index: String(c.index) },
        title: `graph node #${c.index}: ${c.spans.length} layers`, on: { click: () => this.showCall(c.index) } }, `#${c.index}`))));
    replace(this.detail,
      h("div.sched-head", {},
        h("strong.sched-title", { "data-testid": "schedule-title" }, node.name ?? node.func_name ?? ""),
        h("span.sched-ops", { title: ops }, `#${node.index} · ${(node.ops ?? []).length} ops · ${ops}${callsText(calls.length)}`),
        this.callsBox,
        this.layersBox),
      h("div.sched-stepper", {},
        h("button.btn.small", { type: "button", "aria-label": "Previous step", on: { click: () => this.goto(this.k - 1) } }, "◀"),
        this.slider,
        h("button.btn.small", { type: "button", "aria-label": "Next step", on: { click: () => this.goto(this.k + 1) } }, "▶"),
        this.stepLabel),
      this.chips,
      this.python,
      h("div.sched-body", {},
        h("section.sched-section", {},
          h("div.sched-section-head", {}, h("span.pane-title", {}, "Loop nest"),
            h("span.hint-inline", {}, "diff against the previous step"), h("span.spacer"), this.nestStats,
            this.nestZoom.controls),
          this.loopNest),
        h("section.sched-section", {},
          h("div.sched-section-head", {}, this.teddTabs, h("span.spacer"), this.teddZoom.controls),
          this.svgBox)));
    this.nestZoom.set(1);
    this.showCall(this.callIndex);
  }

  /** The frontend layers of one call site of the open kernel (each call has its own). */
  showCall(index) {
    const calls = this.node.calls?.length ? this.node.calls : [{ index: this.node.index, spans: this.node.spans ?? [] }];
    const call = calls.find((c) => c.index === index) ?? calls[0];
    this.callIndex = call.index;
    for (const b of this.callsBox.querySelectorAll(".call-site")) {
      const on = Number(b.dataset.index) === call.index;
      b.setAttribute("aria-pressed", String(on));
      if (on) revealInRow(this.callsBox, b);
    }
    this.layersBox.classList.toggle("compact", call.spans.length > COMPACT);
    this.layersBox.setAttribute("aria-label", `Frontend layers of node #${call.index} (${call.spans.length})`);
    this.layersBox.hidden = !call.spans.length;
    replace(this.layersBox, call.spans.map((name) => h("li", {}, h("button.chip.layer-link", { type: "button",
      title: "Highlight this frontend layer", on: { click: () => this.hub.emit(TOPIC.LAYER_SELECTED, { name }) } }, name))));
    if (this.steps.length) this.ctx.url.patch({ [K.SCHEDULE]: call.index });
  }

  async goto(k) {
    if (!this.steps.length) return;
    this.k = Math.max(0, Math.min(this.steps.length - 1, k));
    const step = this.steps[this.k];
    this.slider.value = String(this.k);
    this.stepLabel.textContent = `step ${this.k}/${this.steps.length - 1} · ${step.primitive}`;
    for (const c of this.chips.querySelectorAll(".chip")) {
      const active = Number(c.dataset.k) === this.k;
      c.classList.toggle("active", active);
      if (active) {
        c.setAttribute("aria-current", "step");
        revealInRow(this.chips, c);
      }
      else c.removeAttribute("aria-current");
    }
    this.python.textContent = step.python ?? "";
    this.ctx.url.patch({ [K.SCHEDULE]: this.callIndex, [K.STEP]: this.k });
    const prev = this.k > 0 ? this.steps[this.k - 1].loop_nest : step.loop_nest;
    const seq = ++this.renderSeq;
    const lines = await diffLines(prev ?? "", step.loop_nest ?? "");
    if (seq !== this.renderSeq) return;
    this.renderNest(lines);
    this.renderTedd();
  }

  renderNest(lines) {
    const added = lines.filter((l) => l.op === "+").length;
    const removed = lines.filter((l) => l.op === "-").length;
    this.nestStats.textContent = this.k === 0 ? `${lines.length} lines` : `+${added} −${removed}`;
    replace(this.loopNest, lines.map((l) => h(`span.diff-line.op-${OPS[l.op]}`, {},
      h("span.diff-gutter", { "aria-hidden": "true" }, GUTTER[l.op]), tirLine(l.text))));
    this.revealFirstChange();
  }

  /** Scroll the loop nest (only it) so that its first changed line is in view. */
  revealFirstChange() {
    const box = this.loopNest;
    const line = box.querySelector(".op-add, .op-del");
    if (!line) return;
    const top = line.offsetTop - box.offsetTop;
    if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - line.offsetHeight) {
      box.scrollTop = Math.max(0, top - 2 * line.offsetHeight);
    }
  }

  /** The diagram at `scale` of its natural size (the box scrolls; drag pans). */
  sizeSvg(scale) {
    const svg = this.svgBox.querySelector("svg");
    if (!svg || !this.svgSize) return;
    svg.style.width = `${Math.round(this.svgSize.w * scale)}px`;
    svg.style.height = `${Math.round(this.svgSize.h * scale)}px`;
  }

  teddFitScale() {
    if (!this.svgSize) return null;
    const box = this.svgBox;
    return Math.min((box.clientWidth - 16) / this.svgSize.w, (box.clientHeight - 16) / this.svgSize.h);
  }

  async renderTedd() {
    for (const t of this.teddTabs.children) t.setAttribute("aria-selected", String(t.dataset.view === this.view));
    const dot = this.steps[this.k]?.tedd?.[this.view];
    const seq = ++this.teddSeq;
    if (!dot) return replace(this.svgBox, h("p.hint", {}, "no diagram for this view"));
    try {
      const svg = await renderDot(dot);
      if (seq !== this.teddSeq) return;
      const w = svg.width?.baseVal?.value;
      const hgt = svg.height?.baseVal?.value;
      this.svgSize = w && hgt ? { w, h: hgt } : null;
      replace(this.svgBox, svg);
      this.teddZoom.refresh();
    } catch (err) {
      if (seq === this.teddSeq) replace(this.svgBox, errorBox("Diagram failed to render:", err.message));
    }
  }

  onKey(event) {
    if (event.target === this.slider || event.target.closest?.("input, select")) return;
    const moves = { ArrowRight: 1, ArrowLeft: -1, l: 1, h: -1 };
    if (!this.steps.length) return;
    if (event.key in moves) {
      event.preventDefault();
      this.goto(this.k + moves[event.key]);
    } else if (event.key === "Home" || event.key === "End") {
      event.preventDefault();
      this.goto(event.key === "Home" ? 0 : this.steps.length - 1);
    }
  }

  /** ↑ / ↓ in the kernel list open the previous / next kernel. */
  onListKey(event) {
    const moves = { ArrowDown: 1, ArrowUp: -1 };
    if (!(event.key in moves)) return;
    const buttons = [...this.nodeList.querySelectorAll(".sched-node")];
    const at = buttons.indexOf(document.activeElement);
    const next = buttons[Math.max(0, Math.min(buttons.length - 1, at + moves[event.key]))];
    if (!next) return;
    event.preventDefault();
    next.focus();
    this.openNode(Number(next.dataset.index));
  }
}

/** Past this many layers a kernel's list entry names the first ones and counts the rest. */
const LISTED_LAYERS = 24;

/** "a, b, c" or "a, b, … (+9,998 layers)" for a kernel shared by thousands of calls. */
function layerSummary(spans) {
  if (spans.length <= LISTED_LAYERS) return spans.join(", ");
  const rest = (spans.length - LISTED_LAYERS).toLocaleString("en-US");
  return `${spans.slice(0, LISTED_LAYERS).join(", ")}, … (+${rest} layers)`;
}

/** " · 16 calls" for a kernel shared by several graph nodes, else "". */
function callsText(n) {
  return n > 1 ? ` · ${n} calls` : "";
}

/** Scroll a one-row list (only it, never the page) so that `item` is in view. */
function revealInRow(row, item) {
  if (row.scrollWidth <= row.clientWidth) return;
  const left = item.offsetLeft; // the row is positioned: its items are placed against it
  if (left < row.scrollLeft || left + item.offsetWidth > row.scrollLeft + row.clientWidth) {
    row.scrollLeft = Math.max(0, left - row.clientWidth / 2 + item.offsetWidth / 2);
  }
}
