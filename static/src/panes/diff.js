// Side-by-side diff of two snapshots (CodeMirror merge view; the diff itself is computed
// in the diff Web Worker), with span-linked highlighting driven by the hub.
import { Change, MergeView, goToNextChunk, goToPreviousChunk, diff as cmDiff } from "@codemirror/merge";
import { api } from "../api.js";
import { diffSnapshots } from "../diff-client.js";
import { errorBox, h, replace } from "../dom.js";
import { foldLines, foldable, hiddenText, openFold, paintHighlights, relayEditorExtensions,
  softWrap } from "../editor.js";
import { TOPIC } from "../hub.js";
import { snapshotLabel } from "../protocol.js";
import { Pane } from "../pane.js";
import { functionsOf, scopeChoices, scopeText } from "../scope.js";
import { highlightsFor, sourceIndexOf } from "../sourcemap.js";
import { driftRanges, numericsBreak } from "./numerics.js";
import { quantExtensions } from "../quant.js";
import { paintRemarks, placeRemarks, remarkGutter } from "../remarks.js";

const SIDES = ["a", "b"];
const VIEW_KEY = "irx.diffView";
/** The view toggles: [key, label, title, default]. */
const TOGGLES = [
  ["types", "types", "Show the /* ty=... */ type comments", true],
  ["spans", "spans", "Show the span comments (frontend layer names); unticked, they are not compared either", true],
  ["meta", "meta", "Show constants as meta[relay.Constant][N] (unticked: const)", true],
  ["wrap", "wrap", "Soft-wrap long lines", false],
  ["fold", "fold", "Fold every unchanged stretch", false],
];
/** Fold: every unchanged stretch of at least FOLD_MIN lines. */
const FOLD_MIN = 2;
/** The summary by layer lists at most this many layers. */
const LAYER_LIMIT = 200;

function loadView() {
  let saved = {};
  try {
    saved = JSON.parse(localStorage.getItem(VIEW_KEY) ?? "{}") ?? {};
  } catch {
    saved = {};
  }
  return Object.fromEntries(TOGGLES.map(([key, , , init]) => [key, typeof saved[key] === "boolean" ? saved[key] : init]));
}

export class DiffPane extends Pane {
  render() {
    this.leftSelect = h("select.snap-select", { "aria-label": "Left snapshot", on: { change: () => this.pickCustom() } });
    this.rightSelect = h("select.snap-select", { "aria-label": "Right snapshot", on: { change: () => this.pickCustom() } });
    this.title = h("span.diff-title", {}, "");
    this.stats = h("span.diff-stats", { "data-testid": "diff-stats" });
    this.viewOptions = loadView();
    this.toggles = TOGGLES.map(([key, label, title]) => h("label.inline.view-toggle", { title },
      h("input", { type: "checkbox", checked: this.viewOptions[key], dataset: { view: key },
        "data-testid": `view-${key}`, on: { change: (e) => this.setView(key, e.target.checked) } }), ` ${label}`));
    this.scopeSelect = h("select.scope-select", { "aria-label": "Diff scope", "data-testid": "diff-scope",
      title: "Scope the diff to one function or fused kernel", on: { change: () => this.setScope(this.scopeSelect.value) } });
    // the view toggles in a menu: the toolbar keeps one row at 1024 px
    this.viewMenu = h("details.view-menu", {},
      h("summary.btn.small", { title: "What the diff shows: types, spans, meta, wrap, fold",
        "data-testid": "view-menu" }, "view"),
      h("div.view-toggles", {}, this.toggles));
    this.summaryText = h("span.diff-summary-text");
    this.layerList = h("ul.diff-layer-list", { "data-testid": "diff-layers" });
    this.layerMenu = h("details.diff-layer-menu", {},
      h("summary", { "data-testid": "diff-layers-toggle" }, "by layer"), this.layerList);
    this.summary = h("div.diff-summary", { "data-testid": "diff-summary", hidden: true },
      this.summaryText, this.layerMenu);
    this.wholeButton = h("button.btn.small", { type: "button", disabled: true, "data-testid": "compare-whole",
      on: { click: () => this.compareWhole() } }, "Whole pipeline: initial → final");
    this.firstButton = h("button.btn.small", { type: "button", disabled: true,
      on: { click: () => this.selectFirstChange() } }, "First pass that changed the IR");
    this.placeholder = h("div.placeholder", {},
      h("p", {}, "Select a pass in the timeline (j / k step through them) to see the IR before and after it."),
      h("p", {}, this.firstButton, " ", this.wholeButton),
      h("p.hint", {}, "Shift-click a second pass to compare across several passes; click any expression "
        + "to trace it to its frontend layers."));
    this.body = h("div.diff-body", { "data-testid": "diff-body" }, this.placeholder);
    this.captions = h("div.diff-captions", {},
      h("div.diff-caption", { "data-side": "a" }, "before"), h("div.diff-caption", { "data-side": "b" }, "after"));
    return h("div.pane.diff-pane", { "data-testid": "diff-pane" },
      h("div.pane-toolbar.diff-toolbar", {},
        this.title,
        this.stats,
        h("span.spacer"),
        this.scopeSelect,
        h("label.inline", { title: "Left snapshot" }, "A ", this.leftSelect),
        h("label.inline", { title: "Right snapshot" }, "B ", this.rightSelect),
        h("button.btn.small", { type: "button", title: "Previous change", "aria-label": "Previous change",
          on: { click: () => this.step(-1) } }, "↑"),
        h("button.btn.small", { type: "button", title: "Next change", "aria-label": "Next change",
          on: { click: () => this.step(1) } }, "↓"),
        this.viewMenu),
      this.summary,
      this.captions,
      this.body);
  }

  afterMount() {
    this.view = null;
    this.indexes = { a: null, b: null };
    this.snapshots = { a: null, b: null };
    this.selection = null;
    this.scopeKey = null; // the chosen function: kept while passes change, null = whole module
    this.shown = null; // per side: the scoped text and its offset in the whole module
    this.requestSeq = 0;
    this.indexesReady = Promise.resolve(null);
    const closeMenus = (e) => {
      for (const menu of [this.viewMenu, this.layerMenu]) if (menu.open && !menu.contains(e.target)) menu.open = false;
    };
    document.addEventListener("click", closeMenus);
    this.onDestroy(() => document.removeEventListener("click", closeMenus));
    this.listen(TOPIC.COMPARE, (c) => this.compare(c));
    this.listen(TOPIC.RUN_RESET, () => this.reset());
    this.listen(TOPIC.RUN_CHANGED, (model) => {
      this.fillChoices(model);
      this.setDrifted(numericsBreak(model)?.layers ?? []);
    });
    this.listen(TOPIC.EXPR_SELECTED, (sel) => this.select(sel, sel?.origin !== "click"));
    this.listen(TOPIC.LAYER_SELECTED, (sel) => this.select(sel ? { layer: sel.name } : null, true));
    this.listen(TOPIC.REMARKS, (r) => { this.remarks = r; this.showRemarks(); });
    this.onDestroy(() => this.view?.destroy());
  }

  /** Back to the placeholder (another run was opened). */
  reset() {
    this.requestSeq++;
    this.view?.destroy();
    this.view = null;
    this.current = null;
    this.snapshots = { a: null, b: null };
    this.indexes = { a: null, b: null };
    this.indexesReady = Promise.resolve(null);
    this.scopeKey = null;
    this.shown = null;
    replace(this.scopeSelect);
    this.title.textContent = "";
    this.stats.textContent = "";
    this.setCaptions(["before", "after"]);
    this.summaryText.textContent = "";
    this.summary.hidden = true;
    for (const key of ["left", "right", "provenance", "loading", "changedLinesB", "removedLines"]) delete this.root.dataset[key];
    replace(this.body, this.placeholder);
  }

  /** The initial module against the run's last snapshot. */
  compareWhole() {
    const choices = this.model?.snapshotChoices() ?? [];
    const final = this.model?.finalSnapshot();
    if (choices.length < 2 || final === null || final === undefined) return;
    const label = choices.find((c) => c.id === final)?.label ?? snapshotLabel(final);
    this.hub.emit(TOPIC.COMPARE, { left: choices[0].id, right: final, passIndex: null,
      title: "whole pipeline", captions: [choices[0].label, `${label} (final module)`] });
  }

  selectFirstChange() {
    const first = this.model?.leafRows().find((r) => r.changed);
    if (first) this.hub.emit(TOPIC.PASS_SELECTED, { passIndex: first.pass_index });
  }

  /** @param {import("../run-model.js").RunModel} model */
  fillChoices(model) {
    this.model = model;
    const choices = model.snapshotChoices();
    this.wholeButton.disabled = choices.length < 2;
    this.firstButton.disabled = !model.leafRows().some((r) => r.changed);
    const key = choices.map((c) => c.id).join(",");
    for (const select of [this.leftSelect, this.rightSelect]) {
      const current = select.value;
      if (select.dataset.key === key) continue;
      select.dataset.key = key;
      replace(select, choices.map((c) => h("option", { value: String(c.id) }, c.label)));
      select.value = current;
    }
    this.syncSelects();
  }

  syncSelects() {
    if (this.current) {
      this.leftSelect.value = String(this.current.left ?? "");
      this.rightSelect.value = String(this.current.right ?? "");
    }
  }

  pickCustom() {
    const left = Number(this.leftSelect.value);
    const right = Number(this.rightSelect.value);
    if (!Number.isFinite(left) || !Number.isFinite(right)) return;
    this.hub.emit(TOPIC.COMPARE, { left, right, passIndex: null, title: "custom comparison" });
  }

  /**
   * Show snapshots `left` / `right` (right may be null while a pass runs).
   * @param {import("../hub.js").Compare} compare
   */
  async compare({ left, right, title, captions, passIndex }) {
    const seq = ++this.requestSeq;
    this.current = { left, right, title, captions, passIndex };
    this.remarks = null;
    const passName = passIndex === null || passIndex === undefined ? null : this.model?.pass(passIndex)?.name ?? null;
    this.summaryText.textContent = "";
    this.summary.hidden = true;
    this.syncSelects();
    this.title.textContent = title ?? "";
    this.title.title = title ?? "";
    this.setCaptions(captions ?? [snapshotLabel(left), right === null ? "(pending)" : snapshotLabel(right)]);
    this.stats.textContent = "loading…";
    this.root.dataset.loading = "true";
    try {
      // Texts first (what the panes show); the source maps follow for provenance.
      const [a, b] = await Promise.all([api.snapshotText(left),
        right === null ? null : api.snapshotText(right)]);
      const other = b ?? a;
      const shown = this.scoped(a, other);
      const changes = await diffSnapshots(shown.a, shown.b, this.diffOptions());
      if (seq !== this.requestSeq || !this.root) return;
      this.snapshots = { a, b: other };
      this.shown = shown;
      this.changes = changes;
      this.rebuild();
      this.loadIndexes(seq);
      this.loadSummary(seq, passName);
    } catch (err) {
      if (seq !== this.requestSeq || !this.root) return;
      this.view?.destroy();
      this.view = null;
      this.stats.textContent = "";
      delete this.root.dataset.loading;
      replace(this.body, errorBox("Could not load the snapshots:", err.message));
    }
  }

  /** Source indexes of both sides (fetched after the texts); paints the selection when ready. */
  loadIndexes(seq) {
    const { a, b } = this.snapshots;
    this.root.dataset.provenance = "loading";
    this.indexesReady = Promise.all([sourceIndexOf(a.id), sourceIndexOf(b.id)]).then(([ia, ib]) => {
      if (seq !== this.requestSeq || !this.root) return null;
      this.indexes = { a: ia, b: ib };
      this.root.dataset.provenance = "ready";
      this.hub.emit(TOPIC.SNAPSHOTS_SHOWN, { left: a, right: b, indexes: this.indexes });
      this.paint(true);
      this.showRemarks();
      return this.indexes;
    }, (err) => {
      if (seq === this.requestSeq && this.root) {
        this.root.dataset.provenance = "failed";
        this.stats.textContent += " · provenance unavailable";
        console.warn("source maps unavailable", err);
      }
      return null;
    });
  }

  /**
   * Both sides scoped to the chosen function (the whole module when it is null or neither
   * side has it); fills the scope selector with the functions of both sides.
   */
  scoped(a, b) {
    const fns = { a: functionsOf(a.text), b: functionsOf(b.text) };
    const choices = scopeChoices(fns.a, fns.b);
    const present = this.scopeKey !== null && choices.some((f) => f.key === this.scopeKey);
    const key = present ? this.scopeKey : null;
    this.fillScopes(choices, present);
    const side = (snap, s) => {
      const part = scopeText(snap.text, fns[s], key);
      return { ...part, id: key === null ? snap.id : `${snap.id}:${key}` };
    };
    return { a: side(a, "a"), b: side(b, "b"), key };
  }

  fillScopes(choices, present) {
    const missing = this.scopeKey !== null && !present;
    replace(this.scopeSelect,
      h("option", { value: "" }, missing ? "whole module (scope not here)" : "whole module"),
      choices.map((f) => h("option", { value: f.key, title: f.title }, f.label)));
    this.scopeSelect.value = present ? this.scopeKey : "";
    this.scopeSelect.title = present ? choices.find((f) => f.key === this.scopeKey).title
      : "Scope the diff to one function or fused kernel";
    this.root.dataset.scope = present ? this.scopeKey : "";
    this.root.dataset.scopes = String(choices.length);
  }

  /** The user chose a scope: remembered for the passes shown next. */
  setScope(key) {
    this.scopeKey = key || null;
    if (this.current) this.compare(this.current);
  }

  diffOptions() {
    return { ignoreSpans: !this.viewOptions.spans };
  }

  /** A view toggle changed: remember it; re-diff when it changes what is compared. */
  setView(key, value) {
    this.viewOptions[key] = value;
    localStorage.setItem(VIEW_KEY, JSON.stringify(this.viewOptions));
    if (!this.view || !this.current) return;
    if (key === "spans") {
      this.compare(this.current);
      return;
    }
    const { indexes } = this;
    this.rebuild();
    this.indexes = indexes;
    this.paint(false);
    this.showRemarks();
  }

  /** The pass's structural summary above the diff (nodes created, removed, rewritten by op). */
  async loadSummary(seq, passName) {
    const { a, b } = this.snapshots;
    if (a.id === b.id) return;
    try {
      const diff = await api.diffNodes(a.id, b.id);
      if (seq !== this.requestSeq || !this.root) return;
      this.summaryText.textContent = `${passName ?? "B against A"}: ${diff.summary.text}`;
      this.summaryText.title = this.summaryText.textContent;
      this.showLayers(diff.summary.layers ?? {});
      this.summary.hidden = false;
    } catch (err) {
      console.warn("diff summary unavailable", err);
    }
  }

  /** The summary by frontend layer: each layer's created / removed / rewritten counts; a
   * click on a layer highlights its expressions. */
  showLayers(layers) {
    // most changed first (a JSON object's key order does not survive the server's sorted keys)
    const total = (c) => (c.rewritten ?? 0) + (c.created ?? 0) + (c.removed ?? 0);
    const names = Object.keys(layers).sort((a, b) => total(layers[b]) - total(layers[a]) || a.localeCompare(b));
    this.layerMenu.hidden = !names.length;
    this.layerMenu.querySelector("summary").textContent = `by layer (${names.length})`;
    const counts = (c) => [["rewritten", "~"], ["created", "+"], ["removed", "−"]]
      .filter(([k]) => c[k]).map(([k, sign]) => `${sign}${c[k]}`).join(" ");
    replace(this.layerList, names.slice(0, LAYER_LIMIT).map((name) => h("li", {},
      h("button.link.diff-layer", { type: "button", title: name,
        on: { click: () => this.hub.emit(TOPIC.LAYER_SELECTED, { name }) } }, name),
      h("span.diff-layer-counts", {}, counts(layers[name])))),
    names.length > LAYER_LIMIT ? h("li.hint", {}, `${names.length - LAYER_LIMIT} more layers`) : null);
  }

  setCaptions([left, right]) {
    for (const [el, text] of [[this.captions.children[0], left], [this.captions.children[1], right]]) {
      el.textContent = text;
      el.title = text;
    }
  }

  rebuild() {
    const { a, b } = this.snapshots;
    if (!a || !b) return;
    this.view?.destroy();
    const shown = this.shown;
    const precomputed = this.changes;
    const changes = precomputed.changes.map((c) => new Change(c.fromA, c.toA, c.fromB, c.toB));
    const override = (ta, tb) => (ta === shown.a.text && tb === shown.b.text ? changes : cmDiff(ta, tb));
    const hide = { types: !this.viewOptions.types, spans: !this.viewOptions.spans, meta: !this.viewOptions.meta };
    const side = (s) => ({
      doc: shown[s].text,
      extensions: [
        relayEditorExtensions({ onPick: (pos) => this.pick(s, pos), onEscape: () => this.hub.emit(TOPIC.CLEAR, {}),
          label: s === "a" ? "IR before" : "IR after", firstLine: shown[s].firstLine }),
        hiddenText(hide),
        quantExtensions(() => this.indexes[s] && { index: this.indexes[s], text: this.snapshots[s].text,
          offset: this.shown?.[s].offset ?? 0 }),
        foldable,
        remarkGutter((pos) => this.pick(s, pos)),
        this.viewOptions.wrap ? softWrap : [],
      ],
    });
    replace(this.body);
    this.indexes = { a: null, b: null };
    this.view = new MergeView({
      a: side("a"),
      b: side("b"),
      parent: this.body,
      gutter: true,
      highlightChanges: true,
      diffConfig: { override },
    });
    if (this.viewOptions.fold) this.fold(precomputed.unchanged ?? []);
    this.view.a.dom.dataset.side = "a";
    this.view.b.dom.dataset.side = "b";
    this.stats.textContent = a.id === b.id ? "identical" : statsText(precomputed);
    this.root.dataset.left = String(a.id);
    this.root.dataset.right = String(b.id);
    this.root.dataset.changedLinesB = String(precomputed.changedLinesB?.length ?? 0);
    this.root.dataset.removedLines = String(precomputed.removed ?? 0);
    delete this.root.dataset.loading;
    this.paint(false);
  }

  /** The compared pass's remarks at their expressions' lines, on each side that has them. */
  showRemarks() {
    const r = this.remarks;
    if (!this.view || !r || !this.current || r.left !== this.current.left || r.right !== this.current.right) return;
    for (const s of SIDES) {
      const index = this.indexes[s];
      if (!index || !this.shown) continue;
      paintRemarks(this.view[s], placeRemarks(index, r.remarks, this.shown[s].offset ?? 0, this.shown[s].text.length));
    }
    this.root.dataset.remarks = String(r.remarks.length);
  }

  /** Fold every unchanged stretch, the same lines on both sides (the diff's own pairs). */
  fold(unchanged) {
    const stretches = unchanged.filter((u) => u.n >= FOLD_MIN);
    const open = (index) => SIDES.forEach((s) => openFold(this.view[s], index));
    foldLines(this.view.a, stretches.map((u) => ({ line: u.a, n: u.n })), open);
    foldLines(this.view.b, stretches.map((u) => ({ line: u.b, n: u.n })), open);
    this.root.dataset.folds = String(stretches.length);
  }

  step(direction) {
    if (!this.view) return;
    const editor = this.view.b;
    (direction > 0 ? goToNextChunk : goToPreviousChunk)(editor);
    editor.focus();
  }

  /** The expression at `pos` of side `s` becomes the selection (once the maps are in). */
  async pick(s, pos) {
    const seq = this.requestSeq;
    const indexes = await this.indexesReady;
    if (!indexes || seq !== this.requestSeq) return;
    const entry = indexes[s].entryAt(pos + (this.shown?.[s].offset ?? 0));
    if (!entry) return;
    this.hub.emit(TOPIC.EXPR_SELECTED, {
      nodeId: entry.node_id, spans: entry.spans ?? [], kind: entry.kind, op: entry.op ?? null,
      side: s, snapshotId: this.snapshots[s].id, origin: "click",
    });
  }

  /**
   * @param {import("../hub.js").ExprSelected | {layer: string} | null} selection
   * @param {boolean} scroll
   */
  select(selection, scroll) {
    this.selection = selection;
    this.paint(scroll);
  }

  /** The drifted layers (numerics) to underlay in both texts. */
  setDrifted(layers) {
    const key = layers.join("\n");
    if (key === (this.drifted ?? []).join("\n")) return;
    this.drifted = layers;
    this.paint(false);
  }

  paint(scroll) {
    if (!this.view) return;
    const counts = {};
    for (const s of SIDES) {
      const found = highlightsFor(this.indexes[s], this.selection);
      const hl = this.inScope(s, { ...found, drift: driftRanges(this.indexes[s], this.drifted) });
      paintHighlights(this.view[s], hl, scroll);
      counts[s] = hl.primary.length + hl.related.length;
    }
    this.root.dataset.highlightsA = String(counts.a);
    this.root.dataset.highlightsB = String(counts.b);
    this.root.dataset.drifted = String(this.drifted?.length ?? 0);
  }

  /** Highlight ranges of the whole module moved into the shown (scoped) text. */
  inScope(s, { primary, related, drift = [] }) {
    const { offset = 0, text } = this.shown?.[s] ?? {};
    if (!offset && text === this.snapshots[s]?.text) return { primary, related, drift };
    const move = (ranges) => ranges.map((r) => ({ from: r.from - offset, to: r.to - offset }))
      .filter((r) => r.from >= 0 && r.to <= text.length);
    return { primary: move(primary), related: move(related), drift: move(drift) };
  }

  /** Entry of a node id in the shown snapshots, preferring `side`. */
  findNode(nodeId, side = "b") {
    for (const s of side === "a" ? ["a", "b"] : ["b", "a"]) {
      const entry = this.indexes[s]?.entriesOfNode(nodeId)[0];
      if (entry) return { entry, side: s, snapshotId: this.snapshots[s].id };
    }
    return null;
  }
}

/** "3 rewritten · +2 −1 lines" */
function statsText({ changed = 0, added = 0, removed = 0 }) {
  if (!changed && !added && !removed) return "no change";
  const parts = [];
  if (changed) parts.push(`${changed} rewritten`);
  if (added || removed) parts.push(`+${added} −${removed} lines`);
  return parts.join(" · ");
}
