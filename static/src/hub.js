// One event hub for the page: panes talk through it, never to each other.
// Each topic's payload is declared below (TopicPayloads); `emit`, `on` and Pane.listen are
// typed by it, and tests/explorer/test_explorer_hub_topics.py checks every emit site's keys
// and every handler's reads against these typedefs, so a drift fails a test.

/** Topics published on the hub (payload types: TopicPayloads). */
export const TOPIC = Object.freeze({
  RUN_RESET: "run:reset",
  RUN_CHANGED: "run:changed",
  PASS_SELECTED: "pass:selected",
  COMPARE: "compare",
  SNAPSHOTS_SHOWN: "snapshots:shown",
  EXPR_SELECTED: "expr:selected",
  LAYER_SELECTED: "layer:selected",
  TAB: "tab",
  CLEAR: "clear",
  BREAKPOINTS: "breakpoints",
  BREAKPOINT_TOGGLE: "breakpoint:toggle",
  REMARKS: "remarks",
});

/**
 * Another run was opened: panes drop what they show of the previous one.
 * @typedef {Object} RunReset
 * @property {string} runId
 */

/**
 * A pass of the timeline was chosen (click, keys, a backtrace link, the URL).
 * @typedef {Object} PassSelected
 * @property {number} passIndex
 */

/**
 * Show two snapshots side by side; `passIndex` null for any other pair.
 * @typedef {Object} Compare
 * @property {number} left snapshot id
 * @property {(number|null)} right snapshot id; null while the pass is still running
 * @property {(number|null)} passIndex
 * @property {string} title
 * @property {Array<string>} [captions] [left, right]
 */

/**
 * The diff pane shows two snapshots and has their source indexes.
 * @typedef {Object} SnapshotsShown
 * @property {import("./protocol.js").SnapshotText} left
 * @property {import("./protocol.js").SnapshotText} right
 * @property {{a: import("./sourcemap.js").SourceIndex, b: import("./sourcemap.js").SourceIndex}} indexes
 */

/**
 * An expression was selected in one side of the diff (null: nothing selected).
 * @typedef {Object} ExprSelected
 * @property {number} nodeId
 * @property {Array<string>} spans frontend layer names
 * @property {string} kind
 * @property {(string|null)} op
 * @property {("a"|"b")} side
 * @property {number} snapshotId
 * @property {("click"|"url"|"graph")} origin click: in the text; graph: in the Graph view
 */

/**
 * A frontend layer was selected (null: nothing selected).
 * @typedef {Object} LayerSelected
 * @property {string} name
 */

/**
 * Show a tab of the session page.
 * @typedef {Object} Tab
 * @property {("model"|"diff"|"schedules"|"compare")} name
 */

/**
 * The remarks of the compared pass, for the diff to show at their expressions' lines.
 * @typedef {Object} Remarks
 * @property {number} left snapshot id
 * @property {(number|null)} right snapshot id
 * @property {Array<import("./protocol.js").RemarkEntry>} remarks
 */

/**
 * Escape: drop the expression / layer selection (no fields).
 * @typedef {Object} Clear
 */

/**
 * The page's breakpoints changed (the next run's, and the live run's).
 * @typedef {Object} Breakpoints
 * @property {Array<import("./protocol.js").Breakpoint>} breakpoints
 */

/**
 * Add or remove one breakpoint (the timeline's ● on a pass row).
 * @typedef {Object} BreakpointToggle
 * @property {("before"|"after"|"touches")} kind
 * @property {string} target
 */

/**
 * Topic -> payload.
 * @typedef {{
 *   "run:reset": RunReset,
 *   "run:changed": import("./run-model.js").RunModel,
 *   "pass:selected": PassSelected,
 *   "compare": Compare,
 *   "snapshots:shown": SnapshotsShown,
 *   "expr:selected": ExprSelected | null,
 *   "layer:selected": LayerSelected | null,
 *   "tab": Tab,
 *   "clear": Clear,
 *   "breakpoints": Breakpoints,
 *   "breakpoint:toggle": BreakpointToggle,
 *   "remarks": Remarks,
 * }} TopicPayloads
 */

/** @typedef {keyof TopicPayloads} Topic */

export class EventHub {
  constructor() {
    /** @type {Map<Topic, Set<Function>>} */
    this.handlers = new Map();
    /** last payload per topic, so a pane mounted late can catch up */
    this.last = new Map();
  }

  /**
   * Subscribe; returns the function that unsubscribes.
   * @template {Topic} K
   * @param {K} topic
   * @param {(payload: TopicPayloads[K]) => void} handler
   * @returns {() => void}
   */
  on(topic, handler) {
    if (!this.handlers.has(topic)) this.handlers.set(topic, new Set());
    this.handlers.get(topic).add(handler);
    return () => this.handlers.get(topic)?.delete(handler);
  }

  /**
   * @template {Topic} K
   * @param {K} topic
   * @param {TopicPayloads[K]} payload
   */
  emit(topic, payload) {
    this.last.set(topic, payload);
    for (const handler of [...(this.handlers.get(topic) ?? [])]) {
      try {
        handler(payload);
      } catch (err) {
        console.error(`hub handler for ${topic} failed`, err);
      }
    }
  }

  /**
   * @template {Topic} K
   * @param {K} topic
   * @returns {TopicPayloads[K] | undefined}
   */
  lastOf(topic) {
    return this.last.get(topic);
  }
}
