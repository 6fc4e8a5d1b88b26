// The state of one run, folded from its RunEvents in index order.
// Payload shapes: protocol.events.gen.js (generated from explorer/protocol/).
import { EV, RUN_STATUS, passLabel, snapshotLabel } from "./protocol.js";

/** @typedef {import("./protocol.js").RunEvent} RunEvent */

/**
 * One row of the timeline: a pass's latest event data and its state. `leaf` (from
 * pass_finished) is undefined until the pass has finished.
 * @typedef {Partial<import("./protocol.js").PassFinished> & Partial<import("./protocol.js").PassFailed>
 *   & {pass_index: number, state: ("running"|"done"|"failed"|"stopped")}} PassRow
 */

export class RunModel {
  constructor(runId) {
    this.runId = runId;
    this.nextIndex = 0;
    /** @type {import("./protocol.js").RunStatus} */
    this.status = RUN_STATUS.RUNNING;
    /** @type {import("./protocol.js").RunOptionsJSON | null} */
    this.options = null;
    this.initialSnapshot = null;
    /** @type {number | null} leaf passes the run will report (run_started) */
    this.planned = null;
    /** @type {import("./protocol.js").PlannedPass[] | null} the leaf passes, in order */
    this.plan = null;
    /** @type {string | null} why numerics are not checked although they were asked for */
    this.numericsError = null;
    /** @type {import("./protocol.js").RunQueued | null} while the run waits for a worker */
    this.queue = null;
    /** @type {Map<number, PassRow>} pass_index -> pass row */
    this.passes = new Map();
    /** @type {null | "running" | {num_nodes: number, num_kernels: (number|null)} | {failed: true, message: string} | {cancelled: true}} */
    this.build = null;
    /** @type {import("./protocol.js").BuildProgress | null} the last build_progress while lowering */
    this.buildProgress = null;
    /** @type {import("./protocol.js").RunSummary | null} */
    this.summary = null;
    /** @type {{pass: (string|null), message: string, code: string} | null} */
    this.failure = null;
    /** @type {(import("./protocol.js").RunPaused & {eventIndex: number}) | null} while a breakpoint holds the run */
    this.paused = null;
  }

  /**
   * Apply one event; events out of order are refused (the stream fills gaps first).
   * @param {RunEvent} event
   */
  apply(event) {
    if (event.index !== this.nextIndex) return false;
    this.nextIndex += 1;
    const handler = REDUCERS[event.type];
    if (handler) handler(this, event.data ?? {}, event.index);
    return true;
  }

  get finished() {
    return this.status !== RUN_STATUS.RUNNING;
  }

  /** True from run_queued until run_started (or the run's end). */
  get queued() {
    return this.queue !== null && !this.finished;
  }

  /** "queued · 2nd in line" while queued, else null (position as announced). */
  queueLabel() {
    if (!this.queued) return null;
    const pos = this.queue.position;
    return pos ? `queued · ${ordinal(pos)} in line` : "queued";
  }

  /** "120/391 calls lowered · 2 kernels" while the build lowers, else null. */
  buildProgressLabel() {
    const p = this.buildProgress;
    if (this.build !== "running" || !p) return null;
    return `${p.done}/${p.total} calls lowered · ${p.kernels} kernel${p.kernels === 1 ? "" : "s"}`;
  }

  /** @returns {PassRow[]} pass rows in pass_index order */
  rows() {
    return [...this.passes.values()].sort((a, b) => a.pass_index - b.pass_index);
  }

  /** @returns {PassRow[]} the finished leaf passes (no pass ran inside them), in order */
  leafRows() {
    return this.rows().filter((p) => p.leaf === true);
  }

  /** @returns {PassRow | null} */
  pass(index) {
    return this.passes.get(index) ?? null;
  }

  /** The finished leaf passes: what num_passes_planned counts. */
  doneCount() {
    let n = 0;
    for (const p of this.passes.values()) if (p.state === "done" && p.leaf === true) n++;
    return n;
  }

  /** @returns {PassRow | null} the innermost pass running now */
  runningPass() {
    return this.rows().filter((r) => r.state === "running").at(-1) ?? null;
  }

  /** The run's final module: the summary's, else the last snapshot a pass made. */
  finalSnapshot() {
    return this.summary?.final_snapshot ?? this.snapshotChoices().at(-1)?.id ?? null;
  }

  /** Snapshots the timeline can offer for comparison: initial, then after each finished pass. */
  snapshotChoices() {
    const choices = [];
    if (this.initialSnapshot !== null) {
      choices.push({ id: this.initialSnapshot, label: `${snapshotLabel(this.initialSnapshot)} initial module` });
    }
    const seen = new Set(choices.map((c) => c.id));
    for (const p of this.rows()) {
      if (p.after === null || p.after === undefined || seen.has(p.after)) continue;
      seen.add(p.after);
      choices.push({ id: p.after, label: `${snapshotLabel(p.after)} ${p.name} · pass ${passLabel(p.pass_index)}` });
    }
    return choices;
  }
}

/**
 * @param {RunModel} model
 * @param {import("./protocol.js").PassStarted | import("./protocol.js").PassFinished | import("./protocol.js").PassFailed} data
 * @param {PassRow["state"]} state
 * @returns {PassRow}
 */
function upsertPass(model, data, state) {
  const row = { ...model.passes.get(data.pass_index), ...data, state };
  model.passes.set(data.pass_index, row);
  return row;
}

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th");
  return `${n}${suffix}`;
}

/** @type {Record<string, (m: RunModel, d: any, index: number) => void>} */
const REDUCERS = {
  /** @param {import("./protocol.js").RunPaused} d */
  [EV.RUN_PAUSED]: (m, d, index) => {
    m.paused = { ...d, eventIndex: index };
  },
  [EV.RUN_RESUMED]: (m) => {
    m.paused = null;
  },
  /** @param {import("./protocol.js").RunQueued} d */
  [EV.RUN_QUEUED]: (m, d) => {
    m.queue = { position: d.position, max_concurrent: d.max_concurrent };
  },
  /** @param {import("./protocol.js").RunStarted} d */
  [EV.RUN_STARTED]: (m, d) => {
    m.queue = null;
    m.options = d.options ?? null;
    m.initialSnapshot = d.initial_snapshot ?? null;
    m.planned = d.num_passes_planned ?? null;
    m.plan = d.plan ?? null;
    m.numericsError = d.numerics_error ?? null; // where runs exported before numerics_unavailable said it
  },
  /** @param {import("./protocol.js").NumericsUnavailable} d */
  [EV.NUMERICS_UNAVAILABLE]: (m, d) => {
    m.numericsError = d.message;
  },
  /** @param {import("./protocol.js").PassStarted} d */
  [EV.PASS_STARTED]: (m, d) => {
    upsertPass(m, d, "running");
  },
  /** @param {import("./protocol.js").PassFinished} d */
  [EV.PASS_FINISHED]: (m, d) => {
    upsertPass(m, d, "done");
  },
  /** @param {import("./protocol.js").PassFailed} d */
  [EV.PASS_FAILED]: (m, d) => {
    const row = upsertPass(m, d, "failed");
    row.changed = null;
    // The innermost pass fails first; its Sequentials report the same failure afterwards.
    m.failure ??= { pass: d.name, message: d.message, code: "pass_failed" };
  },
  [EV.BUILD_STARTED]: (m) => {
    m.build = "running";
  },
  /** @param {import("./protocol.js").BuildProgress} d */
  [EV.BUILD_PROGRESS]: (m, d) => {
    m.build = "running";
    m.buildProgress = { done: d.done, total: d.total, kernels: d.kernels, kernel: d.kernel };
  },
  /** @param {import("./protocol.js").BuildFinished} d */
  [EV.BUILD_FINISHED]: (m, d) => {
    m.build = { num_nodes: d.num_nodes, num_kernels: d.num_kernels ?? null };
  },
  /** @param {import("./protocol.js").RunFinished} d */
  [EV.RUN_FINISHED]: (m, d) => {
    m.summary = d.summary ?? null;
    m.status = d.summary?.status ?? RUN_STATUS.FINISHED;
    closeRunning(m);
  },
  /** @param {import("./protocol.js").RunFailed} d */
  [EV.RUN_FAILED]: (m, d) => {
    m.status = RUN_STATUS.FAILED;
    if (m.build === "running") m.build = { failed: true, message: d.message ?? "" };
    m.failure = { pass: d.pass ?? m.failure?.pass ?? null, message: d.message, code: d.code };
    closeRunning(m);
  },
  [EV.RUN_CANCELLED]: (m) => {
    m.status = RUN_STATUS.CANCELLED;
    if (m.build === "running") m.build = { cancelled: true };
    closeRunning(m);
  },
};

/** A run that ended leaves no pass spinning (containers of a failed pass, for instance). */
function closeRunning(m) {
  m.queue = null;
  m.paused = null;
  for (const p of m.passes.values()) if (p.state === "running") p.state = "stopped";
}
