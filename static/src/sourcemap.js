// Source-map queries over one snapshot: which expression is at a position, and which
// expressions share a node id or a span (frontend layer name) with a selection.
// SourceMapEntry: {node_id, kind, start: [line, col], end: [line, col], spans: [str], op}
// (1-based lines, 0-based columns, end exclusive).

/** Entries longer than this many lines are highlighted on their first line only. */
const MAX_HIGHLIGHT_LINES = 3;

export class SourceIndex {
  /**
   * @param {{id:number, text:string, source_map:Array}} snapshot
   * @param {import("@codemirror/state").Text} doc the CodeMirror document of the text
   */
  constructor(snapshot, doc) {
    this.snapshotId = snapshot.id;
    this.doc = doc;
    this.entries = (snapshot.source_map ?? []).map((e) => this.locate(e)).filter(Boolean);
    this.byNode = groupBy(this.entries, (e) => [e.node_id]);
    this.bySpan = groupBy(this.entries, (e) => e.spans ?? []);
  }

  locate(entry) {
    const from = this.offset(entry.start);
    const to = this.offset(entry.end);
    if (from === null || to === null || to < from) return null;
    return { ...entry, from, to };
  }

  offset([line, col]) {
    if (!Number.isInteger(line) || line < 1) return null;
    if (line > this.doc.lines) return this.doc.length;
    const l = this.doc.line(line);
    return Math.min(l.from + Math.max(0, col), l.to);
  }

  /** The innermost (shortest) expression whose range contains `pos`. */
  entryAt(pos) {
    let best = null;
    for (const e of this.entries) {
      if (e.from <= pos && pos < e.to && (!best || e.to - e.from < best.to - best.from)) best = e;
    }
    return best;
  }

  /** Every entry of a node id (a node printed once usually has one entry). */
  entriesOfNode(nodeId) {
    return this.byNode.get(nodeId) ?? [];
  }

  /** Every entry carrying at least one of `spans`, excluding `exceptNode`. */
  entriesWithSpans(spans, exceptNode = null) {
    const seen = new Set();
    const out = [];
    for (const name of spans) {
      for (const e of this.bySpan.get(name) ?? []) {
        if (e.node_id === exceptNode || seen.has(e)) continue;
        seen.add(e);
        out.push(e);
      }
    }
    return out;
  }

  /** The range to paint for an entry: long entries (functions) paint their first line. */
  paintRange(e) {
    const first = this.doc.lineAt(e.from);
    const last = this.doc.lineAt(Math.max(e.from, e.to - 1));
    if (last.number - first.number + 1 > MAX_HIGHLIGHT_LINES) {
      return { from: e.from, to: Math.max(e.from, first.to) };
    }
    return { from: e.from, to: e.to };
  }

  /** All distinct layer names mentioned by the snapshot. */
  layerNames() {
    return [...this.bySpan.keys()];
  }
}

function groupBy(items, keysOf) {
  const map = new Map();
  for (const item of items) {
    for (const key of keysOf(item)) {
      if (!map.has(key)) map.set(key, []);
      map.get(key).push(item);
    }
  }
  return map;
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
