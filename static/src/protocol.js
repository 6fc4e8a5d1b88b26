// The explorer protocol, mirrored from explorer/protocol.py (see docs/PROTOCOL.md).
// Every event name, route and payload field the front end reads is named here once.

export const NAMESPACE = "/explorer";

/** Client -> server Socket.IO events (each with an ack). */
export const C2S = Object.freeze({
  START_RUN: "start_run",
  SUBSCRIBE: "subscribe",
  UNSUBSCRIBE: "unsubscribe",
  CANCEL_RUN: "cancel_run",
});

/** Server -> client Socket.IO event: one name, payload RunEvent. */
export const S2C = Object.freeze({ RUN_EVENT: "run_event" });

/** RunEvent.type values. */
export const EV = Object.freeze({
  RUN_QUEUED: "run_queued",
  RUN_STARTED: "run_started",
  PASS_STARTED: "pass_started",
  PASS_FINISHED: "pass_finished",
  PASS_FAILED: "pass_failed",
  BUILD_STARTED: "build_started",
  BUILD_FINISHED: "build_finished",
  RUN_FINISHED: "run_finished",
  RUN_FAILED: "run_failed",
  RUN_CANCELLED: "run_cancelled",
});

/** RunSummary.status values. */
export const RUN_STATUS = Object.freeze({
  RUNNING: "running",
  FINISHED: "finished",
  FAILED: "failed",
  CANCELLED: "cancelled",
  INTERRUPTED: "interrupted",
});

export const TERMINAL_EVENTS = new Set([EV.RUN_FINISHED, EV.RUN_FAILED, EV.RUN_CANCELLED]);

/** Backtrace step actions. */
export const ACTION = Object.freeze({ CREATED: "created", CHANGED: "changed", KEPT: "kept" });

/** Session.format values. */
export const FORMATS = Object.freeze(["onnx", "tflite", "pytorch", "relay"]);

/** File extensions the upload accepts (the server decides; this only filters the picker). */
export const UPLOAD_ACCEPT = ".onnx,.tflite,.pt2,.relay,.txt";

const enc = encodeURIComponent;

/** HTTP routes. */
export const ROUTES = Object.freeze({
  sessions: () => "/api/sessions",
  demo: () => "/api/sessions/demo",
  session: (sid) => `/api/sessions/${enc(sid)}`,
  run: (rid) => `/api/runs/${enc(rid)}`,
  events: (rid, since) => `/api/runs/${enc(rid)}/events?since=${since}`,
  snapshot: (id) => `/api/snapshots/${enc(id)}`,
  /** One part of a snapshot: "text" ({id, text}) or "source_map" ({id, source_map}). */
  snapshotPart: (id, part) => `/api/snapshots/${enc(id)}?part=${enc(part)}`,
  diff: (a, b) => `/api/diff?a=${enc(a)}&b=${enc(b)}`,
  backtrace: (rid, nodeId) => `/api/runs/${enc(rid)}/backtrace/${enc(nodeId)}`,
  layer: (rid, name) => `/api/runs/${enc(rid)}/layers/${enc(name)}`,
  timing: (rid) => `/api/runs/${enc(rid)}/timing`,
  schedules: (rid) => `/api/runs/${enc(rid)}/schedules`,
  schedule: (rid, index) => `/api/runs/${enc(rid)}/schedules/${enc(index)}`,
  exportRun: (rid) => `/api/runs/${enc(rid)}/export`,
  importRun: () => "/api/runs/import",
  // Extension (not yet in PROTOCOL.md): the registered passes, for the on/off list.
  passes: () => "/api/passes",
});

/** Page URLs (served by the backend with templates/). */
export const PAGES = Object.freeze({
  home: () => "/",
  session: (sid) => `/s/${enc(sid)}`,
});

/** Query parameters of the session page that make a view linkable. */
export const URL_KEYS = Object.freeze({
  RUN: "run",
  PASS: "pass",
  NODE: "node",
  SIDE: "side",
  LEFT: "a",
  RIGHT: "b",
  TAB: "tab",
  SCHEDULE: "sched",
  STEP: "step",
  LAYER: "layer",
});

/** Default RunOptions. */
export function defaultRunOptions() {
  return {
    opt_level: 3,
    disabled_pass: [],
    required_pass: [],
    passes: null,
    check_numerics: true,
    build: true,
  };
}

/** The TEDD views of a schedule step, in display order. */
export const TEDD_VIEWS = Object.freeze([
  ["schedule_tree", "Schedule tree"],
  ["itervar", "IterVar relations"],
  ["dataflow", "Dataflow"],
]);
