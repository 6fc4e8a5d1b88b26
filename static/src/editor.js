// CodeMirror plumbing shared by the panes: read-only Relay editors with highlight layers
// (expressions selected through the source map) and an "expression at" click/Enter hook.
import { StateEffect, StateField, EditorState } from "@codemirror/state";
import { Decoration, EditorView, MatchDecorator, ViewPlugin, WidgetType, keymap, lineNumbers,
  highlightActiveLine, highlightActiveLineGutter, drawSelection } from "@codemirror/view";
import { highlightSelectionMatches, search, searchKeymap } from "@codemirror/search";
import { relay } from "./relay-lang.js";

const setHighlights = StateEffect.define();

const MARKS = {
  primary: Decoration.mark({ class: "cm-hl-primary" }),
  related: Decoration.mark({ class: "cm-hl-related" }),
  drift: Decoration.mark({ class: "cm-hl-drift" }),
};

const highlightField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    let next = deco.map(tr.changes);
    for (const effect of tr.effects) if (effect.is(setHighlights)) next = effect.value;
    return next;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/**
 * Paint highlights: {primary: [{from,to}], related: [{from,to}], drift: [{from,to}]} (drift:
 * the expressions of layers whose numerics drifted, under the others); scrolls to the first
 * primary range (or the first related one) when `scroll` is set.
 */
export function paintHighlights(view, { primary = [], related = [], drift = [] }, scroll = false) {
  const ranges = [
    ...drift.map((r) => MARKS.drift.range(r.from, r.to)),
    ...related.map((r) => MARKS.related.range(r.from, r.to)),
    ...primary.map((r) => MARKS.primary.range(r.from, r.to)),
  ];
  const effects = [setHighlights.of(Decoration.set(ranges, true))];
  const target = primary[0] ?? related[0];
  if (scroll && target) effects.push(EditorView.scrollIntoView(target.from, { y: "center" }));
  view.dispatch({ effects });
}

/**
 * Extensions of a read-only Relay text editor.
 * `onPick(pos, view)` is called for a click on the text or Enter at the cursor.
 */
export function relayEditorExtensions({ onPick, onEscape, label, firstLine = 0 } = {}) {
  const pick = onPick ? [
    EditorView.domEventHandlers({
      click(event, view) {
        const pos = view.posAtCoords({ x: event.clientX, y: event.clientY }, false);
        if (pos !== null && view.state.selection.main.empty) onPick(pos, view);
        return false;
      },
    }),
    keymap.of([{ key: "Enter", run: (view) => { onPick(view.state.selection.main.head, view); return true; } }]),
  ] : [];
  return [
    EditorState.readOnly.of(true),
    // a scoped view shows a part of the module: its lines keep their numbers in the module
    firstLine ? lineNumbers({ formatNumber: (n) => String(n + firstLine) }) : lineNumbers(),
    highlightActiveLineGutter(),
    highlightActiveLine(),
    drawSelection(),
    search({ top: true }),
    highlightSelectionMatches(),
    keymap.of(searchKeymap),
    // After the search keymap: Escape closes an open search panel first.
    onEscape ? keymap.of([{ key: "Escape", run: () => { onEscape(); return true; } }]) : [],
    relay(),
    highlightField,
    EditorView.contentAttributes.of({ "aria-label": label ?? "IR text", "aria-readonly": "true" }),
    ...pick,
  ];
}

/** A plain read-only editor (no merge), e.g. for a loop nest. */
export function readOnlyEditor(parent, doc, extraExtensions = []) {
  return new EditorView({
    parent,
    state: EditorState.create({ doc, extensions: [...relayEditorExtensions({}), ...extraExtensions] }),
  });
}

/** What the diff view can hide: the text stays (offsets, source maps), only its display goes. */
const HIDDEN = {
  types: / ?\/\* ty=[^*]*\*\//g,
  spans: / ?\/\* (?!ty=|values=)[^*]*\*\//g,
  meta: /meta\[relay\.Constant\]\[\d+\]/g,
};

class ConstantWidget extends WidgetType {
  eq() { return true; }

  toDOM() {
    const el = document.createElement("span");
    el.className = "cm-const";
    el.textContent = "const";
    return el;
  }
}

const FOLDED = { types: Decoration.replace({}), spans: Decoration.replace({}),
  meta: Decoration.replace({ widget: new ConstantWidget() }) };

/**
 * Hide type comments, span comments and/or shorten `meta[relay.Constant][N]` to `const`
 * (computed over the visible lines only).
 * @param {{types?: boolean, spans?: boolean, meta?: boolean}} hide
 */
export function hiddenText(hide) {
  const kinds = Object.keys(HIDDEN).filter((k) => hide[k]);
  if (!kinds.length) return [];
  const regexp = new RegExp(kinds.map((k) => HIDDEN[k].source).join("|"), "g");
  const decorator = new MatchDecorator({ regexp,
    decoration: (m) => FOLDED[m[0].includes("ty=") ? "types" : m[0].startsWith("meta") ? "meta" : "spans"] });
  return ViewPlugin.define((view) => ({
    decorations: decorator.createDeco(view),
    update(u) { this.decorations = decorator.updateDeco(u, this.decorations); },
  }), { decorations: (v) => v.decorations });
}

/** Soft wrap of long lines. */
export const softWrap = EditorView.lineWrapping;

const setFolds = StateEffect.define();
const unfold = StateEffect.define();

class FoldWidget extends WidgetType {
  constructor(lines, index, onOpen) {
    super();
    this.lines = lines;
    this.index = index;
    this.onOpen = onOpen;
  }

  eq(other) { return other.lines === this.lines && other.index === this.index; }

  toDOM() {
    const el = document.createElement("div");
    el.className = "cm-collapsedLines";
    el.textContent = `··· ${this.lines} unchanged lines ···`;
    el.title = "Show these lines";
    el.addEventListener("click", () => this.onOpen(this.index));
    return el;
  }

  get estimatedHeight() { return 22; }

  ignoreEvent(e) { return e instanceof MouseEvent; }
}

const foldField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    let next = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (e.is(setFolds)) next = e.value;
      if (e.is(unfold)) next = next.update({ filter: (_f, _t, d) => d.spec.index !== e.value });
    }
    return next;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/** The fold field, to add to an editor that `foldLines` folds. */
export const foldable = foldField;

/**
 * Fold line stretches of a read-only editor: [{line (0-based), n}], each replaced by a
 * "⦚ n unchanged lines ⦚" bar (click: `onOpen(index)`, then `openFold(view, index)`).
 */
export function foldLines(view, stretches, onOpen) {
  const doc = view.state.doc;
  const ranges = stretches.map(({ line, n }, index) => Decoration.replace({
    widget: new FoldWidget(n, index, onOpen), block: true, index,
  }).range(doc.line(line + 1).from, doc.line(line + n).to));
  view.dispatch({ effects: setFolds.of(Decoration.set(ranges, true)) });
}

export function openFold(view, index) {
  view.dispatch({ effects: unfold.of(index) });
}
