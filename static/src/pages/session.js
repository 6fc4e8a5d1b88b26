// The session page: summary + pipeline options + the explorer view (timeline | diff or
// schedules or model | provenance + layers). Owns the run stream and the URL state.
import { api } from "../api.js";
import { errorBox, h, replace } from "../dom.js";
import { EventHub, TOPIC } from "../hub.js";
import { CompareRunsPane } from "../panes/compare.js";
import { DebuggerPane } from "../panes/debugger.js";
import { DiffPane } from "../panes/diff.js";
import { GraphPane } from "../panes/graph.js";
import { LayersPane } from "../panes/layers.js";
import { NumericsBanner, TensorPane, numericsBreak } from "../panes/numerics.js";
import { OptionsPane } from "../panes/options.js";
import { PassDebugPane } from "../panes/pass-debug.js";
import { PinShapes, symbolicInputs } from "../panes/pin-shapes.js";
import { ProvenancePane } from "../panes/provenance.js";
import { SchedulesPane } from "../panes/schedules.js";
import { RunsStatus, renameInPlace } from "../panes/session-header.js";
import { SummaryPane } from "../panes/summary.js";
import { TimelinePane } from "../panes/timeline.js";
import { C2S, PAGES, ROUTES, URL_KEYS as K, passLabel, snapshotLabel } from "../protocol.js";
import { RunStream, request } from "../run-stream.js";
import { splitter } from "../splitter.js";
import { UrlState } from "../url-state.js";

const TABS = [["model", "Model"], ["diff", "IR diff"], ["schedules", "Schedules"], ["compare", "Compare runs"]];

export class SessionPage {
  constructor(root, sessionId) {
    this.root = root;
    this.sessionId = sessionId;
    this.hub = new EventHub();
    this.url = new UrlState();
    this.stream = null;
    this.data = null;
    this.shownRunning = null;
    this.pending = { pass: this.url.getInt(K.PASS), node: this.url.getInt(K.NODE),
      left: this.url.getInt(K.LEFT), right: this.url.getInt(K.RIGHT), layer: this.url.get(K.LAYER) };
    this.ctx = {
      sessionId,
      url: this.url,
      runId: () => this.stream?.model.runId ?? null,
      startRun: (options) => this.startRun(options),
      cancelRun: () => this.cancelRun(),
      openRun: (rid) => this.openRun(rid, { resetView: true }),
    };
  }

  async mount() {
    this.layout();
    this.wire();
    try {
      this.data = await api.session(this.sessionId);
    } catch (err) {
      replace(this.banner, errorBox("Session unavailable:", err.message));
      return;
    }
    this.showSession();
    const runId = this.url.get(K.RUN) ?? document.body.dataset.runId ?? null;
    if (runId) this.openRun(runId);
    else if (this.url.get("autorun")) {
      this.url.patch({ autorun: null });
      this.startRun(this.options.options());
    } else if (this.data.runs?.length) this.openRun(this.data.runs[0].id);
    this.showTab(this.url.get(K.TAB) ?? (runId || this.data.runs?.length ? "diff" : "model"));
  }

  layout() {
    this.title = h("span.session-name", { "data-testid": "session-name" });
    this.meta = h("span.session-meta");
    this.status = h("span.run-status", { "data-testid": "run-status", "aria-live": "polite" });
    this.banner = h("div.banner", { "aria-live": "assertive" });
    this.options = new OptionsPane(this.hub, this.ctx);
    this.timeline = new TimelinePane(this.hub, this.ctx);
    this.debugger = new DebuggerPane(this.hub, this.ctx);
    this.compare = new CompareRunsPane(this.hub, this.ctx);
    this.diff = new DiffPane(this.hub, this.ctx);
    this.summary = new SummaryPane(this.hub, this.ctx);
    this.schedules = new SchedulesPane(this.hub, this.ctx);
    this.provenance = new ProvenancePane(this.hub, this.ctx);
    this.layers = new LayersPane(this.hub, this.ctx);
    this.numerics = new NumericsBanner(this.hub, this.ctx);
    this.tensor = new TensorPane(this.hub, this.ctx);
    this.passDebug = new PassDebugPane(this.hub, this.ctx);
    this.tabBar = h("div.tabs", { role: "tablist" },
      this.columnToggle("left", "◧", "Show or hide the passes column"),
      TABS.map(([key, label]) =>
        h("button.tab", { type: "button", role: "tab", dataset: { tab: key }, "data-testid": `tab-${key}`,
          on: { click: () => this.showTab(key) } }, label)),
      h("button.btn.small.ghost.graph-toggle", { type: "button", "aria-pressed": "false", "data-testid": "toggle-graph",
        title: "Show or hide the graph of the snapshots above their text", on: { click: () => this.toggleGraph() } }, "◇ Graph"),
      h("span.spacer"),
      this.columnToggle("right", "◨", "Show or hide the provenance and layers column"));
    this.tabBodies = Object.fromEntries(TABS.map(([key]) => [key, h("div.tab-body", { dataset: { tab: key } })]));
    const left = h("aside.col.col-left");
    const center = h("section.col.col-center", {}, this.tabBar, Object.values(this.tabBodies));
    const right = h("aside.col.col-right");
    this.workspace = h("main.workspace");
    this.workspace.append(left, splitter(this.workspace, "--left", { storageKey: "irx.left" }), center,
      splitter(this.workspace, "--right", { sign: -1, storageKey: "irx.right" }), right);
    for (const side of ["left", "right"]) this.collapseColumn(side, localStorage.getItem(`irx.${side}.collapsed`) === "1");
    this.runsStatus = new RunsStatus(this.sessionId, (d) => this.sessionChanged(d));
    const rename = h("button.btn.small", { type: "button", title: "Rename this session",
      "data-testid": "rename-session", on: { click: () => this.renameSession() } }, "Rename");
    const remove = h("button.btn.small", { type: "button", title: "Delete this session and its runs",
      "data-testid": "delete-session", on: { click: () => this.deleteSession() } }, "Delete");
    this.exportLink = h("a.btn.small", { href: "#", download: "", hidden: true, "data-testid": "export-run",
      title: "Download this run (passes, snapshots, schedules) as JSON: Import it on the home page" }, "Export run");
    const bar = h("div.session-bar", {}, h("div.session-id", {}, this.title, this.meta), h("span.spacer"),
      this.runsStatus.el, this.status, this.exportLink, rename, remove);
    this.pinRow = h("div.pin-row");
    this.pinShapes = new PinShapes(this.pinRow);
    const numericsRow = h("div.numerics-row");
    replace(this.root, bar, h("div.options-row", {}), this.pinRow, this.banner, numericsRow, this.workspace);
    this.numerics.mount(numericsRow);
    this.options.mount(this.root.querySelector(".options-row"));
    this.debugger.mount(left);
    this.timeline.mount(left);
    this.compare.mount(this.tabBodies.compare);
    this.summary.mount(this.tabBodies.model);
    this.diff.mount(this.tabBodies.diff);
    this.graphDock = h("div.graph-dock", { hidden: true });
    this.tabBodies.diff.prepend(this.graphDock);
    this.graph = new GraphPane(this.hub, this.ctx).mount(this.graphDock);
    this.schedules.mount(this.tabBodies.schedules);
    this.provenance.mount(right);
    this.layers.mount(right);
    this.tensor.mount(right);
    if (localStorage.getItem("irx.graph") === "1" || this.url.get("graph")) {
      this.graphDock.hidden = false;
      this.tabBar.querySelector("[data-testid=toggle-graph]").setAttribute("aria-pressed", "true");
    }
    this.passDebug.mount(right);
  }

  wire() {
    this.hub.on(TOPIC.PASS_SELECTED, ({ passIndex }) => this.selectPass(passIndex));
    this.hub.on(TOPIC.COMPARE, (c) => {
      this.url.patch(c.passIndex === null ? { [K.PASS]: null, [K.LEFT]: c.left, [K.RIGHT]: c.right } : {});
      if (c.passIndex === null) this.timeline.markSelected(null);
      this.showTab("diff");
    });
    this.hub.on(TOPIC.EXPR_SELECTED, (sel) => this.url.patch({ [K.NODE]: sel?.nodeId, [K.SIDE]: sel?.side, [K.LAYER]: null }));
    this.hub.on(TOPIC.LAYER_SELECTED, (sel) => this.url.patch({ [K.LAYER]: sel?.name, [K.NODE]: null }));
    this.hub.on(TOPIC.SNAPSHOTS_SHOWN, () => this.restoreSelection());
    this.hub.on(TOPIC.TAB, ({ name }) => this.showTab(name));
    this.hub.on(TOPIC.CLEAR, () => {
      this.hub.emit(TOPIC.LAYER_SELECTED, null);
      this.hub.emit(TOPIC.EXPR_SELECTED, null);
    });
    document.addEventListener("keydown", (e) => this.globalKey(e));
  }

  /** A tab-bar button that collapses (and restores) one side column. */
  columnToggle(side, glyph, title) {
    return h("button.btn.small.ghost.col-toggle", { type: "button", title, "aria-label": title,
      "aria-pressed": "false", "data-testid": `toggle-${side}`,
      on: { click: () => this.collapseColumn(side, !this.workspace.classList.contains(`${side}-collapsed`)) } },
    glyph);
  }

  /** Collapse or restore the left / right column (remembered in localStorage). */
  collapseColumn(side, collapsed) {
    this.workspace.classList.toggle(`${side}-collapsed`, collapsed);
    this.tabBar.querySelector(`[data-testid=toggle-${side}]`)?.setAttribute("aria-pressed", String(collapsed));
    localStorage.setItem(`irx.${side}.collapsed`, collapsed ? "1" : "0");
  }

  showSession() {
    const { session, graph } = this.data;
    document.title = `${session.name} · IR Explorer`;
    this.title.textContent = session.name;
    this.title.title = session.name;
    this.meta.textContent = `${session.format} · ${session.num_layers ?? graph?.layers?.length ?? 0} layers`;
    this.summary.update(this.data);
    this.layers.update(graph);
    this.debugger.setLayers((graph?.layers ?? []).map((l) => l.name));
    this.pinShapes.update(session);
    this.options.setSymbolic(symbolicInputs(session).length > 0);
  }

  renameSession() {
    if (!this.title.isConnected) return;
    renameInPlace(this.title, async (name) => {
      const { session } = await api.renameSession(this.sessionId, name);
      this.data.session = session;
      this.showSession();
    });
  }

  /** A fresh session detail (runs polled, or refreshed on a run's start and end). */
  sessionChanged(detail) {
    this.data = detail;
    this.summary.update(detail);
  }

  showTab(name) {
    if (!this.tabBodies[name]) name = "diff";
    for (const [key, body] of Object.entries(this.tabBodies)) body.hidden = key !== name;
    for (const t of this.tabBar.children) t.setAttribute("aria-selected", String(t.dataset.tab === name));
    this.schedules.setActive(name === "schedules");
    this.compare.setActive(name === "compare");
    this.graph.setActive(name === "diff" && !this.graphDock.hidden);
    this.url.patch({ [K.TAB]: name === "diff" ? null : name });
  }

  /** Show or hide the graph above the text of the diff (remembered in localStorage). */
  toggleGraph(show = this.graphDock.hidden) {
    this.graphDock.hidden = !show;
    this.tabBar.querySelector("[data-testid=toggle-graph]").setAttribute("aria-pressed", String(show));
    localStorage.setItem("irx.graph", show ? "1" : "0");
    this.showTab("diff");
  }

  /** Delete the session (the server refuses while a run is in progress), then go home. */
  async deleteSession() {
    const name = this.data?.session.name ?? this.sessionId;
    if (!window.confirm(`Delete ${name} and all its runs?`)) return;
    try {
      await api.deleteSession(this.sessionId);
    } catch (err) {
      replace(this.banner, errorBox(`Could not delete ${name}:`, err.message));
      return;
    }
    this.stream?.close();
    window.location.assign(PAGES.home());
  }

  async startRun(options) {
    replace(this.banner);
    this.options.setRunning(true);
    try {
      const reply = await request(C2S.START_RUN, { session_id: this.sessionId, options,
        breakpoints: this.debugger.current() });
      if (reply?.error) throw Object.assign(new Error(reply.error.message), reply.error);
      this.pending = {};
      this.openRun(reply.run_id, { resetView: true });
      this.showTab("diff");
    } catch (err) {
      this.options.setRunning(false);
      replace(this.banner, errorBox("Could not start the run:", err.message));
    }
  }

  async cancelRun() {
    const runId = this.ctx.runId();
    if (runId) await request(C2S.CANCEL_RUN, { run_id: runId }).catch(() => null);
  }

  openRun(runId, { resetView = false } = {}) {
    this.stream?.close();
    if (resetView) {
      this.pending = {};
      this.url.patch({ [K.PASS]: null, [K.NODE]: null, [K.SIDE]: null, [K.LEFT]: null, [K.RIGHT]: null,
        [K.LAYER]: null, [K.SCHEDULE]: null, [K.STEP]: null });
    }
    this.url.patch({ [K.RUN]: runId });
    this.exportLink.href = ROUTES.exportRun(runId);
    this.exportLink.hidden = false;
    this.shownRunning = null;
    this.hub.emit(TOPIC.RUN_RESET, { runId });
    this.stream = new RunStream(runId, (model) => this.runChanged(model));
    this.stream.start().catch((err) => replace(this.banner, errorBox(`Run ${runId} unavailable:`, err.message)));
  }

  /** @param {import("../run-model.js").RunModel} model */
  runChanged(model) {
    this.options.setRunning(!model.finished);
    this.status.dataset.status = model.status;
    this.status.dataset.numerics = numericsBreak(model) ? "broken" : "";
    this.status.textContent = statusText(model);
    this.hub.emit(TOPIC.RUN_CHANGED, model);
    this.options.offerRunPasses(model.leafRows().map((r) => r.name));
    this.applyPending(model);
    this.refreshRuns(model);
    // a pass selected while it ran shows its diff once it has finished
    const waiting = this.shownRunning === null ? null : model.pass(this.shownRunning);
    if (waiting && waiting.state !== "running") this.selectPass(waiting.pass_index);
  }

  /** The Model tab's runs table follows the runs: refreshed when one starts and when it ends. */
  refreshRuns(model) {
    const key = `${model.runId}:${model.finished}`;
    if (this.runsKey === key) return;
    this.runsKey = key;
    api.session(this.sessionId).then((d) => {
      this.sessionChanged(d);
      this.runsStatus.update(d.runs ?? [], this.stream?.model.runId ?? null);
    }).catch(() => null);
  }

  /** Selections from the URL wait until the run has the pass / snapshots they name. */
  applyPending(model) {
    const p = this.pending;
    if (p.pass !== null && p.pass !== undefined && model.pass(p.pass)?.state !== "running" && model.pass(p.pass)) {
      const pass = p.pass;
      p.pass = null;
      this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: pass });
    } else if (p.left !== null && p.left !== undefined && p.right !== null && p.right !== undefined) {
      const { left, right } = p;
      p.left = p.right = null;
      this.hub.emit(TOPIC.COMPARE, { left, right, passIndex: null, title: "custom comparison" });
    }
  }

  /** @param {number} passIndex */
  selectPass(passIndex) {
    const row = this.stream?.model.pass(passIndex);
    if (!row) return;
    this.url.patch({ [K.PASS]: passIndex, [K.LEFT]: null, [K.RIGHT]: null });
    this.showTab("diff");
    const before = row.before ?? null;
    if (before === null) { // still running: its diff shows when it finishes (runChanged)
      this.shownRunning = row.state === "running" ? passIndex : null;
      return;
    }
    const right = row.after ?? (row.state === "running" ? null : before);
    this.shownRunning = right === null ? passIndex : null;
    this.hub.emit(TOPIC.COMPARE, { left: before, right, passIndex,
      title: `${passLabel(passIndex)} ${row.name}${row.changed === false ? " (no change)" : ""}`,
      captions: [`before ${row.name} (${snapshotLabel(before)})`,
        right === null ? "running…" : `after ${row.name} (${snapshotLabel(right)})`] });
  }

  /** After a reload: re-select the node / layer named by the URL once its snapshots show. */
  restoreSelection() {
    const p = this.pending;
    if (p.layer) {
      const name = p.layer;
      p.layer = null;
      this.hub.emit(TOPIC.LAYER_SELECTED, { name });
      return;
    }
    if (p.node === null || p.node === undefined) return;
    const found = this.diff.findNode(p.node, this.url.get(K.SIDE) ?? "b");
    p.node = null;
    if (!found) return;
    const { entry, side, snapshotId } = found;
    this.hub.emit(TOPIC.EXPR_SELECTED, { nodeId: entry.node_id, spans: entry.spans ?? [], kind: entry.kind,
      op: entry.op ?? null, side, snapshotId, origin: "url" });
  }

  globalKey(event) {
    const t = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (t.closest?.("input, textarea, select, [contenteditable=true]:not(.cm-content)")) return;
    if (event.key === "Escape" && !t.closest?.(".cm-editor")) {
      this.hub.emit(TOPIC.CLEAR, {});
    } else if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      this.timeline.stepSelection(event.key === "j" ? 1 : -1);
    }
  }
}

function statusText(model) {
  if (model.status === "running") {
    if (model.paused) return `paused ${model.paused.when} ${model.paused.name}`;
    const running = model.runningPass();
    return model.build === "running" ? "building…" : running ? `running ${running.name}…` : "running…";
  }
  const s = model.summary;
  if (model.status === "failed") return `failed${model.failure?.pass ? ` in ${model.failure.pass}` : ""}`;
  if (!s) return model.status;
  const broken = numericsBreak(model);
  const numerics = broken ? ` · numerics broke in ${broken.name}` : "";
  return `${model.status} · ${s.num_passes ?? model.rows().length} passes, ${s.num_changed ?? "?"} changed${numerics}`;
}
