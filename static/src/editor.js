// CodeMirror plumbing shared by the panes: read-only Relay editors with highlight layers
// (expressions selected through the source map) and an "expression at" click/Enter hook.
import { StateEffect, StateField, EditorState } from "@codemirror/state";
import { Decoration, EditorView, keymap, lineNumbers, highlightActiveLine,
  highlightActiveLineGutter, drawSelection } from "@codemirror/view";
import { highlightSelectionMatches, search, searchKeymap } from "@codemirror/search";
import { relay } from "./relay-lang.js";

const setHighlights = StateEffect.define();

const MARKS = {
  primary: Decoration.mark({ class: "cm-hl-primary" }),
  related: Decoration.mark({ class: "cm-hl-related" }),
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
 * Paint highlights: {primary: [{from,to}], related: [{from,to}]}; scrolls to the first
 * primary range (or the first related one) when `scroll` is set.
 */
export function paintHighlights(view, { primary = [], related = [] }, scroll = false) {
  const ranges = [
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
export function relayEditorExtensions({ onPick, onEscape, label } = {}) {
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
    lineNumbers(),
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
