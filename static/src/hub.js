// One event hub for the page: panes talk through it, never to each other.

/** Topics published on the hub (name -> payload). */
export const TOPIC = Object.freeze({
  RUN_RESET: "run:reset", // {runId}
  RUN_CHANGED: "run:changed", // RunModel (after any event batch)
  PASS_SELECTED: "pass:selected", // {passIndex}
  COMPARE: "compare", // {left: snapshotId, right: snapshotId, passIndex|null}
  SNAPSHOTS_SHOWN: "snapshots:shown", // {left, right} loaded snapshot objects
  EXPR_SELECTED: "expr:selected", // {nodeId, spans, side, entry} | null
  LAYER_SELECTED: "layer:selected", // {name} | null
  TAB: "tab", // {name}
  CLEAR: "clear", // {} Escape: drop the expression / layer selection
  ERROR: "error", // {message, pass}
});

export class EventHub {
  constructor() {
    /** @type {Map<string, Set<Function>>} */
    this.handlers = new Map();
    /** last payload per topic, so a pane mounted late can catch up */
    this.last = new Map();
  }

  /** Subscribe; returns the function that unsubscribes. */
  on(topic, handler) {
    if (!this.handlers.has(topic)) this.handlers.set(topic, new Set());
    this.handlers.get(topic).add(handler);
    return () => this.handlers.get(topic)?.delete(handler);
  }

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

  lastOf(topic) {
    return this.last.get(topic);
  }
}
