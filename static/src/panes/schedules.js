// Schedules: the build's graph nodes; per node its schedule record as a timeline of
// primitives, a slider / arrow keys to step, the loop nest diffed against the previous
// step, and the TEDD diagrams (DOT rendered to SVG).
import { api } from "../api.js";
import { diffLines } from "../diff-client.js";
import { errorBox, h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { TEDD_VIEWS } from "../protocol.js";
import { renderDot } from "../svg.js";

export class SchedulesPane extends Pane {
  render() {
    this.nodeList = h("ul.sched-nodes", { "data-testid": "schedule-nodes", "aria-label": "Graph nodes" });
    this.detail = h("div.sched-detail", { "data-testid": "schedule-detail", tabIndex: 0,
      on: { keydown: (e) => this.onKey(e) } },
    h("p.hint", {}, "Pick a graph node to step through its schedule."));
    return h("div.pane.schedules-pane", { "data-testid": "schedules" },
      h("div.sched-side", {}, h("div.pane-header", {}, h("span.pane-title", {}, "Graph nodes")), this.nodeList),
      this.detail);
  }

  afterMount() {
    this.loadedFor = null;
    this.node = null;
    this.steps = [];
    this.k = 0;
    this.view = TEDD_VIEWS[0][0];
    this.renderSeq = 0;
    this.listen(TOPIC.RUN_CHANGED, (model) => this.maybeLoad(model));
    this.listen(TOPIC.RUN_RESET, () => { this.loadedFor = null; replace(this.nodeList); });
  }

  /** Called when the tab becomes visible, and on run changes. */
  maybeLoad(model) {
    this.model = model ?? this.model;
    if (!this.model || !this.active) return;
    const ready = this.model.finished || (this.model.build && this.model.build !== "running");
    const key = `${this.model.runId}:${ready}`;
    if (this.loadedFor === key) return;
    this.loadedFor = key;
    if (!ready) {
      const msg = this.model.build === "running" ? "Building…"
        : "The schedules appear when the pipeline finishes and the build runs.";
      replace(this.nodeList, h("li.hint", {}, msg));
      return;
    }
    this.loadNodes();
  }

  setActive(active) {
    this.active = active;
    if (active) this.maybeLoad(this.model);
  }

  async loadNodes() {
    try {
      const { nodes } = await api.schedules(this.model.runId);
      replace(this.nodeList, nodes.length ? nodes.map((n) => h("li", {},
        h("button.sched-node", { type: "button", dataset: { index: String(n.index) },
          on: { click: () => this.openNode(n.index) } },
        h("span.sched-node-name", {}, n.name ?? n.func_name ?? `node ${n.index}`),
        h("span.sched-node-meta", {}, `${(n.ops ?? []).join(", ")} · ${n.num_steps} steps`))))
        : h("li.hint", {}, this.emptyMessage()));
      const wanted = this.ctx.url.get("sched");
      if (wanted !== null && wanted !== undefined) this.openNode(Number(wanted), Number(this.ctx.url.get("step") ?? 0));
    } catch (err) {
      replace(this.nodeList, h("li", {}, errorBox("Schedules unavailable:", err.message)));
    }
  }

  emptyMessage() {
    const m = this.model;
    if (m.options && m.options.build === false) {
      return "This run did not build. Enable “build” in the pipeline options and run again.";
    }
    if (m.failure) return `No schedules: the run failed (${m.failure.message ?? "see the timeline"}).`;
    return "The build produced no scheduled nodes.";
  }

  async openNode(index, step = 0) {
    for (const b of this.nodeList.querySelectorAll(".sched-node")) {
      b.setAttribute("aria-pressed", String(Number(b.dataset.index) === index));
    }
    replace(this.detail, h("p.hint", {}, "loading schedule…"));
    try {
      const { node, steps } = await api.schedule(this.model.runId, index);
      this.node = { ...node, index };
      this.steps = steps;
      this.buildDetail();
      this.goto(Math.min(Math.max(0, step), steps.length - 1));
    } catch (err) {
      replace(this.detail, errorBox(`Schedule of node ${index} unavailable:`, err.message));
    }
  }

  buildDetail() {
    const n = this.steps.length;
    this.slider = h("input.step-slider", { type: "range", min: 0, max: Math.max(0, n - 1), step: 1, value: 0,
      "aria-label": "Schedule step", "data-testid": "step-slider", on: { input: () => this.goto(Number(this.slider.value)) } });
    this.stepLabel = h("span.step-label", { "data-testid": "step-label" });
    this.chips = h("ol.primitive-chips", { "aria-label": "Primitives" },
      this.steps.map((s, i) => h("li", {}, h("button.chip", { type: "button", dataset: { k: String(i) },
        on: { click: () => this.goto(i) } }, `${i} ${s.primitive}`))));
    this.python = h("pre.python-line", { "data-testid": "step-python" });
    this.loopNest = h("pre.loop-nest", { "data-testid": "loop-nest" });
    this.teddTabs = h("div.tabs.small", { role: "tablist" }, TEDD_VIEWS.map(([key, label]) =>
      h("button.tab", { type: "button", role: "tab", dataset: { view: key },
        on: { click: () => { this.view = key; this.renderTedd(); } } }, label)));
    this.svgBox = h("div.tedd", { "data-testid": "tedd" });
    replace(this.detail,
      h("div.sched-head", {}, h("strong", {}, this.node.name ?? this.node.func_name ?? ""),
        h("span.spacer"), h("button.btn.small", { type: "button", on: { click: () => this.goto(this.k - 1) } }, "◀"),
        this.slider, h("button.btn.small", { type: "button", on: { click: () => this.goto(this.k + 1) } }, "▶"),
        this.stepLabel),
      this.chips,
      this.python,
      h("div.sched-columns", {},
        h("section.sched-col", {}, h("h4", {}, "Loop nest (diff against the previous step)"), this.loopNest),
        h("section.sched-col", {}, this.teddTabs, this.svgBox)));
  }

  async goto(k) {
    if (!this.steps.length) return;
    this.k = Math.max(0, Math.min(this.steps.length - 1, k));
    const step = this.steps[this.k];
    this.slider.value = String(this.k);
    this.stepLabel.textContent = `step ${this.k}/${this.steps.length - 1} · ${step.primitive}`;
    for (const c of this.chips.querySelectorAll(".chip")) c.classList.toggle("active", Number(c.dataset.k) === this.k);
    this.python.textContent = step.python ?? "";
    this.ctx.url.patch({ sched: this.node.index, step: this.k });
    const prev = this.k > 0 ? this.steps[this.k - 1].loop_nest : step.loop_nest;
    const seq = ++this.renderSeq;
    const lines = await diffLines(prev ?? "", step.loop_nest ?? "");
    if (seq !== this.renderSeq) return;
    replace(this.loopNest, lines.map((l) => h(`span.diff-line.op-${OPS[l.op]}`, {}, `${l.op === "=" ? " " : l.op} ${l.text}`)));
    this.renderTedd();
  }

  async renderTedd() {
    for (const t of this.teddTabs.children) t.setAttribute("aria-selected", String(t.dataset.view === this.view));
    const dot = this.steps[this.k]?.tedd?.[this.view];
    const seq = ++this.renderSeq;
    if (!dot) return replace(this.svgBox, h("p.hint", {}, "no diagram for this view"));
    try {
      const svg = await renderDot(dot);
      if (seq === this.renderSeq) replace(this.svgBox, svg);
    } catch (err) {
      if (seq === this.renderSeq) replace(this.svgBox, errorBox("Diagram failed to render:", err.message));
    }
  }

  onKey(event) {
    if (event.target === this.slider) return;
    const moves = { ArrowRight: 1, ArrowLeft: -1, l: 1, h: -1 };
    if (event.key in moves && this.steps.length) {
      event.preventDefault();
      this.goto(this.k + moves[event.key]);
    }
  }
}

const OPS = { "=": "eq", "+": "add", "-": "del" };
