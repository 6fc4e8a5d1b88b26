// Side-by-side diff of two snapshots (CodeMirror merge view; the diff itself is computed
// in the diff Web Worker), with span-linked highlighting driven by the hub.
import { Change, MergeView, goToNextChunk, goToPreviousChunk, diff as cmDiff } from "@codemirror/merge";
import { api } from "../api.js";
import { diffTexts } from "../diff-client.js";
import { errorBox, h, replace } from "../dom.js";
import { paintHighlights, relayEditorExtensions } from "../editor.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";
import { SourceIndex, highlightsFor } from "../sourcemap.js";

const SIDES = ["a", "b"];

export class DiffPane extends Pane {
  render() {
    this.leftSelect = h("select.snap-select", { "aria-label": "Left snapshot", on: { change: () => this.pickCustom() } });
    this.rightSelect = h("select.snap-select", { "aria-label": "Right snapshot", on: { change: () => this.pickCustom() } });
    this.title = h("span.diff-title", {}, "");
    this.stats = h("span.diff-stats", { "data-testid": "diff-stats" });
    this.collapse = h("input", { type: "checkbox", on: { change: () => this.rebuild() } });
    this.body = h("div.diff-body", { "data-testid": "diff-body" },
      h("div.placeholder", {}, "Select a pass in the timeline to see the IR before and after it."));
    this.captions = h("div.diff-captions", {},
      h("div.diff-caption", { "data-side": "a" }, "before"), h("div.diff-caption", { "data-side": "b" }, "after"));
    return h("div.pane.diff-pane", { "data-testid": "diff-pane" },
      h("div.pane-toolbar", {},
        this.title,
        h("span.spacer"),
        h("label.inline", {}, "Left ", this.leftSelect),
        h("label.inline", {}, "Right ", this.rightSelect),
        h("button.btn.small", { title: "Previous change (Alt+↑)", on: { click: () => this.step(-1) } }, "↑ change"),
        h("button.btn.small", { title: "Next change (Alt+↓)", on: { click: () => this.step(1) } }, "↓ change"),
        h("label.inline", { title: "Fold long unchanged stretches" }, this.collapse, " fold unchanged"),
        this.stats),
      this.captions,
      this.body);
  }

  afterMount() {
    this.view = null;
    this.indexes = { a: null, b: null };
    this.snapshots = { a: null, b: null };
    this.selection = null;
    this.requestSeq = 0;
    this.listen(TOPIC.COMPARE, (c) => this.compare(c));
    this.listen(TOPIC.RUN_CHANGED, (model) => this.fillChoices(model));
    this.listen(TOPIC.EXPR_SELECTED, (sel) => this.select(sel, sel?.origin !== "click"));
    this.listen(TOPIC.LAYER_SELECTED, (sel) => this.select(sel ? { layer: sel.name } : null, true));
    this.onDestroy(() => this.view?.destroy());
  }

  fillChoices(model) {
    const choices = model.snapshotChoices();
    for (const select of [this.leftSelect, this.rightSelect]) {
      const current = select.value;
      if (select.options.length === choices.length) continue;
      replace(select, choices.map((c) => h("option", { value: String(c.id) }, `${c.label} (#${c.id})`)));
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

  /** Show snapshots `left` / `right` (right may be null while a pass runs). */
  async compare({ left, right, title, captions }) {
    const seq = ++this.requestSeq;
    this.current = { left, right };
    this.syncSelects();
    this.title.textContent = title ?? "";
    this.setCaptions(captions ?? [`#${left}`, right === null ? "(pending)" : `#${right}`]);
    this.stats.textContent = "loading…";
    try {
      const [a, b] = await Promise.all([api.snapshot(left), right === null ? null : api.snapshot(right)]);
      const other = b ?? a;
      const changes = await diffTexts(a.text, other.text);
      if (seq !== this.requestSeq || !this.root) return;
      this.snapshots = { a, b: other };
      this.changes = changes;
      this.rebuild();
    } catch (err) {
      if (seq !== this.requestSeq || !this.root) return;
      this.view?.destroy();
      this.view = null;
      this.stats.textContent = "";
      replace(this.body, errorBox("Could not load the snapshots:", err.message));
    }
  }

  setCaptions([left, right]) {
    this.captions.children[0].textContent = left;
    this.captions.children[1].textContent = right;
  }

  rebuild() {
    const { a, b } = this.snapshots;
    if (!a || !b) return;
    this.view?.destroy();
    const precomputed = this.changes;
    const changes = precomputed.changes.map((c) => new Change(c.fromA, c.toA, c.fromB, c.toB));
    const override = (ta, tb) => (ta === a.text && tb === b.text ? changes : cmDiff(ta, tb));
    const side = (s) => ({
      doc: this.snapshots[s].text,
      extensions: relayEditorExtensions({ onPick: (pos) => this.pick(s, pos), label: s === "a" ? "IR before" : "IR after" }),
    });
    replace(this.body);
    this.view = new MergeView({
      a: side("a"),
      b: side("b"),
      parent: this.body,
      gutter: true,
      highlightChanges: true,
      diffConfig: { override },
      collapseUnchanged: this.collapse.checked ? { margin: 3, minSize: 8 } : undefined,
    });
    this.view.a.dom.dataset.side = "a";
    this.view.b.dom.dataset.side = "b";
    this.indexes = {
      a: new SourceIndex(a, this.view.a.state.doc),
      b: new SourceIndex(b, this.view.b.state.doc),
    };
    this.stats.textContent = a.id === b.id ? "identical" : `+${precomputed.added} −${precomputed.removed} lines`;
    this.root.dataset.left = String(a.id);
    this.root.dataset.right = String(b.id);
    this.hub.emit(TOPIC.SNAPSHOTS_SHOWN, { left: a, right: b, indexes: this.indexes });
    this.paint(true);
  }

  step(direction) {
    if (!this.view) return;
    const editor = this.view.b;
    (direction > 0 ? goToNextChunk : goToPreviousChunk)(editor);
    editor.focus();
  }

  /** The expression at `pos` of side `s` becomes the selection. */
  pick(s, pos) {
    const entry = this.indexes[s]?.entryAt(pos);
    if (!entry) return;
    this.hub.emit(TOPIC.EXPR_SELECTED, {
      nodeId: entry.node_id, spans: entry.spans ?? [], kind: entry.kind, op: entry.op ?? null,
      side: s, snapshotId: this.snapshots[s].id, origin: "click",
    });
  }

  select(selection, scroll) {
    this.selection = selection;
    this.paint(scroll);
  }

  paint(scroll) {
    if (!this.view) return;
    const counts = {};
    for (const s of SIDES) {
      const hl = highlightsFor(this.indexes[s], this.selection);
      paintHighlights(this.view[s], hl, scroll);
      counts[s] = hl.primary.length + hl.related.length;
    }
    this.root.dataset.highlightsA = String(counts.a);
    this.root.dataset.highlightsB = String(counts.b);
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
