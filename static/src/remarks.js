// Optimization remarks in a Relay editor: a gutter marker at the line of each expression a
// pass remarked on (✗ missed, ✓ applied, • analysis) and that line marked at its left edge,
// both titled with the remarks (the line keeps its width: nothing is added to the text).
// Clicking a marker selects the expression (`onPick(pos)`).
import { RangeSet, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, GutterMarker, gutter } from "@codemirror/view";

const setRemarks = StateEffect.define();
const GLYPH = { missed: "✗", applied: "✓", analysis: "•" };
const RANK = { missed: 0, applied: 1, analysis: 2 };

/** The kind a line shows: missed before applied before analysis. */
const lineKind = (remarks) => remarks.map((r) => r.kind).sort((a, b) => RANK[a] - RANK[b])[0];

/** One line of text per remark: "missed [pattern] FuseOps: nn.relu not fused: …". */
export const remarkText = (r) => `${r.kind} [${r.rule}] ${r.pass}: ${r.message}`;

class RemarkMarker extends GutterMarker {
  constructor(remarks, from) {
    super();
    this.remarks = remarks;
    this.from = from;
    this.kind = lineKind(remarks);
  }

  eq(other) { return other.remarks === this.remarks; }

  toDOM() {
    const el = document.createElement("span");
    el.className = `cm-remark cm-remark-${this.kind}`;
    el.textContent = GLYPH[this.kind] ?? "•";
    el.title = this.remarks.map(remarkText).join("\n");
    el.dataset.testid = "remark-marker";
    el.dataset.kind = this.kind;
    el.dataset.nodes = [...new Set(this.remarks.map((r) => r.node_id))].join(",");
    return el;
  }
}

const EMPTY = { markers: RangeSet.empty, lines: Decoration.none };

const remarkField = StateField.define({
  create: () => EMPTY,
  update(value, tr) {
    let next = tr.docChanged ? { markers: value.markers.map(tr.changes), lines: value.lines.map(tr.changes) } : value;
    for (const effect of tr.effects) if (effect.is(setRemarks)) next = effect.value;
    return next;
  },
  provide: (field) => EditorView.decorations.from(field, (v) => v.lines),
});

/** Extensions of an editor that shows remarks; `onPick(pos)` on a marker click. */
export function remarkGutter(onPick) {
  return [
    remarkField,
    gutter({
      class: "cm-remark-gutter",
      markers: (view) => view.state.field(remarkField).markers,
      domEventHandlers: {
        click(view, line) {
          let picked = null;
          view.state.field(remarkField).markers.between(line.from, line.from, (_f, _t, m) => { picked = m; });
          if (picked && onPick) onPick(picked.from);
          return picked !== null;
        },
      },
    }),
  ];
}

/**
 * Where remarks go in a shown text: [{from, line, remarks}] per line, from the node's
 * definition in the source index (`offset`: where the shown text starts in the module).
 * @param {import("./sourcemap.js").SourceIndex} index
 * @param {Array} remarks RemarkEntry[]
 */
export function placeRemarks(index, remarks, offset, length) {
  const byLine = new Map();
  for (const r of remarks) {
    const entries = index.entriesOfNode(r.node_id);
    const entry = entries.find((e) => !e.ref) ?? entries[0];
    if (!entry) continue;
    const from = entry.from - offset;
    if (from < 0 || from > length) continue;
    const line = index.lineOf(entry.from);
    const placed = byLine.get(line) ?? { from, line, remarks: [] };
    placed.from = Math.min(placed.from, from);
    placed.remarks.push(r);
    byLine.set(line, placed);
  }
  return [...byLine.values()].sort((a, b) => a.from - b.from);
}

/** Show `placed` remarks (from placeRemarks) in the editor. */
export function paintRemarks(view, placed) {
  const doc = view.state.doc;
  const markers = [];
  const lines = [];
  for (const p of placed) {
    const line = doc.lineAt(Math.min(p.from, doc.length));
    markers.push(new RemarkMarker(p.remarks, p.from).range(line.from));
    const kind = lineKind(p.remarks);
    lines.push(Decoration.line({ class: `cm-remark-line cm-remark-line-${kind}`,
      attributes: { title: p.remarks.map(remarkText).join("\n"), "data-remark-kind": kind } }).range(line.from));
  }
  view.dispatch({ effects: setRemarks.of({ markers: RangeSet.of(markers, true), lines: Decoration.set(lines, true) }) });
}
