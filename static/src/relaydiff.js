// Relay-aware line diff: before and after are aligned by what each line computes, not by its
// text. A pass renumbers the `%N` bindings and the `meta[relay.Constant][N]` table, and drops
// the `/* ty=... */` comments InferType adds back: none of that is a change. Each line is
// reduced to its shape (binding names, constant indexes and type comments removed), the shapes
// are diffed, and the aligned pairs tell which `%N` before is which `%M` after; a pair is
// unchanged when its shapes agree and its operands refer to paired lines (and constants).
// A rewritten expression is then one changed line, not a cascade through its users.
// Pure functions: used inside the diff Web Worker, importable by node tests.
import { diffSequences, splitLines } from "./linediff.js";

const TYPE_COMMENT = / ?\/\* ty=[^*]*\*\//g;
const SPAN_COMMENT = / ?\/\* (?!ty=|values=)[^*]*\*\//g; // not the printer's values= note
const REF = /%(\d+)\b|meta\[relay\.Constant\]\[(\d+)\]/g;
const BINDING = /^\s*%(\d+) = /;
const OP = /^\s*(?:% = )?([A-Za-z_][\w.]*|fn|\(|%[\w.]+)/;

/**
 * @typedef {Object} RelayDiffOptions
 * @property {boolean} [ignoreSpans] span comments (frontend layer names) are not compared
 */

/**
 * One side, line by line: the shape key, the operands (the line each `%N` names, or a
 * constant index) and the line's own binding.
 */
function parseSide(lines, { ignoreSpans = false } = {}) {
  const defs = new Map(); // %N -> index of the line binding it (the latest: names are scoped)
  return lines.map((raw, index) => {
    let text = raw.replace(/\n$/, "").replace(TYPE_COMMENT, "");
    if (ignoreSpans) text = text.replace(SPAN_COMMENT, "");
    const own = BINDING.exec(text)?.[1] ?? null;
    const refs = [];
    const body = own === null ? text : text.replace(BINDING, (m) => m.replace(/%\d+/, "%"));
    const shape = body.replace(REF, (m, local, constant) => {
      if (constant !== undefined) {
        refs.push({ constant: Number(constant) });
        return "%";
      }
      const line = defs.get(local);
      refs.push({ line: line ?? -1, name: local });
      return "%";
    });
    if (own !== null) defs.set(own, index);
    const op = OP.exec(body)?.[1] ?? "";
    return { shape, refs, op };
  });
}

function intern(keysA, keysB) {
  const ids = new Map();
  const id = (k) => {
    let v = ids.get(k);
    if (v === undefined) ids.set(k, (v = ids.size));
    return v;
  };
  return [Int32Array.from(keysA, id), Int32Array.from(keysB, id)];
}

/**
 * The aligned sequence: [{a, b}] with a or b null for a line only one side has. Lines of
 * equal shape pair first; inside a replaced block, lines pair by operator, and what is left
 * pairs in order where both sides have the same number of lines.
 */
function align(A, B) {
  const [sa, sb] = intern(A.map((l) => l.shape), B.map((l) => l.shape));
  const out = [];
  const runs = diffSequences(sa, sb);
  for (let i = 0; i < runs.length; i++) {
    const r = runs[i];
    if (r.op === "=") {
      for (let k = 0; k < r.n; k++) out.push({ a: r.a + k, b: r.b + k });
      continue;
    }
    const next = runs[i + 1];
    const del = r.op === "-" ? r : null;
    const ins = r.op === "+" ? r : (next?.op === "+" ? next : null);
    if (del && ins) i++;
    alignBlock(A, B, del ? del.a : ins.a, del ? del.n : 0, ins ? ins.b : del.b, ins ? ins.n : 0, out);
  }
  return out;
}

function alignBlock(A, B, a0, nA, b0, nB, out) {
  if (!nA || !nB) {
    for (let k = 0; k < nA; k++) out.push({ a: a0 + k, b: null });
    for (let k = 0; k < nB; k++) out.push({ a: null, b: b0 + k });
    return;
  }
  const [oa, ob] = intern(A.slice(a0, a0 + nA).map((l) => l.op), B.slice(b0, b0 + nB).map((l) => l.op));
  const runs = diffSequences(oa, ob);
  const pending = { a: [], b: [] };
  const flush = () => {
    const paired = pending.a.length === pending.b.length;
    if (paired) pending.a.forEach((a, k) => out.push({ a, b: pending.b[k] }));
    else {
      for (const a of pending.a) out.push({ a, b: null });
      for (const b of pending.b) out.push({ a: null, b });
    }
    pending.a = [];
    pending.b = [];
  };
  for (const r of runs) {
    if (r.op === "=") {
      flush();
      for (let k = 0; k < r.n; k++) out.push({ a: a0 + r.a + k, b: b0 + r.b + k });
    } else {
      for (let k = 0; k < r.n; k++) pending[r.op === "-" ? "a" : "b"].push((r.op === "-" ? a0 + r.a : b0 + r.b) + k);
    }
  }
  flush();
}

/** Constants pair by position inside pairs of equal shape: meta index before -> after. */
function constantMap(A, B, pairs) {
  const map = new Map();
  for (const { a, b } of pairs) {
    if (a === null || b === null || A[a].shape !== B[b].shape) continue;
    A[a].refs.forEach((r, k) => {
      const o = B[b].refs[k];
      if (r.constant !== undefined && o.constant !== undefined && !map.has(r.constant)) {
        map.set(r.constant, o.constant);
      }
    });
  }
  return map;
}

/**
 * Whether a pair computes the same thing: equal shapes, operands that are paired lines or
 * paired constants. An operand whose line is gone on one side and is a constant on the
 * other was folded (FoldConstant): the user is unchanged, the removed line is the change.
 */
function samePair(la, lb, ctx) {
  if (la.shape !== lb.shape || la.refs.length !== lb.refs.length) return false;
  return la.refs.every((r, k) => {
    const o = lb.refs[k];
    const ca = r.constant !== undefined;
    const cb = o.constant !== undefined;
    if (ca && cb) return ctx.constants.get(r.constant) === o.constant;
    if (cb) return r.line >= 0 && !ctx.lineMap.has(r.line);
    if (ca) return o.line >= 0 && !ctx.pairedB.has(o.line);
    if (r.line < 0 || o.line < 0) return r.name === o.name && r.line === o.line;
    return ctx.lineMap.get(r.line) === o.line;
  });
}

/**
 * The Relay-aware diff of two printed modules.
 * Returns {changes: [{fromA,toA,fromB,toB}] (CodeMirror merge changes), added, removed, changed
 * (line counts: only after, only before, paired but different), changedLinesB: [0-based
 * line numbers of the after side that are marked], unchanged: [{a, b, n}] (the unchanged
 * stretches: n lines from 0-based line a before and b after)}.
 * @param {string} a
 * @param {string} b
 * @param {RelayDiffOptions} [options]
 */
export function relayChanges(a, b, options = {}) {
  const sa = splitLines(a);
  const sb = splitLines(b);
  const A = parseSide(sa.lines, options);
  const B = parseSide(sb.lines, options);
  const pairs = align(A, B);
  const lineMap = new Map();
  for (const { a: i, b: j } of pairs) if (i !== null && j !== null) lineMap.set(i, j);
  const ctx = { lineMap, pairedB: new Set(lineMap.values()), constants: constantMap(A, B, pairs) };
  const result = { changes: [], added: 0, removed: 0, changed: 0, changedLinesB: [], unchanged: [] };
  let block = null;
  const close = () => {
    if (block) result.changes.push(...blockChanges(sa, sb, block));
    block = null;
  };
  let nextA = 0;
  let nextB = 0;
  for (const { a: i, b: j } of pairs) {
    const same = i !== null && j !== null && samePair(A[i], B[j], ctx);
    if (same) {
      close();
      const run = result.unchanged.at(-1);
      if (run && run.a + run.n === i && run.b + run.n === j) run.n++;
      else result.unchanged.push({ a: i, b: j, n: 1 });
    } else {
      if (i !== null && j !== null) result.changed++;
      else if (i !== null) result.removed++;
      else result.added++;
      if (j !== null) result.changedLinesB.push(j);
      block ??= { aLine: nextA, bLine: nextB, nA: 0, nB: 0, pairs: [] };
      if (i !== null) block.nA++;
      if (j !== null) block.nB++;
      block.pairs.push({ a: i, b: j });
    }
    if (i !== null) nextA = i + 1;
    if (j !== null) nextB = j + 1;
  }
  close();
  return result;
}

/** A block of marked lines: per line when every line is a pair (a rewrite), else whole lines. */
function blockChanges(sa, sb, block) {
  if (block.pairs.every((p) => p.a !== null && p.b !== null)) {
    return block.pairs.map(({ a, b }) => lineChange(sa, sb, a, b));
  }
  return [{ fromA: sa.starts[block.aLine], toA: sa.starts[block.aLine + block.nA],
    fromB: sb.starts[block.bLine], toB: sb.starts[block.bLine + block.nB] }];
}

/** A changed pair of lines, trimmed to the characters that differ. */
function lineChange(sa, sb, i, j) {
  const la = sa.lines[i].replace(/\n$/, "");
  const lb = sb.lines[j].replace(/\n$/, "");
  const limit = Math.min(la.length, lb.length);
  let p = 0;
  while (p < limit && la[p] === lb[p]) p++;
  let s = 0;
  while (s < limit - p && la[la.length - 1 - s] === lb[lb.length - 1 - s]) s++;
  if (p === la.length && p === lb.length) p = s = 0; // equal text, different operands
  const fromA = sa.starts[i];
  const fromB = sb.starts[j];
  return { fromA: fromA + p, toA: fromA + Math.max(p, la.length - s),
    fromB: fromB + p, toB: fromB + Math.max(p, lb.length - s) };
}
