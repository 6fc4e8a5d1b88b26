// Provenance of the selected expression: node, spans (frontend layers), backtrace.
import { api } from "../api.js";
import { errorBox, h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { ACTION, nodeLabel, passLabel } from "../protocol.js";
import { hoverCard, qparamOf, typeOfEntry } from "../quant.js";

export class ProvenancePane extends Pane {
  render() {
    this.body = h("div.pane-body.provenance-body", { "data-testid": "provenance" });
    this.showEmpty();
    return h("div.pane.provenance-pane", {},
      h("div.pane-header", {}, h("span.pane-title", {}, "Provenance")),
      this.body);
  }

  afterMount() {
    this.seq = 0;
    this.listen(TOPIC.EXPR_SELECTED, (sel) => (sel ? this.show(sel) : this.showEmpty()));
    this.listen(TOPIC.SNAPSHOTS_SHOWN, (shown) => { this.shown = shown; });
  }

  showEmpty() {
    replace(this.body, h("p.hint", {},
      "Click an expression (or put the cursor on it and press Enter) to see where it came from."));
  }

  /** @param {import("../hub.js").ExprSelected} sel */
  async show(sel) {
    const seq = ++this.seq;
    this.layersEl = h("ul.chip-list", { "data-testid": "expr-layers" },
      sel.spans.length ? sel.spans.map((name) => h("li", {}, this.layerButton(name)))
        : h("li.hint", {}, "no span: this expression names no frontend layer"));
    this.traceEl = h("ol.backtrace", { "data-testid": "backtrace" }, h("li.hint", {}, "loading backtrace…"));
    replace(this.body,
      h("dl.kv", {},
        h("dt", {}, "node"), h("dd", { "data-testid": "expr-node" }, nodeLabel(sel.nodeId)),
        h("dt", {}, "kind"), h("dd", {}, sel.kind ?? ""),
        sel.op ? [h("dt", {}, "op"), h("dd", {}, sel.op)] : null),
      this.typeCard(sel),
      h("h4", {}, "Frontend layers"), this.layersEl,
      h("h4", {}, "Backtrace"), this.traceEl);
    const runId = this.ctx.runId();
    if (!runId) return replace(this.traceEl, h("li.hint", {}, "no run"));
    try {
      const trace = await api.backtrace(runId, sel.nodeId);
      if (seq === this.seq) this.renderTrace(trace);
    } catch (err) {
      if (seq === this.seq) replace(this.traceEl, h("li", {}, errorBox("Backtrace unavailable:", err.message)));
    }
  }

  /** The selected expression's type (integer dtypes marked) and a qparam's values. */
  typeCard(sel) {
    const shown = this.shown;
    const index = shown?.indexes?.[sel.side];
    const snapshot = sel.side === "a" ? shown?.left : shown?.right;
    const entry = index?.entriesOfNode(sel.nodeId).find((e) => !e.ref);
    if (!entry || snapshot?.id !== sel.snapshotId) return null;
    const type = typeOfEntry(index, (from, to) => snapshot.text.slice(from, to), entry);
    const qparam = qparamOf(index, entry);
    if (!type && !qparam) return null;
    return h("div.expr-type", { "data-testid": "expr-type" }, hoverCard(entry, type, qparam));
  }

  layerButton(name) {
    return h("button.chip.layer-link", { type: "button", title: `${name}: highlight every expression of this layer`,
      on: { click: () => this.hub.emit(TOPIC.LAYER_SELECTED, { name }) } }, name);
  }

  /** A link selecting the step's pass; the import (no pass index) is plain text. */
  stepLink(step) {
    if (step.pass_index === null || step.pass_index === undefined) {
      return h("span.step-origin", {}, step.pass_name ?? "import");
    }
    return h("button.link", { type: "button", title: "Select this pass",
      on: { click: () => this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: step.pass_index }) } },
    `${passLabel(step.pass_index)} ${step.pass_name}`);
  }

  /** @param {import("../protocol.js").Backtrace} trace */
  renderTrace(trace) {
    const steps = (trace.steps ?? []).filter((s) => s.action !== ACTION.KEPT);
    const kept = (trace.steps ?? []).length - steps.length;
    replace(this.traceEl,
      steps.length ? steps.map((s) => h("li", { dataset: { action: s.action } },
        h(`span.action.${s.action}`, {}, s.action), this.stepLink(s)))
        : h("li.hint", {}, "present in the imported module, untouched since"),
      kept ? h("li.hint", {}, `kept unchanged by ${kept} other passes`) : null);
    if ((trace.layers ?? []).length && !this.layersEl.querySelector("button")) {
      replace(this.layersEl, trace.layers.map((name) => h("li", {}, this.layerButton(name))));
    }
  }
}
