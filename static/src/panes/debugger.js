// Breakpoints: the list the next run starts with (kept per session in localStorage) and,
// for a live run, the server's list (set_breakpoints); the paused bar with Continue, Step
// and Stop. When the run pauses, the page shows the module at that point: the pass's own
// diff after a pass, the diff from the imported module before one.
import { api } from "../api.js";
import { debugApi } from "../debug-api.js";
import { h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { C2S, passLabel, snapshotLabel } from "../protocol.js";
import { request } from "../run-stream.js";

const KINDS = [["before", "before pass"], ["after", "after pass"], ["touches", "when a pass touches layer"]];

/** @param {import("../protocol.js").Breakpoint} b */
export function breakpointLabel(b) {
  return b.kind === "touches" ? `touches layer ${b.target}` : `${b.kind} ${b.target}`;
}

const sameBreakpoint = (a, b) => a.kind === b.kind && a.target === b.target;

export class DebuggerPane extends Pane {
  render() {
    this.kind = h("select", { "aria-label": "Breakpoint kind", "data-testid": "bp-kind",
      on: { change: () => this.offerTargets() } },
    KINDS.map(([value, label]) => h("option", { value }, label)));
    this.targets = h("datalist#bp-targets");
    this.target = h("input.search", { type: "text", placeholder: "FuseOps", list: "bp-targets",
      "aria-label": "Pass or layer name", "data-testid": "bp-target",
      on: { keydown: (e) => { if (e.key === "Enter") this.addFromForm(); } } });
    this.addButton = h("button.btn.small", { type: "button", "data-testid": "bp-add",
      on: { click: () => this.addFromForm() } }, "Add");
    this.error = h("span.bp-error", { "data-testid": "bp-error", "aria-live": "polite" });
    this.list = h("ul.bp-list", { "data-testid": "bp-list" });
    this.pausedBar = h("div.paused-bar", { hidden: true, role: "status", "data-testid": "paused-bar" });
    return h("div.pane.debugger-pane", { "data-testid": "debugger" },
      h("div.pane-header", {}, h("span.pane-title", {}, "Breakpoints")),
      this.pausedBar,
      h("div.bp-form", {}, this.kind, this.target, this.targets, this.addButton),
      this.error, this.list);
  }

  afterMount() {
    this.storageKey = `irx.breakpoints.${this.ctx.sessionId}`;
    /** @type {import("../protocol.js").Breakpoint[]} */
    this.breakpoints = loadList(this.storageKey);
    this.model = null;
    this.shownPause = null;
    this.passNames = [];
    this.layerNames = [];
    this.syncedRun = null;
    this.pendingSync = null;
    api.passes().then(({ passes }) => { this.passNames = passes; this.offerTargets(); }).catch(() => null);
    this.listen(TOPIC.RUN_RESET, () => { this.model = null; this.syncedRun = null; this.renderPaused(); });
    this.listen(TOPIC.RUN_CHANGED, (model) => this.runChanged(model));
    this.listen(TOPIC.BREAKPOINT_TOGGLE, ({ kind, target }) => this.toggle(kind, target));
    this.renderList();
    this.hub.emit(TOPIC.BREAKPOINTS, { breakpoints: this.current() });
  }

  /** The session's frontend layers, offered as targets of "touches" breakpoints. */
  setLayers(names) {
    this.layerNames = names;
    this.offerTargets();
  }

  /** @returns {import("../protocol.js").Breakpoint[]} what a new run starts with */
  current() {
    return this.breakpoints.map((b) => ({ ...b }));
  }

  /** Toggle "before <pass>" (the timeline's and the pass list's shortcut). */
  toggle(kind, target) {
    const point = { kind, target };
    const has = this.breakpoints.some((b) => sameBreakpoint(b, point));
    this.change(has ? this.breakpoints.filter((b) => !sameBreakpoint(b, point)) : [...this.breakpoints, point]);
  }

  offerTargets() {
    const names = this.kind.value === "touches" ? this.layerNames : [...new Set([
      ...(this.model?.plan ?? []).map((p) => p.name), ...this.passNames])];
    replace(this.targets, names.slice(0, 2000).map((name) => h("option", { value: name })));
    this.target.placeholder = this.kind.value === "touches" ? "layer name" : "FuseOps";
  }

  addFromForm() {
    const target = this.target.value.trim();
    if (!target) {
      this.error.textContent = "Name a pass (or, for “touches”, a layer).";
      return;
    }
    const known = this.kind.value === "touches" ? this.layerNames : this.passNames;
    this.error.textContent = known.length && !known.includes(target)
      ? `No ${this.kind.value === "touches" ? "layer" : "registered pass"} is named “${target}”; added anyway.` : "";
    const point = { kind: this.kind.value, target };
    if (!this.breakpoints.some((b) => sameBreakpoint(b, point))) this.change([...this.breakpoints, point]);
    this.target.value = "";
  }

  /** Replace the list: kept for the next run, and sent to the live run if there is one. */
  change(breakpoints) {
    this.breakpoints = breakpoints;
    localStorage.setItem(this.storageKey, JSON.stringify(breakpoints));
    this.renderList();
    this.hub.emit(TOPIC.BREAKPOINTS, { breakpoints: this.current() });
    const runId = this.model && !this.model.finished ? this.model.runId : null;
    if (runId) {
      // a Continue pressed right after waits for this ack, so the worker has the new list first
      this.pendingSync = request(C2S.SET_BREAKPOINTS, { run_id: runId, breakpoints: this.current() })
        .then((ack) => { if (ack?.error) this.error.textContent = ack.error.message; })
        .catch((err) => { this.error.textContent = err.message; });
    }
  }

  renderList() {
    replace(this.list, this.breakpoints.map((b) => h("li.bp-item", { dataset: { kind: b.kind } },
      h("span.bp-dot", { "aria-hidden": "true" }),
      h("span.bp-text", {}, breakpointLabel(b)),
      h("button.btn.small.ghost", { type: "button", title: "Remove this breakpoint",
        "aria-label": `Remove breakpoint ${breakpointLabel(b)}`,
        on: { click: () => this.change(this.breakpoints.filter((x) => !sameBreakpoint(x, b))) } }, "×"))));
    if (!this.breakpoints.length) {
      this.list.append(h("li.bp-empty", {}, "None: the run goes through. Add one, or click a pass's ● in the list."));
    }
  }

  /** @param {import("../run-model.js").RunModel} model */
  runChanged(model) {
    const first = this.model === null;
    this.model = model;
    if (first) this.offerTargets();
    if (!model.finished && this.syncedRun !== model.runId) this.syncLive(model.runId);
    this.renderPaused();
    const pause = model.paused;
    if (pause && this.shownPause !== pause.eventIndex) {
      this.shownPause = pause.eventIndex;
      this.showPausedModule();
    }
  }

  /** A live run (a reload, another tab's run): its breakpoints are the server's. */
  async syncLive(runId) {
    this.syncedRun = runId;
    try {
      const answer = await debugApi.breakpoints(runId);
      if (answer.live && this.model?.runId === runId) {
        this.breakpoints = answer.breakpoints;
        this.renderList();
        this.hub.emit(TOPIC.BREAKPOINTS, { breakpoints: this.current() });
      }
    } catch {
      // the list stays the page's own
    }
  }

  renderPaused() {
    const pause = this.model && !this.model.finished ? this.model.paused : null;
    this.pausedBar.hidden = !pause;
    if (!pause) {
      replace(this.pausedBar);
      return;
    }
    const where = `${pause.when} ${passLabel(pause.pass_index)} ${pause.name}`;
    const action = (name, label, title) => h("button.btn.small", { type: "button", title,
      "data-testid": `resume-${name}`, on: { click: (e) => this.resume(name, e.currentTarget) } }, label);
    replace(this.pausedBar,
      h("div.paused-title", {}, h("strong", {}, "Paused "), h("span", { "data-testid": "paused-where" }, where)),
      h("div.paused-reason", {}, pause.reason, " · module ", snapshotLabel(pause.snapshot)),
      h("div.paused-actions", {},
        action("continue", "▶ Continue", "Run on to the next breakpoint"),
        action("step", "⤼ Step", "Run one pass, then pause after it"),
        action("stop", "■ Stop", "Cancel the run here (its snapshots so far are kept)"),
        h("button.btn.small.ghost", { type: "button", "data-testid": "paused-show",
          title: "Show the module at this point again", on: { click: () => this.showPausedModule() } }, "Show")));
  }

  /** The module where the run waits: after a pass, that pass's diff; before one, the diff
   * from the imported module up to here. */
  showPausedModule() {
    const pause = this.model?.paused;
    if (!pause) return;
    if (pause.when === "after" && this.model.pass(pause.pass_index)) {
      this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: pause.pass_index });
      return;
    }
    const start = this.model.initialSnapshot ?? pause.snapshot;
    this.hub.emit(TOPIC.COMPARE, { left: start, right: pause.snapshot, passIndex: null,
      title: `paused before ${passLabel(pause.pass_index)} ${pause.name}: the imported module → now`,
      captions: [`imported (${snapshotLabel(start)})`, `before ${pause.name} (${snapshotLabel(pause.snapshot)})`] });
  }

  async resume(action, button) {
    const runId = this.model?.runId;
    const pause = this.model?.paused;
    if (!runId || !pause) return;
    for (const b of this.pausedBar.querySelectorAll("button")) b.disabled = true;
    await this.pendingSync;
    try {
      // only this pause: another page may have answered it, and the run paused again
      const at = { pass_index: pause.pass_index, when: pause.when };
      const ack = await request(C2S.RESUME_RUN, { run_id: runId, action, at });
      if (ack?.error) throw new Error(ack.error.message);
      if (!ack?.ok) this.error.textContent = `The run is no longer paused ${pause.when} ${passLabel(pause.pass_index)} ${pause.name}.`;
    } catch (err) {
      this.error.textContent = `Could not ${action}: ${err.message}`;
      if (button?.isConnected) for (const b of this.pausedBar.querySelectorAll("button")) b.disabled = false;
    }
  }
}

function loadList(key) {
  try {
    const raw = JSON.parse(localStorage.getItem(key) ?? "[]");
    return Array.isArray(raw) ? raw.filter((b) => b && typeof b.kind === "string" && typeof b.target === "string") : [];
  } catch {
    return [];
  }
}
