// Compare two runs pass by pass: any two runs of any sessions (opt levels, disabled passes,
// a run imported from another engine version). The table aligns their leaf passes
// (GET /api/compare); a row opens the diff of that pass's after-module in run A against
// run B's in the IR diff tab.
import { api } from "../api.js";
import { debugApi } from "../debug-api.js";
import { errorBox, formatMs, h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { passLabel, snapshotLabel } from "../protocol.js";

const MAX_SESSIONS = 30;

/** A run's options in a few words: "O3 · −FoldScaleAxis · no build". */
export function optionsLabel(options) {
  if (!options) return "";
  const parts = [options.passes ? `passes ${options.passes.join(",")}` : `O${options.opt_level}`];
  for (const name of options.disabled_pass ?? []) parts.push(`−${name}`);
  for (const name of options.required_pass ?? []) parts.push(`+${name}`);
  if (options.build === false && !options.passes) parts.push("no build");
  return parts.join(" · ");
}

function runLabel(session, run) {
  return `${session.name} · ${optionsLabel(run.options)} · ${run.status} · ${run.id.slice(0, 8)}`;
}

export class CompareRunsPane extends Pane {
  render() {
    this.pickA = h("select", { "aria-label": "Run A", "data-testid": "compare-a", on: { change: () => this.load() } });
    this.pickB = h("select", { "aria-label": "Run B", "data-testid": "compare-b", on: { change: () => this.load() } });
    this.summary = h("div.compare-summary", { "data-testid": "compare-summary", "aria-live": "polite" });
    this.changedOnly = h("input", { type: "checkbox", "data-testid": "compare-differ",
      on: { change: () => this.renderTable() } });
    this.table = h("table.compare-table", { "data-testid": "compare-table" });
    return h("div.pane.compare-pane", { "data-testid": "compare-runs" },
      h("div.compare-pickers", {},
        h("label", {}, h("span.compare-tag.a", {}, "A"), this.pickA),
        h("label", {}, h("span.compare-tag.b", {}, "B"), this.pickB),
        h("button.btn.small.ghost", { type: "button", title: "List the runs again", on: { click: () => this.refreshRuns() } }, "↻"),
        h("label.inline", { title: "Show only the passes whose after-modules differ" }, this.changedOnly, " only differing")),
      this.summary,
      h("div.compare-scroll", {}, this.table));
  }

  afterMount() {
    this.comparison = null;
    this.runs = new Map(); // run id -> {session, run}
    this.active = false;
    this.listen(TOPIC.RUN_RESET, ({ runId }) => { this.currentRun = runId; if (this.active) this.refreshRuns(); });
  }

  /** The tab shows: (re)list the runs, keep the choices. */
  setActive(active) {
    this.active = active;
    if (active) this.refreshRuns();
  }

  async refreshRuns() {
    let sessions;
    try {
      ({ sessions } = await api.sessions());
    } catch (err) {
      replace(this.summary, errorBox("Could not list the runs:", err.message));
      return;
    }
    const own = sessions.find((s) => s.id === this.ctx.sessionId);
    const ordered = [own, ...sessions.filter((s) => s !== own)].filter(Boolean).slice(0, MAX_SESSIONS);
    const details = await Promise.all(ordered.map((s) => api.session(s.id).catch(() => null)));
    this.runs.clear();
    const groups = [];
    for (const detail of details) {
      if (!detail?.runs?.length) continue;
      const options = detail.runs.map((run) => {
        this.runs.set(run.id, { session: detail.session, run });
        return h("option", { value: run.id }, runLabel(detail.session, run));
      });
      groups.push([detail.session, options]);
    }
    const keepA = this.pickA.value || this.currentRun || this.ctx.runId();
    const keepB = this.pickB.value;
    for (const pick of [this.pickA, this.pickB]) {
      replace(pick, groups.map(([session, options]) =>
        h("optgroup", { label: session.id === this.ctx.sessionId ? `${session.name} (this session)` : session.name },
          options.map((o) => o.cloneNode(true)))));
    }
    this.pickA.value = this.runs.has(keepA) ? keepA : this.pickA.options[0]?.value ?? "";
    const other = [...this.runs.keys()].find((id) => id !== this.pickA.value) ?? "";
    this.pickB.value = this.runs.has(keepB) && keepB !== this.pickA.value ? keepB : other;
    this.load();
  }

  /** Compare the two picked runs. */
  async load() {
    const a = this.pickA.value;
    const b = this.pickB.value;
    this.comparison = null;
    if (!a || !b) {
      replace(this.summary, "Two runs are needed: start another run (other options), or import one on the home page.");
      replace(this.table);
      return;
    }
    replace(this.summary, "Comparing…");
    try {
      const comparison = await debugApi.compare(a, b);
      if (this.pickA.value !== a || this.pickB.value !== b) return;
      this.comparison = comparison;
    } catch (err) {
      replace(this.summary, errorBox("Could not compare the runs:", err.message));
      replace(this.table);
      return;
    }
    this.renderTable();
  }

  renderTable() {
    const c = this.comparison;
    if (!c) return;
    const rows = c.rows.filter((r) => !this.changedOnly.checked || r.same_after !== true);
    const onlyA = c.rows.filter((r) => !r.b).length;
    const onlyB = c.rows.filter((r) => !r.a).length;
    const differ = c.rows.filter((r) => r.same_after === false).length;
    replace(this.summary, `${c.rows.length} passes · ${differ} with different after-modules · ${onlyA} only in A · ` +
      `${onlyB} only in B · final modules ${c.same_final === null ? "?" : c.same_final ? "identical" : "differ"}`);
    const head = h("thead", {}, h("tr", {},
      h("th", {}, "pass"), h("th.a", { colSpan: 4 }, "run A"), h("th.b", { colSpan: 4 }, "run B"), h("th", {}, "after")),
    h("tr.sub", {}, h("th", {}), ...["a", "b"].flatMap((side) =>
      ["changed", "time", "nodes", "numerics"].map((k) => h(`th.${side}`, {}, k))), h("th", {}, "A vs B")));
    replace(this.table, head, h("tbody", {}, rows.map((row) => this.renderRow(row))));
  }

  /** @param {import("../protocol.js").ComparisonRow} row */
  renderRow(row) {
    const same = row.same_after === null ? "—" : row.same_after ? "same" : "differs";
    const tr = h("tr.compare-row", { dataset: { same: String(row.same_after), name: row.name },
      title: [...row.path, row.name].join(" › "), tabIndex: 0,
      on: { click: () => this.openRow(row), keydown: (e) => { if (e.key === "Enter") this.openRow(row); } } },
    // the enclosing Sequential, unless it is the pipeline itself (every row has that one)
    h("td.pass", {}, row.path.length > 1 ? h("span.compare-path", {}, `${row.path.at(-1)} › `) : null, row.name),
    ...sideCells(row.a, "a"), ...sideCells(row.b, "b"),
    h(`td.same.${row.same_after === false ? "differs" : "same"}`, {}, same));
    return tr;
  }

  /** The same pass across the runs: A's after-module against B's (one side alone: its own diff). */
  openRow(row) {
    const { a, b } = row;
    if (a?.after != null && b?.after != null) {
      this.hub.emit(TOPIC.COMPARE, { left: a.after, right: b.after, passIndex: null,
        title: `${row.name}: after in run A → after in run B`,
        captions: [`A ${passLabel(a.pass_index)} (${snapshotLabel(a.after)})`, `B ${passLabel(b.pass_index)} (${snapshotLabel(b.after)})`] });
      return;
    }
    const side = a ?? b;
    const which = a ? "A" : "B";
    if (side?.before == null) return;
    const right = side.after ?? side.before;
    this.hub.emit(TOPIC.COMPARE, { left: side.before, right, passIndex: null,
      title: `${row.name}: only run ${which} ran it`,
      captions: [`${which} before (${snapshotLabel(side.before)})`, `${which} after (${snapshotLabel(right)})`] });
  }
}

/** @param {import("../protocol.js").ComparedPass | null} side */
function sideCells(side, key) {
  if (!side) return [h(`td.${key}.missing`, { colSpan: 4 }, "not run")];
  const numerics = side.numerics ? (side.numerics.ok ? "✓" : "✗") : "";
  return [
    h(`td.${key}`, {}, side.failed ? "failed" : side.changed ? "changed" : "—"),
    h(`td.${key}.num`, {}, side.elapsed_ms === null ? "" : formatMs(side.elapsed_ms)),
    h(`td.${key}.num`, {}, side.nodes === null ? "" : String(side.nodes)),
    h(`td.${key}`, { title: side.numerics?.max_abs_err != null ? `max abs err ${side.numerics.max_abs_err}` : "" }, numerics),
  ];
}
