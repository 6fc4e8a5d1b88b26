// Pane lifecycle: mount(parent) once, update(...) any number of times, destroy() once.
// Hub subscriptions made with this.listen() end with the pane.

export class Pane {
  /** @param {import("./hub.js").EventHub} hub */
  constructor(hub, ctx) {
    this.hub = hub;
    this.ctx = ctx;
    this.root = null;
    this.disposers = [];
  }

  /** Build the DOM under `parent`. Subclasses implement render() returning an element. */
  mount(parent) {
    this.root = this.render();
    parent.append(this.root);
    this.afterMount();
    return this;
  }

  render() {
    throw new Error(`${this.constructor.name}.render() is missing`);
  }

  afterMount() {}

  update() {}

  /**
   * Subscribe to a hub topic for the pane's lifetime.
   * @template {import("./hub.js").Topic} K
   * @param {K} topic
   * @param {(payload: import("./hub.js").TopicPayloads[K]) => void} handler
   */
  listen(topic, handler) {
    this.disposers.push(this.hub.on(topic, handler));
  }

  /** Register any cleanup function to run at destroy(). */
  onDestroy(fn) {
    this.disposers.push(fn);
  }

  destroy() {
    for (const dispose of this.disposers.splice(0)) dispose();
    this.root?.remove();
    this.root = null;
  }
}
