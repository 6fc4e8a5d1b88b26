// Pass timeline: every pass as it arrives, nested under its Sequential, with a time bar,
// a changed marker, span coverage and numerics status; filters; j/k and arrow keys.
import { formatMs, formatPercent, h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { lsbText, numericsTitle } from "../quant.js";
import { numericsBreak, numericsState } from "./numerics.js";

export class TimelinePane extends Pane {
  render() {
    this.hideUnchanged = h("input", { type: "checkbox", "data-testid": "hide-unchanged",
      on: { change: () => this.refresh() } });
    this.search = h("input.search", { type: "search", placeholder: "Filter passes…",
      "aria-label": "Filter passes by name", "data-testid": "pass-search", on: { input: () => this.refresh() } });
    this.progressBar = h("div.progress-fill");
    this.progressText = h("span.progress-text", { "data-testid": "run-progress" }, "");
    this.list = h("ol.pass-list", { role: "listbox", tabIndex: 0, "aria-label": "Passes",
      "data-testid": "pass-list", on: { keydown: (e) => this.onKey(e) } });
    this.failure = h("div.timeline-failure");
    this.buildRow = h("li.build-row", { hidden: true, "data-testid": "build-row", tabIndex: -1,
      title: "relay.build: fuse, lower and schedule every kernel (open the Schedules tab)",
      on: { click: () => this.hub.emit(TOPIC.TAB, { name: "schedules" }) } });
    return h("div.pane.timeline-pane", { "data-testid": "timeline" },
      h("div.pane-header", {}, h("span.pane-title", {}, "Passes"), h("span.spacer"), this.progressText),
      h("div.progress", {}, this.progressBar),
      h("div.pane-toolbar", {}, this.search,
        h("label.inline", { title: "Hide passes that did not change the IR" }, this.hideUnchanged, " hide unchanged")),
      this.failure,
      this.list,
      h("div.pane-footer.legend", {},
        h("span.marker.changed"), " changed  ", h("span.marker.unchanged"), " unchanged  ",
        h("span.num-ok", { title: "numerics ok" }, "✓"), " ok  ",
        h("span.num-bad.num-introduced", { title: "this pass broke numerics" }, "✗"), " broke  ",
        h("span.num-bad.num-inherited", { title: "wrong since an earlier pass" }, "✗"), " inherited"));
  }

  afterMount() {
    this.model = null;
    this.selected = null;
    this.rowEls = new Map();
    this.listen(TOPIC.RUN_RESET, () => this.reset());
    this.listen(TOPIC.RUN_CHANGED, (model) => { this.model = model; this.refresh(); });
    this.listen(TOPIC.PASS_SELECTED, ({ passIndex }) => this.markSelected(passIndex));
    this.breakBefore = new Set();
    this.listen(TOPIC.BREAKPOINTS, ({ breakpoints }) => {
      this.breakBefore = new Set(breakpoints.filter((b) => b.kind === "before").map((b) => b.target));
      this.refresh();
    });
  }

  /** The row's ● toggles a breakpoint before every pass of that name (explorer/runs/breakpoints.py). */
  breakpointDot(row) {
    const on = this.breakBefore.has(row.name);
    return h("button.bp-toggle", { type: "button", "aria-pressed": String(on), "data-testid": "bp-toggle",
      title: `${on ? "Remove the" : "Add a"} breakpoint before ${row.name}`, "aria-label": `Breakpoint before ${row.name}`,
      on: { click: (e) => {
        e.stopPropagation();
        this.hub.emit(TOPIC.BREAKPOINT_TOGGLE, { kind: "before", target: row.name });
      } } });
  }

  reset() {
    this.model = null;
    this.rowEls.clear();
    replace(this.list);
    this.selected = null;
    this.refresh();
  }

  /** Re-render rows from the model (rows are kept and updated in place). */
  refresh() {
    const model = this.model;
    this.renderProgress(model);
    this.renderFailure(model);
    if (!model) return;
    const rows = model.rows();
    const maxMs = Math.max(1e-6, ...model.leafRows().map((r) => r.elapsed_ms));
    const query = this.search.value.trim().toLowerCase();
    const hide = this.hideUnchanged.checked;
    let prev = null;
    for (const row of rows) {
      let el = this.rowEls.get(row.pass_index);
      if (!el) {
        el = h("li.pass-row", { role: "option", dataset: { passIndex: String(row.pass_index) },
          on: { click: (e) => this.choose(row.pass_index, e) } });
        this.rowEls.set(row.pass_index, el);
      }
      fillRow(el, row, maxMs);
      el.prepend(this.breakpointDot(row));
      el.hidden = (hide && row.changed === false) || (query && !row.name.toLowerCase().includes(query));
      el.setAttribute("aria-selected", String(row.pass_index === this.selected));
      if (el.previousSibling !== prev || el.parentNode !== this.list) {
        if (prev) prev.after(el); else this.list.prepend(el);
      }
      prev = el;
    }
    this.renderBuild(model);
  }

  /** The build, after the passes: running, the number of kernels, or how it ended. */
  renderBuild(model) {
    const b = model.build;
    const wanted = model.options?.build !== false;
    this.buildRow.hidden = !b && !(wanted && model.finished === false && model.doneCount());
    if (this.buildRow.hidden) return;
    const state = buildState(b, model);
    this.buildRow.dataset.state = state.key;
    replace(this.buildRow, h(`span.marker.${state.marker}`, { "aria-label": state.key }),
      h("span.pass-name", {}, "relay.build"), h("span.build-info", {}, state.text));
    if (this.buildRow.parentNode !== this.list || this.buildRow.nextSibling) this.list.append(this.buildRow);
  }

  renderProgress(model) {
    if (!model) {
      this.progressText.textContent = "";
      this.progressBar.style.width = "0";
      return;
    }
    // Finished leaf passes (pass_finished.leaf) against the leaf passes run_started planned.
    const done = model.doneCount();
    const planned = model.planned && done <= model.planned ? model.planned : null;
    const building = model.build === "running";
    const lowering = building ? model.buildProgress : null;
    const fraction = model.finished ? 1 : lowering?.total ? lowering.done / lowering.total
      : planned && !building ? done / planned : null;
    this.progressBar.style.width = fraction === null ? "30%" : `${(fraction * 100).toFixed(1)}%`;
    this.progressBar.classList.toggle("indeterminate", fraction === null);
    this.root.dataset.status = model.status;
    this.root.dataset.numerics = numericsBreak(model) ? "broken" : "";
    const count = planned ? `${done}/${planned}` : `${done}`;
    this.root.dataset.queued = model.queued ? "true" : "false";
    this.progressText.textContent = model.queueLabel?.() ?? (model.finished
      ? `${model.status} · ${done} passes`
      : building ? `building · ${lowering ? `${lowering.done}/${lowering.total} calls` : `${done} passes`}`
        : `running · ${count}`);
  }

  renderFailure(model) {
    const f = model?.failure;
    if (!f) {
      replace(this.failure);
      return;
    }
    replace(this.failure, h("div.error-box", { role: "alert", "data-testid": "run-error" },
      h("strong", {}, f.pass ? `Pass ${f.pass} failed: ` : "Run failed: "), h("span", {}, f.message ?? "")));
  }

  choose(passIndex, event) {
    if (event?.shiftKey && this.selected !== null) {
      this.compareRange(this.selected, passIndex);
      return;
    }
    this.hub.emit(TOPIC.PASS_SELECTED, { passIndex });
  }

  /** Shift-click: compare before the first of two passes with after the second. */
  compareRange(from, to) {
    const [first, last] = from < to ? [from, to] : [to, from];
    const a = this.model.pass(first);
    const b = this.model.pass(last);
    if (!a || !b || b.after === null || b.after === undefined) return;
    this.hub.emit(TOPIC.COMPARE, { left: a.before, right: b.after, passIndex: null,
      title: `before #${first} ${a.name} → after #${last} ${b.name}`,
      captions: [`before ${a.name}`, `after ${b.name}`] });
  }

  /** @param {number | null} passIndex */
  markSelected(passIndex) {
    this.selected = passIndex;
    for (const [index, el] of this.rowEls) el.setAttribute("aria-selected", String(index === passIndex));
    const el = this.rowEls.get(passIndex);
    el?.scrollIntoView({ block: "nearest" });
  }

  visibleIndexes() {
    return [...this.list.querySelectorAll(".pass-row")].filter((el) => !el.hidden)
      .map((el) => Number(el.dataset.passIndex));
  }

  /** Select the next (+1) or previous (-1) visible pass. */
  stepSelection(direction) {
    const visible = this.visibleIndexes();
    if (!visible.length) return;
    const at = visible.indexOf(this.selected);
    const next = at < 0 ? (direction > 0 ? 0 : visible.length - 1)
      : Math.max(0, Math.min(visible.length - 1, at + direction));
    this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: visible[next] });
  }

  onKey(event) {
    const moves = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1 };
    const ends = { Home: 0, End: -1 };
    if (event.key in moves) {
      event.preventDefault();
      this.stepSelection(moves[event.key]);
    } else if (event.key in ends) {
      event.preventDefault();
      const visible = this.visibleIndexes();
      if (visible.length) this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: visible.at(ends[event.key]) });
    }
  }
}

/** @param {import("../run-model.js").PassRow} row */
function fillRow(el, row, maxMs) {
  const ms = row.elapsed_ms;
  const width = ms === undefined || ms === null ? 0 : Math.min(100, (ms / maxMs) * 100);
  const marker = row.state === "failed" ? "failed" : row.state === "running" ? "running"
    : row.changed ? "changed" : "unchanged";
  el.dataset.state = row.state;
  el.dataset.changed = String(Boolean(row.changed));
  el.dataset.numerics = numericsState(row.numerics);
  el.classList.toggle("container", row.leaf === false);
  el.style.setProperty("--depth", String(row.depth ?? 0));
  el.title = rowTitle(row);
  replace(el,
    h(`span.marker.${marker}`, { "aria-label": marker }),
    h("span.pass-name", {}, row.name ?? `pass ${row.pass_index}`),
    h("span.pass-bar", {}, h("span.pass-bar-fill", { style: { width: `${width}%` } })),
    h("span.pass-ms", {}, formatMs(ms)),
    h("span.pass-cov", { title: "span coverage" }, formatPercent(row.span_coverage)),
    numericsCell(row),
    row.state === "failed" && row.message ? h("span.pass-error", {}, row.message) : null);
}

function buildState(b, model) {
  if (b === "running") {
    const progress = model.buildProgressLabel();
    return { key: "running", marker: "running", text: progress ? `building… ${progress}` : "building…" };
  }
  if (b?.failed) return { key: "failed", marker: "failed", text: `failed: ${b.message}` };
  if (b?.cancelled) return { key: "stopped", marker: "stopped", text: "cancelled" };
  if (b) return { key: "done", marker: "changed", text: `${b.num_kernels} kernels · schedules ▸` };
  return { key: "pending", marker: "unchanged", text: model.finished ? "not run" : "after the passes" };
}

function numericsCell(row) {
  const n = row.numerics;
  if (!n) return h("span.pass-num", {}, "");
  const state = numericsState(n);
  const step = n.step_max_abs_err === undefined ? null
    : `against the module before this pass: max |err| ${n.step_max_abs_err ?? "not measurable"}`;
  const title = [numericsTitle(n), step, STATE_TITLES[state]].filter(Boolean).join("\n");
  const lsb = n.max_lsb_err === undefined || n.max_lsb_err === null ? null : lsbText(n.max_lsb_err);
  return h(`span.pass-num.${n.ok ? "num-ok" : "num-bad"}.num-${state}`, { title, dataset: lsb ? { lsb: String(n.max_lsb_err) } : {} },
    n.ok ? "✓" : "✗", lsb && n.max_lsb_err > 0 ? h("span.pass-lsb", {}, ` ${lsb}`) : null);
}

const STATE_TITLES = {
  introduced: "this pass broke numerics (against the module before it)",
  inherited: "wrong since an earlier pass; this pass adds nothing beyond tolerance",
};

function rowTitle(row) {
  const parts = [`#${row.pass_index} ${row.name}`];
  if (row.opt_level !== undefined) parts.push(`opt_level ${row.opt_level}`);
  if (row.elapsed_ms !== undefined) parts.push(formatMs(row.elapsed_ms));
  if (row.span_coverage !== undefined) parts.push(`span coverage ${formatPercent(row.span_coverage)}`);
  for (const [k, v] of Object.entries(row.stats ?? {})) parts.push(`${k}=${v}`);
  if (row.message) parts.push(row.message);
  return parts.join("\n");
}
