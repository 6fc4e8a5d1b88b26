// The state of one run, folded from its RunEvents in index order.
import { EV, RUN_STATUS } from "./protocol.js";

export class RunModel {
  constructor(runId) {
    this.runId = runId;
    this.nextIndex = 0;
    this.status = RUN_STATUS.RUNNING;
    this.options = null;
    this.initialSnapshot = null;
    this.planned = null;
    /** {position, max_concurrent} from run_queued while the run waits for a worker. */
    this.queue = null;
    /** @type {Map<number, object>} pass_index -> pass row */
    this.passes = new Map();
    this.build = null; // null | "running" | {num_kernels} | {failed, message} | {cancelled}
    this.summary = null;
    this.failure = null; // {pass, message, code}
  }

  /** Apply one event; events out of order are refused (the stream fills gaps first). */
  apply(event) {
    if (event.index !== this.nextIndex) return false;
    this.nextIndex += 1;
    const handler = REDUCERS[event.type];
    if (handler) handler(this, event.data ?? {});
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

  /** Pass rows in pass_index order. */
  rows() {
    return [...this.passes.values()].sort((a, b) => a.pass_index - b.pass_index);
  }

  pass(index) {
    return this.passes.get(index) ?? null;
  }

  doneCount() {
    let n = 0;
    for (const p of this.passes.values()) if (p.state !== "running" && !p.isContainer) n++;
    return n;
  }

  /** Snapshots the timeline can offer for comparison: initial, then after each finished pass. */
  snapshotChoices() {
    const choices = [];
    if (this.initialSnapshot !== null) {
      choices.push({ id: this.initialSnapshot, label: `#${this.initialSnapshot} initial module` });
    }
    const seen = new Set(choices.map((c) => c.id));
    for (const p of this.rows()) {
      if (p.after === null || p.after === undefined || seen.has(p.after)) continue;
      seen.add(p.after);
      choices.push({ id: p.after, label: `#${p.after} ${p.name} · pass ${p.pass_index}` });
    }
    return choices;
  }
}

function upsertPass(model, data, state) {
  const prev = model.passes.get(data.pass_index) ?? { children: 0 };
  const row = { ...prev, ...data, state };
  model.passes.set(data.pass_index, row);
  if (!prev.name && data.parent_index !== null && data.parent_index !== undefined) {
    const parent = model.passes.get(data.parent_index);
    if (parent) {
      parent.children += 1;
      parent.isContainer = true;
    }
  }
  return row;
}

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th");
  return `${n}${suffix}`;
}

const REDUCERS = {
  [EV.RUN_QUEUED]: (m, d) => {
    m.queue = { position: d.position ?? null, max_concurrent: d.max_concurrent ?? null };
  },
  [EV.RUN_STARTED]: (m, d) => {
    m.queue = null;
    m.options = d.options ?? null;
    m.initialSnapshot = d.initial_snapshot ?? null;
    m.planned = d.num_passes_planned ?? null;
  },
  [EV.PASS_STARTED]: (m, d) => {
    upsertPass(m, d, "running");
  },
  [EV.PASS_FINISHED]: (m, d) => {
    upsertPass(m, d, "done");
  },
  [EV.PASS_FAILED]: (m, d) => {
    const row = upsertPass(m, d, "failed");
    row.changed = null;
    // The innermost pass fails first; its Sequentials report the same failure afterwards.
    m.failure ??= { pass: d.name, message: d.message, code: "pass_failed" };
  },
  [EV.BUILD_STARTED]: (m) => {
    m.build = "running";
  },
  [EV.BUILD_FINISHED]: (m, d) => {
    m.build = { num_kernels: d.num_kernels ?? 0 };
  },
  [EV.RUN_FINISHED]: (m, d) => {
    m.summary = d.summary ?? null;
    m.status = d.summary?.status ?? RUN_STATUS.FINISHED;
    closeRunning(m);
  },
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
  for (const p of m.passes.values()) if (p.state === "running") p.state = "stopped";
}
