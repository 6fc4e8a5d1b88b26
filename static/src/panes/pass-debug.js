// The selected pass taken apart: its optimization remarks (shown at their lines in the
// diff too), a reproducer to download, and "why?" for the selected expression: the remarks
// of every pass about it (by node, or by the frontend layers it names).
import { api } from "../api.js";
import { errorBox, h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { nodeLabel, passLabel } from "../protocol.js";
import { remarkText } from "../remarks.js";

const LIST_LIMIT = 200;

export class PassDebugPane extends Pane {
  render() {
    this.reproLink = h("button.btn.small", { type: "button", hidden: true, "data-testid": "download-reproducer",
      title: "Download a zip: the module before this pass as Relay text (constants in .npz), the pass and its "
        + "context, seeded inputs, expected outputs and a pytest file that runs it",
      on: { click: () => this.downloadReproducer() } }, "Reproducer");
    this.reproStatus = h("div.repro-status", { "data-testid": "reproducer-status", "aria-live": "polite" });
    this.passBody = h("div.remark-list", { "data-testid": "pass-remarks" });
    this.whyButton = h("button.btn.small", { type: "button", hidden: true, "data-testid": "why-button",
      on: { click: () => this.explainSelection() } }, "Why? (remarks)");
    this.nodeBody = h("div.remark-list", { "data-testid": "node-remarks" });
    this.showHint();
    return h("div.pane.pass-debug-pane", {},
      h("div.pane-header", {}, h("span.pane-title", {}, "Remarks"), h("span.spacer"), this.reproLink),
      h("div.pane-body", {}, this.reproStatus, this.passBody, h("div.remark-why", {}, this.whyButton), this.nodeBody));
  }

  afterMount() {
    this.seq = 0;
    this.selection = null;
    this.listen(TOPIC.COMPARE, (c) => this.showPass(c));
    this.listen(TOPIC.RUN_RESET, () => this.showPass({ passIndex: null }));
    this.listen(TOPIC.EXPR_SELECTED, (sel) => this.selected(sel));
  }

  showHint() {
    replace(this.passBody, h("p.hint", {}, "Select a pass: what it did and did not do, and why."));
  }

  /** @param {import("../hub.js").Compare} compare */
  async showPass({ left, right, passIndex }) {
    const seq = ++this.seq;
    const runId = this.ctx.runId();
    this.reproLink.hidden = passIndex === null || passIndex === undefined || !runId;
    replace(this.reproStatus);
    if (this.reproLink.hidden) return this.showHint();
    this.reproTarget = { runId, passIndex };
    this.reproLink.dataset.pass = String(passIndex);
    replace(this.passBody, h("p.hint", {}, "loading remarks…"));
    try {
      const found = await api.remarks(runId, { pass: passIndex });
      if (seq !== this.seq) return;
      this.hub.emit(TOPIC.REMARKS, { left, right, remarks: found.remarks });
      replace(this.passBody, found.remarks.length
        ? this.list(found.remarks, found.count, false)
        : h("p.hint", {}, `${passLabel(passIndex)} made no remarks.`));
    } catch (err) {
      if (seq === this.seq) replace(this.passBody, errorBox("Remarks unavailable:", err.message));
    }
  }

  /** Make the selected pass's reproducer (the server replays the run up to it) and save it. */
  async downloadReproducer() {
    const target = this.reproTarget;
    if (!target) return;
    this.reproLink.disabled = true;
    replace(this.reproStatus, h("p.hint", {}, `making the reproducer of ${passLabel(target.passIndex)}: `
      + "the run is replayed up to it…"));
    try {
      const { blob, name } = await api.reproducer(target.runId, target.passIndex);
      const url = URL.createObjectURL(blob);
      const link = h("a", { href: url, download: name ?? `repro-${target.runId}-${target.passIndex}.zip` });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      replace(this.reproStatus);
    } catch (err) {
      replace(this.reproStatus, errorBox("No reproducer:", err.message));
    } finally {
      this.reproLink.disabled = false;
    }
  }

  /** Remarks as a list, missed first; a click selects the expression's pass and layer. */
  list(remarks, count, withPass) {
    const order = { missed: 0, applied: 1, analysis: 2 };
    const sorted = [...remarks].sort((a, b) => order[a.kind] - order[b.kind] || a.pass_index - b.pass_index);
    const more = count - Math.min(sorted.length, LIST_LIMIT);
    return h("ul.remarks", {},
      sorted.slice(0, LIST_LIMIT).map((r) => h("li.remark", { dataset: { kind: r.kind, node: String(r.node_id) },
        title: remarkText(r) },
      h(`span.remark-kind.${r.kind}`, {}, r.kind),
      withPass ? h("button.link", { type: "button", title: "Select this pass",
        on: { click: () => this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: r.pass_index }) } },
      `${passLabel(r.pass_index)} ${r.pass}`) : null,
      h("span.remark-rule", {}, r.rule),
      h("span.remark-message", {}, r.message),
      r.layers.length ? h("span.remark-layers", {}, r.layers.join(", ")) : null)),
    more > 0 ? h("li.hint", {}, `${more} more`) : null);
  }

  /** @param {import("../hub.js").ExprSelected | null} sel */
  selected(sel) {
    this.selection = sel;
    this.whyButton.hidden = !sel;
    if (sel) this.whyButton.textContent = `Why? remarks on ${nodeLabel(sel.nodeId)}${sel.op ? ` (${sel.op})` : ""}`;
    replace(this.nodeBody);
  }

  /** Every pass's remarks about the selected expression ("why wasn't this fused?"). */
  async explainSelection() {
    const sel = this.selection;
    const runId = this.ctx.runId();
    if (!sel || !runId) return;
    replace(this.nodeBody, h("p.hint", {}, "loading…"));
    try {
      const found = await api.remarks(runId, { node: sel.nodeId });
      if (this.selection !== sel) return;
      const about = found.layers?.length ? ` (layers ${found.layers.join(", ")})` : "";
      replace(this.nodeBody, h("h4", {}, `${nodeLabel(sel.nodeId)}${about}`),
        found.remarks.length ? this.list(found.remarks, found.count, true)
          : h("p.hint", {}, "No pass remarked on this expression or its layers."));
    } catch (err) {
      if (this.selection === sel) replace(this.nodeBody, errorBox("Remarks unavailable:", err.message));
    }
  }
}
