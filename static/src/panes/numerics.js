// Numerics per pass in the page: which pass broke numerics (from the run's summary, or
// live from the first pass_finished whose numerics say `introduced`), the banner that
// names it with its drifted layers and the rewrite the bisection found, the drifted
// layers' ranges for the text panes, and the tensor inspector of a selected expression.
import { getJSON } from "../api.js";
import { h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { passLabel, snapshotLabel } from "../protocol.js";

/**
 * The first pass that broke numerics, or null. `final` once the run's summary has it (with
 * layers, nodes and the bisection); before that, the live pass row (no layers yet).
 * @param {import("../run-model.js").RunModel | null} model
 * @returns {{passIndex: number, name: string, before: (number|null), after: (number|null),
 *   error: (number|null), layers: string[], nodes: number[],
 *   bisect: (import("../protocol.js").NumericsBisect|null), final: boolean} | null}
 */
export function numericsBreak(model) {
  const found = model?.summary?.numerics_break;
  if (found) {
    return { passIndex: found.pass_index, name: found.pass_name, before: found.before, after: found.after,
      error: found.max_abs_err, layers: found.layers ?? [], nodes: found.nodes ?? [],
      bisect: found.bisect ?? null, final: true };
  }
  const row = model?.rows().find((r) => r.numerics?.introduced) ?? null;
  if (!row) return null;
  return { passIndex: row.pass_index, name: row.name, before: row.before ?? null, after: row.after ?? null,
    error: row.numerics.step_max_abs_err ?? null, layers: [], nodes: [], bisect: null, final: false };
}

/** How a pass row's numerics read: "introduced" (this pass broke them), "inherited"
 * (wrong since an earlier pass), "ok", or "" (not checked). */
export function numericsState(numerics) {
  if (!numerics) return "";
  if (numerics.introduced) return "introduced";
  return numerics.ok ? "ok" : "inherited";
}

/** Ranges of the drifted layers' expressions in a snapshot's source index. */
export function driftRanges(index, layers) {
  if (!index || !layers?.length) return [];
  return index.entriesWithSpans(layers).map((e) => index.paintRange(e)).filter((r) => r.to > r.from);
}

function formatError(value) {
  if (value === null || value === undefined) return "an error it cannot measure";
  return `an error of ${Number(value).toPrecision(3)}`;
}

export class NumericsBanner extends Pane {
  render() {
    return h("div.numerics-banner", { role: "status", hidden: true, "data-testid": "numerics-banner" });
  }

  afterMount() {
    this.key = null;
    this.listen(TOPIC.RUN_RESET, () => this.show(null));
    this.listen(TOPIC.RUN_CHANGED, (model) => this.show(numericsBreak(model), model?.numericsError ?? null));
  }

  /** The break, else why numerics were asked for and not checked (numerics_unavailable). */
  show(found, unchecked = null) {
    const key = found || unchecked ? JSON.stringify([found, unchecked]) : null;
    if (key === this.key) return;
    this.key = key;
    this.root.hidden = !key;
    this.root.classList.toggle("note", !found && !!unchecked);
    if (!found) {
      replace(this.root, ...(unchecked ? [h("strong", {}, "Numerics not checked: "),
        h("span", { "data-testid": "numerics-unchecked" }, unchecked)] : []));
      return;
    }
    const pass = h("button.link", { type: "button", "data-testid": "numerics-break-pass",
      on: { click: () => this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: found.passIndex }) } },
    `${passLabel(found.passIndex)} ${found.name}`);
    replace(this.root,
      h("strong", {}, "Numerics broke in pass "), pass,
      h("span", {}, `: it adds ${formatError(found.error)} against the module before it; later passes only inherit it.`),
      this.layersLine(found),
      this.bisectLine(found));
  }

  layersLine(found) {
    if (!found.final) return h("div.numerics-line.hint", {}, "Drifted layers: found when the run ends…");
    if (!found.layers.length) return h("div.numerics-line.hint", {}, "No single layer's output drifted (outputs only).");
    return h("div.numerics-line", { "data-testid": "numerics-layers" }, "Drifted layers (the drift starts at the first): ",
      found.layers.map((name) => h("button.chip", { type: "button", title: `Highlight ${name}`,
        on: { click: () => this.hub.emit(TOPIC.LAYER_SELECTED, { name }) } }, name)));
  }

  bisectLine(found) {
    const b = found.bisect;
    if (!found.final || !b) return null;
    const line = (...parts) => h("div.numerics-line", { "data-testid": "numerics-bisect" }, ...parts);
    if (b.error) return line(`Bisection within the pass failed: ${b.error}`);
    if (b.broken_at_zero) return line(`The pass breaks numerics outside its ${b.total} counted rewrites (relay.bisect.limit=0 is already wrong).`);
    if (!b.rewrite) return line("The pass counts no rewrites: bisection within it needs transform.allow_rewrite at each rewrite.");
    const r = b.rewrite;
    const where = `${r.op ?? "an expression"}${r.layers.length ? ` of ${r.layers.join(", ")}` : ""}`;
    return line(`Bisection (${b.runs} runs of the pass): rewrite ${r.index} of ${b.total} breaks it, at `,
      h("button.link", { type: "button", "data-testid": "numerics-rewrite", title: "Show it in the module before the pass",
        on: { click: () => this.showRewrite(found, r) } }, where),
      ` (relay.bisect.limit=${r.index - 1} is still right).`);
  }

  /** Select the broken pass, then the rewritten expression in its before snapshot. */
  showRewrite(found, rewrite) {
    const off = this.hub.on(TOPIC.SNAPSHOTS_SHOWN, ({ left }) => {
      if (left.id !== found.before) return;
      off();
      this.hub.emit(TOPIC.EXPR_SELECTED, { nodeId: rewrite.node_id, spans: rewrite.layers, kind: "Call",
        op: rewrite.op, side: "a", snapshotId: found.before, origin: "url" });
    });
    this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: found.passIndex });
  }
}

const BAR_HEIGHT = 40;

/** The tensor inspector: the selected expression's value on the run's seeded inputs. */
export class TensorPane extends Pane {
  render() {
    this.target = h("span.tensor-target", {}, "Click an expression in the IR to inspect its tensor.");
    this.button = h("button.btn.small", { type: "button", hidden: true, "data-testid": "inspect-tensor",
      on: { click: () => this.inspect() } }, "Inspect tensor");
    this.body = h("div.tensor-body", { "data-testid": "tensor-report", "aria-live": "polite" });
    return h("div.pane.tensor-pane", { "data-testid": "tensor-pane" },
      h("div.pane-header", {}, h("span.pane-title", {}, "Tensor"), h("span.spacer"), this.button),
      h("div.pane-body", {}, this.target, this.body));
  }

  afterMount() {
    this.selection = null;
    this.seq = 0;
    this.listen(TOPIC.EXPR_SELECTED, (sel) => this.select(sel));
    this.listen(TOPIC.RUN_RESET, () => this.select(null));
  }

  select(sel) {
    this.seq++;
    this.selection = sel && this.ctx.runId() ? sel : null;
    this.button.hidden = !this.selection;
    replace(this.body);
    this.target.textContent = this.selection
      ? `%${sel.nodeId}${sel.op ? ` ${sel.op}` : ""} in ${snapshotLabel(sel.snapshotId)}${sel.spans.length ? ` · ${sel.spans.join(", ")}` : ""}`
      : "Click an expression in the IR to inspect its tensor.";
  }

  async inspect() {
    const sel = this.selection;
    const runId = this.ctx.runId();
    if (!sel || !runId) return;
    const seq = ++this.seq;
    replace(this.body, h("p.hint", {}, "Computing on the seeded inputs…"));
    try {
      const { tensor } = await getJSON(`/api/runs/${encodeURIComponent(runId)}/tensors/${sel.snapshotId}/${sel.nodeId}`);
      if (seq === this.seq) replace(this.body, report(tensor));
    } catch (err) {
      if (seq === this.seq) replace(this.body, h("p.error-text", { role: "alert", "data-testid": "tensor-error" }, err.message));
    }
  }
}

/** @param {import("../protocol.js").TensorReport} t */
function report(t) {
  const ref = t.reference;
  return h("div.tensor-report", {},
    statsTable(t.stats, "engine"),
    histogram(t.stats.histogram),
    t.stats.values ? h("pre.tensor-values", { "data-testid": "tensor-values" }, formatValues(t.stats.values)) : null,
    ref ? h("div.tensor-reference", { "data-testid": "tensor-reference" },
      h("h4", {}, `${ref.runtime}${ref.tensor ? ` · ${ref.tensor}` : ""}`),
      ref.error ? h("p.hint", {}, ref.error) : [
        h("p", { "data-testid": "tensor-diff", dataset: { diff: String(ref.max_abs_diff ?? "") } },
          ref.max_abs_diff === null ? "shapes differ (a layout change): compare the statistics"
            : `max |engine − ${ref.runtime}| = ${ref.max_abs_diff.toPrecision(3)}`),
        ref.layer_output ? null : h("p.hint", { "data-testid": "tensor-not-layer-output" },
          `This expression is a part of ${ref.layer}; ${ref.runtime} gives the layer's output (pick the expression that ends it).`),
        statsTable(ref.stats, ref.runtime)] ) : null);
}

function statsTable(s, caption) {
  const num = (v) => (v === null || v === undefined ? "–" : Number(v).toPrecision(4));
  const rows = [["shape", `[${s.shape.join(", ")}]`], ["dtype", s.dtype], ["min", num(s.min)], ["max", num(s.max)],
    ["mean", num(s.mean)], ["std", num(s.std)], ["NaN", String(s.nan)], ["Inf", String(s.inf)]];
  return h("table.grid.tensor-stats", { dataset: { source: caption } },
    h("caption", {}, caption),
    h("tbody", {}, rows.map(([k, v]) => h("tr", { dataset: { stat: k } }, h("th", {}, k), h("td.mono", {}, v)))));
}

function histogram({ edges, counts }) {
  if (!counts?.length) return null;
  const top = Math.max(...counts, 1);
  return h("div.tensor-histogram", { "data-testid": "tensor-histogram",
    title: `${counts.length} bins from ${edges[0].toPrecision(3)} to ${edges.at(-1).toPrecision(3)}` },
  counts.map((c, i) => h("span.bar", { style: { height: `${Math.max(1, (c / top) * BAR_HEIGHT)}px` },
    title: `[${edges[i].toPrecision(3)}, ${edges[i + 1].toPrecision(3)}): ${c}` })));
}

function formatValues(values) {
  return values.map((v) => (v === null ? "nan/inf" : Number(v).toPrecision(4))).join("  ");
}
