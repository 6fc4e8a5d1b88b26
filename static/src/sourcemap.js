// Source-map queries over one snapshot: which expression is at a position, and which
// expressions share a node id or a span (frontend layer name) with a selection.
// SourceMapEntry: {node_id, kind, start: [line, col], end: [line, col], spans: [str], op}
// (1-based lines, 0-based columns, end exclusive). Offsets are computed from the text's own
// line starts (the same offsets as the CodeMirror document of that text), and the lookup
// tables are built on first use, so a big snapshot costs nothing until it is clicked.
import { api } from "./api.js";
import { LruCache } from "./lru.js";

/** Entries longer than this many lines are highlighted on their first line only. */
const MAX_HIGHLIGHT_LINES = 3;

/** Offsets of the first character of every line (plus the text length at the end). */
export function lineStarts(text) {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  starts.push(text.length);
  return Int32Array.from(starts);
}

export class SourceIndex {
  /**
   * @param {number} snapshotId
   * @param {string} text
   * @param {Array} sourceMap
   */
  constructor(snapshotId, text, sourceMap) {
    this.snapshotId = snapshotId;
    this.starts = lineStarts(text);
    this.lines = this.starts.length - 1;
    this.length = text.length;
    this.sourceMap = sourceMap ?? [];
    this.tables = null;
  }

  /** The located entries and lookup tables, built once. */
  get t() {
    if (!this.tables) this.tables = this.build();
    return this.tables;
  }

  build() {
    const entries = [];
    const byLine = new Map(); // first line -> entries starting on it (single-line ones)
    const multiLine = [];
    for (const raw of this.sourceMap) {
      const e = this.locate(raw);
      if (!e) continue;
      entries.push(e);
      if (e.start[0] === e.end[0]) push(byLine, e.start[0], e);
      else multiLine.push(e);
    }
    const byNode = new Map();
    const bySpan = new Map();
    for (const e of entries) {
      push(byNode, e.node_id, e);
      for (const name of e.spans ?? []) push(bySpan, name, e);
    }
    return { entries, byLine, multiLine, byNode, bySpan };
  }

  locate(entry) {
    const from = this.offset(entry.start);
    const to = this.offset(entry.end);
    if (from === null || to === null || to < from) return null;
    return { ...entry, from, to };
  }

  offset(pos) {
    const [line, col] = pos ?? [];
    if (!Number.isInteger(line) || line < 1) return null;
    if (line > this.lines) return this.length;
    const from = this.starts[line - 1];
    const lineEnd = Math.max(from, this.starts[line] - (line < this.lines ? 1 : 0));
    return Math.min(from + Math.max(0, col), lineEnd);
  }

  /** 1-based line of an offset. */
  lineOf(pos) {
    let lo = 0;
    let hi = this.lines - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  /** The innermost (shortest) expression whose range contains `pos`. */
  entryAt(pos) {
    const { byLine, multiLine } = this.t;
    let best = null;
    const consider = (e) => {
      if (e.from <= pos && pos < e.to && (!best || e.to - e.from < best.to - best.from)) best = e;
    };
    for (const e of byLine.get(this.lineOf(pos)) ?? []) consider(e);
    if (!best) for (const e of multiLine) consider(e);
    return best;
  }

  /** Every entry of a node id (a node printed once usually has one entry). */
  entriesOfNode(nodeId) {
    return this.t.byNode.get(nodeId) ?? [];
  }

  /** Every entry carrying at least one of `spans`, excluding `exceptNode`. */
  entriesWithSpans(spans, exceptNode = null) {
    const seen = new Set();
    const out = [];
    for (const name of spans) {
      for (const e of this.t.bySpan.get(name) ?? []) {
        if (e.node_id === exceptNode || seen.has(e)) continue;
        seen.add(e);
        out.push(e);
      }
    }
    return out;
  }

  /** The range to paint for an entry: long entries (functions) paint their first line. */
  paintRange(e) {
    const first = this.lineOf(e.from);
    const last = this.lineOf(Math.max(e.from, e.to - 1));
    if (last - first + 1 > MAX_HIGHLIGHT_LINES) {
      const lineEnd = this.starts[first] - (first < this.lines ? 1 : 0);
      return { from: e.from, to: Math.max(e.from, lineEnd) };
    }
    return { from: e.from, to: e.to };
  }

  /** All distinct layer names mentioned by the snapshot. */
  layerNames() {
    return [...this.t.bySpan.keys()];
  }
}

function push(map, key, value) {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Indexes of recently shown snapshots (weighed by their number of entries). */
const indexes = new LruCache(2e6, (index) => Math.max(1, index.sourceMap.length));

/** The SourceIndex of a snapshot: its text and source map, fetched once. */
export function sourceIndexOf(snapshotId) {
  return indexes.get(snapshotId, async () => {
    const [{ text }, sourceMap] = await Promise.all([api.snapshotText(snapshotId),
      api.snapshotMap(snapshotId)]);
    return new SourceIndex(snapshotId, text, sourceMap);
  });
}

/**
 * What to highlight in one snapshot for a selection.
 * selection: {nodeId, spans} (an expression) or {layer} (a layer name).
 * Returns {primary: [range], related: [range]} sorted by position.
 */
export function highlightsFor(index, selection) {
  if (!index || !selection) return { primary: [], related: [] };
  if (selection.layer) {
    const related = index.entriesWithSpans([selection.layer]);
    return { primary: [], related: sortRanges(related.map((e) => index.paintRange(e))) };
  }
  const primary = index.entriesOfNode(selection.nodeId).map((e) => index.paintRange(e));
  const related = index.entriesWithSpans(selection.spans ?? [], selection.nodeId)
    .map((e) => index.paintRange(e));
  return { primary: sortRanges(primary), related: sortRanges(related) };
}

function sortRanges(ranges) {
  return ranges.filter((r) => r.to > r.from).sort((a, b) => a.from - b.from || a.to - b.to);
}
