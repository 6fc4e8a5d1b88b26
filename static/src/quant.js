// Quantization in the IR panes: integer dtypes marked where they appear, a hover card on
// any expression (its type; a qnn scale's or zero point's every value, from the source
// map's `qparam`), and the numerics check's error in quantization steps (LSBs).
import { Decoration, MatchDecorator, ViewPlugin, hoverTooltip } from "@codemirror/view";
import { h } from "./dom.js";

/** Integer dtypes: the ones a quantization boundary moves between. */
const INT_DTYPE = /\bu?int(?:4|8|16|32|64)\b/g;
/**
 * The printer's type comment of an expression (`/* ty=Tensor[(1, 4), int8] *\/`): its
 * trailer, at the end of its text, before its span comment if any (the operands' own type
 * comments come earlier; a node without a checked type has none).
 */
const OWN_TYPE = / \/\* ty=((?:(?!\*\/).)*?) \*\/(?: \/\*(?:(?!\*\/).)*\*\/)*$/s;
/** At most this much of an entry's text is searched for its type comment (its tail). */
const TYPE_TAIL = 4000;
/** Values a card lists before "… N more" (the list scrolls). */
const MAX_LISTED = 4096;

/** "0 LSB", "1 LSB", "2.5 LSB". */
export function lsbText(steps) {
  return `${Number(steps.toPrecision(3))} LSB`;
}

/** The title of a pass's numerics mark: float error, and in steps for a quantized model. */
export function numericsTitle(n) {
  const lines = [n.ok ? "numerics ok" : "numerics drifted", `max |err| ${n.max_abs_err}`];
  if (n.max_lsb_err !== undefined && n.max_lsb_err !== null) {
    lines.push(`max error of the quantized outputs: ${lsbText(n.max_lsb_err)} (ok within 1)`);
  }
  if (n.error) lines.push(n.error);
  return lines.join("\n");
}

const dtypeDecorator = new MatchDecorator({
  regexp: INT_DTYPE,
  decoration: (m) => Decoration.mark({ class: `cm-dtype cm-dtype-${m[0]}`, attributes: { "data-dtype": m[0] } }),
});

/** Marks every integer dtype in the text (types, type comments), one class per dtype. */
export const dtypeMarks = ViewPlugin.define((view) => ({
  decorations: dtypeDecorator.createDeco(view),
  update(u) { this.decorations = dtypeDecorator.updateDeco(u, this.decorations); },
}), { decorations: (v) => v.decorations });

/** The definition entry of an entry's node (a use `%3` points at its `%3 = ...`). */
function definition(index, entry) {
  if (!entry.ref) return entry;
  return index.entriesOfNode(entry.node_id).find((e) => !e.ref) ?? entry;
}

/**
 * The type of an expression as printed: a variable's annotation, else the type comment that
 * ends its definition (null when it was printed without one).
 * @param {import("./sourcemap.js").SourceIndex} index
 * @param {(from: number, to: number) => string} slice text of the whole module
 */
export function typeOfEntry(index, slice, entry) {
  const def = definition(index, entry);
  const text = slice(Math.max(def.from, def.to - TYPE_TAIL), def.to);
  if (def.kind === "var") {
    const m = text.match(/^%[^:\s]+: (.*?)(?: \/\*.*)?$/s);
    if (m) return m[1];
  }
  return text.match(OWN_TYPE)?.[1] ?? null;
}

/** The qparam (every value of a scale or zero point) of the entry's node, if it has one. */
export function qparamOf(index, entry) {
  return definition(index, entry).qparam ?? null;
}

function shapeText(shape) {
  return `[${shape.join(", ")}]`;
}

/** Marks the integer dtypes of a plain text (a type) as the editor does. */
function typeLine(text) {
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(INT_DTYPE)) {
    parts.push(text.slice(last, m.index), h(`span.cm-dtype.cm-dtype-${m[0]}`, { dataset: { dtype: m[0] } }, m[0]));
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return h("code.quant-type", { "data-testid": "hover-type" }, parts);
}

function valuesList(qparam) {
  const shown = qparam.values.slice(0, MAX_LISTED);
  return h("ol.quant-values", { "data-testid": "hover-values", start: 0 },
    shown.map((v) => h("li", {}, String(v))),
    qparam.values.length > shown.length ? h("li.hint", {}, `… ${qparam.values.length - shown.length} more`) : null);
}

/** The hover card of an entry: what it is, its type, and a qparam's values. */
export function hoverCard(entry, type, qparam) {
  const head = qparam ? qparam.role : entry.op ?? entry.kind;
  return h("div.quant-card", { "data-testid": "hover-card" },
    h("div.quant-head", {}, h("strong", {}, head),
      qparam ? h("span.quant-shape", {}, ` ${qparam.dtype}${shapeText(qparam.shape)}`) : null),
    type ? typeLine(type) : null,
    qparam ? valuesList(qparam) : null);
}

/**
 * @typedef {Object} QuantSource what an IR editor shows
 * @property {import("./sourcemap.js").SourceIndex} index the whole module's source index
 * @property {string} text the whole module's text
 * @property {number} offset where the editor's text starts in it (a scoped diff shows one function)
 */

/**
 * The hover card extension of an IR editor; `getSource()` returns its QuantSource (null
 * until the source map is loaded).
 * @param {() => QuantSource | null} getSource
 */
export function quantHover(getSource) {
  return hoverTooltip((view, pos) => {
    const source = getSource();
    if (!source) return null;
    const { index, text, offset } = source;
    const entry = index.entryAt(pos + offset);
    if (!entry) return null;
    const qparam = qparamOf(index, entry);
    const type = typeOfEntry(index, (from, to) => text.slice(from, to), entry);
    if (!qparam && !type) return null;
    const length = view.state.doc.length;
    return { pos: Math.max(0, entry.from - offset), end: Math.min(length, entry.to - offset), above: true,
      create: () => ({ dom: hoverCard(entry, type, qparam) }) };
  }, { hoverTime: 200 });
}

/**
 * The extensions an IR pane adds for quantized models.
 * @param {() => QuantSource | null} getSource
 */
export function quantExtensions(getSource) {
  return [dtypeMarks, quantHover(getSource)];
}
