// The explorer protocol for the front end (see docs/PROTOCOL.md).
// Names and payload typedefs are GENERATED from explorer/protocol/ into protocol.gen.js
// (`python -m explorer.protocol.js_gen`) and re-exported here; this file adds what only the
// front end needs: routes, page URLs, URL keys and defaults. Annotate payloads with
// `/** @param {import("./protocol.js").PassFinished} d */`.
import { TEDD_VIEW_KEYS } from "./protocol.gen.js";

export * from "./protocol.gen.js";
export * from "./protocol.events.gen.js";
export * from "./protocol.http.gen.js";
export * from "./protocol.graph.gen.js";

const enc = encodeURIComponent;

/** HTTP routes (the answer of each is named in protocol.gen.js). */
export const ROUTES = Object.freeze({
  /** SessionList (GET), SessionCreated (POST) */
  sessions: () => "/api/sessions",
  /** SessionCreated (POST, the file as a RAW_UPLOAD_TYPE body) */
  rawUpload: (name, inputShapes) => `/api/sessions?name=${enc(name)}${
    inputShapes ? `&input_shapes=${enc(JSON.stringify(inputShapes))}` : ""}`,
  /** SessionCreated */
  demo: () => "/api/sessions/demo",
  /** SessionCreated: a new session with the symbolic input dims pinned */
  pin: (sid) => `/api/sessions/${enc(sid)}/pin`,
  /** SessionDetail (GET), SessionRenamed (PATCH {name}), OkAck (DELETE: the session and its runs) */
  session: (sid) => `/api/sessions/${enc(sid)}`,
  /** RunDetail (GET), OkAck (DELETE) */
  run: (rid) => `/api/runs/${enc(rid)}`,
  /** EventsPage */
  events: (rid, since) => `/api/runs/${enc(rid)}/events?since=${since}`,
  /** SnapshotDetail */
  snapshot: (id) => `/api/snapshots/${enc(id)}`,
  /** One part of a snapshot: "text" (SnapshotTextDetail) or "source_map" (SnapshotSourceMapDetail). */
  snapshotPart: (id, part) => `/api/snapshots/${enc(id)}?part=${enc(part)}`,
  /** SnapshotGraph: the dataflow graph of a snapshot (nodes, edges as inputs, groups) */
  snapshotGraph: (id) => `/api/snapshots/${enc(id)}/graph`,
  /** GraphMembers: the nodes directly in some groups of a lazy SnapshotGraph */
  snapshotGraphMembers: (id, groups) => `/api/snapshots/${enc(id)}/graph/members?groups=${groups.join(",")}`,
  /** GraphSearch: nodes and groups matching an op, label, layer or node id */
  snapshotGraphSearch: (id, q, constants) =>
    `/api/snapshots/${enc(id)}/graph/search?q=${enc(q)}${constants ? "&constants=1" : ""}`,
  /** GraphSearch: the nodes with one of these layers among their spans */
  snapshotGraphLayers: (id, names) =>
    `/api/snapshots/${enc(id)}/graph/search?${names.map((n) => `layer=${enc(n)}`).join("&")}`,
  /** Diff */
  diff: (a, b) => `/api/diff?a=${enc(a)}&b=${enc(b)}`,
  /** Diff without the text hunks: the node-level diff and its summary */
  diffNodes: (a, b) => `/api/diff?a=${enc(a)}&b=${enc(b)}&part=nodes`,
  /** Backtrace */
  backtrace: (rid, nodeId) => `/api/runs/${enc(rid)}/backtrace/${enc(nodeId)}`,
  /** LayerLookup */
  layer: (rid, name) => `/api/runs/${enc(rid)}/layers/${enc(name)}`,
  /** Timing */
  timing: (rid) => `/api/runs/${enc(rid)}/timing`,
  /** ScheduleList */
  schedules: (rid) => `/api/runs/${enc(rid)}/schedules`,
  /** ScheduleDetail */
  schedule: (rid, index) => `/api/runs/${enc(rid)}/schedules/${enc(index)}`,
  /** RunExport */
  exportRun: (rid) => `/api/runs/${enc(rid)}/export`,
  /** RunImported */
  importRun: () => "/api/runs/import",
  /** RemarkList: the remarks of a run, of one pass (`pass`) or about one node (`node`). */
  remarks: (rid, { pass = null, node = null } = {}) => `/api/runs/${enc(rid)}/remarks`
    + (pass !== null ? `?pass=${enc(pass)}` : node !== null ? `?node=${enc(node)}` : ""),
  /** A zip: the reproducer of one pass (before.relay + constants, inputs, a pytest file). */
  reproducer: (rid, index) => `/api/runs/${enc(rid)}/passes/${enc(index)}/reproducer`,
  /** PassList: the registered passes, for the on/off list. */
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

/**
 * The RunOptions the page starts with (the UI checks numerics and builds by default).
 * @returns {import("./protocol.gen.js").RunOptionsJSON}
 */
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

const TEDD_LABELS = {
  schedule_tree: "Schedule tree",
  itervar: "IterVar relations",
  dataflow: "Dataflow",
};

/** The TEDD views of a schedule step, in display order: [key, label]. */
export const TEDD_VIEWS = Object.freeze(TEDD_VIEW_KEYS.map((key) => [key, TEDD_LABELS[key] ?? key]));

/** Distinct labels: a pass by its index (#12), a snapshot by its id (@34), a node by its id (%56). */
export const passLabel = (index) => `#${index}`;
export const snapshotLabel = (id) => `@${id}`;
export const nodeLabel = (id) => `%${id}`;
