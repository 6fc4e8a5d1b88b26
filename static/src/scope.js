// Diff scope: the functions of a printed module, to show one of them in both panes (as
// Compiler Explorer scopes its output to a function). Globals are `def @name(...) {` at the
// left margin; fused kernels are `%N = fn (..., Primitive=1) {` blocks. A global keeps its
// name across passes; a fused kernel is named by its operator chain (and its rank among
// kernels of the same chain), since its `%N` changes whenever a pass renumbers the module.
// Pure functions (no DOM): importable by node tests.
import { splitLines } from "./linediff.js";

const GLOBAL = /^def (@[\w.]+)\(/;
const LOCAL = /^(\s*)(?:%[\w.]+ = )?fn \(/;
const CALL = /^\s*(?:%[\w.]+ = )?([A-Za-z_][\w.]*)\(/;
const LABEL_OPS = 3;

/**
 * @typedef {Object} ScopeFunction
 * @property {string} key    stable across passes: "@main", "fused:nn.conv2d,add#0"
 * @property {string} label  "@main", "fused nn.conv2d → add" (shortened for long chains)
 * @property {string} title  the full label (every operator)
 * @property {number} from   first line (0-based)
 * @property {number} to     last line (0-based, inclusive)
 */

/** The line that closes a block opened at `start` with `indent` (the first `indent}`). */
function blockEnd(lines, start, indent) {
  const close = `${indent}}`;
  for (let i = start + 1; i < lines.length; i++) if (lines[i].startsWith(close)) return i;
  return lines.length - 1;
}

/** The operators a fused kernel calls, in order (its body lines, nested ones included). */
function opsOf(lines, from, to) {
  const ops = [];
  for (let i = from + 1; i < to; i++) {
    const op = CALL.exec(lines[i])?.[1];
    if (op && op !== "fn") ops.push(op);
  }
  return ops;
}

function fusedLabel(ops, rank) {
  const shown = ops.length > LABEL_OPS ? [...ops.slice(0, LABEL_OPS), `… (${ops.length} ops)`] : ops;
  const suffix = rank ? ` [${rank + 1}]` : "";
  return { label: `fused ${shown.join(" → ") || "fn"}${suffix}`, title: `fused ${ops.join(" → ")}${suffix}` };
}

/**
 * The global functions and fused (primitive) kernels of a printed module, in text order.
 * @param {string} text
 * @returns {ScopeFunction[]}
 */
export function functionsOf(text) {
  const { lines } = splitLines(text);
  const out = [];
  const ranks = new Map();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const global = GLOBAL.exec(line);
    if (global) {
      out.push({ key: global[1], label: global[1], title: global[1], from: i, to: blockEnd(lines, i, "") });
      continue;
    }
    const local = LOCAL.exec(line);
    if (!local || !line.includes("Primitive=1")) continue;
    const to = blockEnd(lines, i, local[1]);
    const ops = opsOf(lines, i, to);
    const chain = ops.join(",");
    const rank = ranks.get(chain) ?? 0;
    ranks.set(chain, rank + 1);
    out.push({ key: `fused:${chain}#${rank}`, ...fusedLabel(ops, rank), from: i, to });
  }
  return out;
}

/**
 * The choices of the scope selector for a pair of snapshots: the functions of either side,
 * the after side's order first.
 * @param {ScopeFunction[]} before
 * @param {ScopeFunction[]} after
 */
export function scopeChoices(before, after) {
  const seen = new Set();
  return [...after, ...before].filter((f) => !seen.has(f.key) && seen.add(f.key));
}

/**
 * One side scoped to a function: its text, and the offset / first line of that text in the
 * whole module (to map positions back to the source map). A side without the function is empty.
 * @param {string} text
 * @param {ScopeFunction[]} functions
 * @param {string | null} key null: the whole module
 */
export function scopeText(text, functions, key) {
  if (key === null) return { text, offset: 0, firstLine: 0, found: true };
  const fn = functions.find((f) => f.key === key);
  if (!fn) return { text: "", offset: 0, firstLine: 0, found: false };
  const { starts } = splitLines(text);
  const offset = starts[fn.from];
  const end = starts[fn.to + 1] ?? text.length;
  return { text: text.slice(offset, end), offset, firstLine: fn.from, found: true };
}
