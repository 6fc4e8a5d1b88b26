// The Model tab: session summary (format, layers, inputs/outputs, op histogram) and the
// runs of this session.
import { formatMs, formatShape, h, replace } from "../dom.js";
import { Pane } from "../pane.js";

export class SummaryPane extends Pane {
  render() {
    this.body = h("div.pane-body.summary", { "data-testid": "session-summary" });
    return h("div.pane.summary-pane", {}, this.body);
  }

  /** @param {import("../protocol.js").SessionDetail} data */
  update({ session, graph, runs }) {
    const histogram = new Map();
    for (const l of graph?.layers ?? []) histogram.set(l.op_type, (histogram.get(l.op_type) ?? 0) + 1);
    const ops = [...histogram.entries()].sort((a, b) => b[1] - a[1]);
    replace(this.body,
      h("h2", {}, session.name),
      h("dl.kv.wide", {},
        h("dt", {}, "format"), h("dd", {}, session.format),
        h("dt", {}, "layers"), h("dd", {}, String(session.num_layers ?? graph?.layers?.length ?? 0)),
        h("dt", {}, "session"), h("dd.mono", {}, session.id)),
      h("div.summary-columns", {},
        h("section", {}, h("h4", {}, "Inputs"), tensorTable(session.inputs)),
        h("section", {}, h("h4", {}, "Outputs"), tensorTable(session.outputs)),
        h("section", {}, h("h4", {}, "Operators"),
          h("ul.chip-list", {}, ops.map(([op, n]) => h("li.chip.static", {}, `${op} ×${n}`))))),
      h("h4", {}, "Runs"),
      runsTable(runs ?? [], this.ctx));
  }
}

function tensorTable(tensors) {
  if (!tensors?.length) return h("p.hint", {}, "none");
  return h("table.grid", {},
    h("thead", {}, h("tr", {}, h("th", {}, "name"), h("th", {}, "shape"), h("th", {}, "dtype"))),
    h("tbody", {}, tensors.map((t) => h("tr", {},
      h("td.mono", {}, t.name), h("td.mono", {}, formatShape(t.shape)), h("td.mono", {}, t.dtype ?? "")))));
}

function runsTable(runs, ctx) {
  if (!runs.length) return h("p.hint", {}, "No runs yet: choose the pipeline options above and press Run.");
  return h("table.grid", { "data-testid": "runs-table" },
    h("thead", {}, h("tr", {}, ["run", "status", "opt", "passes", "changed", "time", "numerics"].map((t) => h("th", {}, t)))),
    h("tbody", {}, runs.map((r) => h("tr", {},
      h("td", {}, h("button.link", { type: "button", on: { click: () => ctx.openRun(r.id) } }, r.id)),
      h("td", {}, r.status + (r.failed_pass ? ` (${r.failed_pass})` : "")),
      h("td.num", {}, String(r.options?.opt_level ?? "")),
      h("td.num", {}, String(r.num_passes ?? "")),
      h("td.num", {}, String(r.num_changed ?? "")),
      h("td.num", {}, formatMs(r.total_ms)),
      h("td", { dataset: { numerics: r.first_numerics_break ? "broken" : "" } }, r.first_numerics_break
        ? `broke in ${r.first_numerics_break}${r.drifted_layers?.length ? ` (${r.drifted_layers.slice(0, 3).join(", ")})` : ""}`
        : "")))));
}
