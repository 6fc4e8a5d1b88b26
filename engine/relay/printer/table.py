"""The printer's source map as columns: one int row per entry, strings interned once.

    table = print_ir(mod, show_types=True).source_map_table()
    table.rows          # int64 (n, 9): node_id, kind, start line, start col, end line,
                        #   end col, spans, op, ref  (kind/op index `names`, op -1 is None,
                        #   spans index `span_sets`; lines 1-based, columns 0-based)
    table.to_json()     # [SourceMapEntry dicts], exactly PrintResult.to_json()
    table.json_bytes()  # the same list as compact JSON, without building the dicts
    table.span_coverage()  # (share of computing expressions with a span, their number)
    table.qparams       # {node_id: {"role", "dtype", "shape", "values"}}: the values of the
                        #   qnn scales and zero points (a definition entry's `qparam`)

Each printed function keeps its own table (lines relative to the function), so a
module reprinted with unchanged functions only shifts lines; a snapshot stores the
table as a few flat arrays instead of one dict per entry.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from engine.ir.expr import COMPUTING_KINDS

__all__ = ["COLUMNS", "SourceMapTable"]

COLUMNS = ("node_id", "kind", "start_line", "start_col", "end_line", "end_col", "spans", "op",
           "ref")
NODE, KIND, START_LINE, START_COL, END_LINE, END_COL, SPANS, OP, REF = range(9)

_COMPUTING_NAMES = frozenset(cls.kind for cls in COMPUTING_KINDS)

_Entry = tuple[Any, ...]  # (node_id, kind, sl, sc, el, ec, spans, op, is_ref[, qparam])


class _Interner:
    """Indices of names and span sets, in first-seen order."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.spans: dict[tuple[str, ...], int] = {}

    def name(self, text: str | None) -> int:
        if text is None:
            return -1
        found = self.names.get(text)
        if found is None:
            found = self.names[text] = len(self.names)
        return found

    def span_set(self, names: tuple[str, ...]) -> int:
        found = self.spans.get(names)
        if found is None:
            found = self.spans[names] = len(self.spans)
        return found


def _first_use_order(indices: np.ndarray) -> np.ndarray:
    """The distinct non-negative values of `indices`, in order of first appearance."""
    used = indices[indices >= 0]
    values, first = np.unique(used, return_index=True)
    return values[np.argsort(first, kind="stable")]


class SourceMapTable:
    """A source map as an int64 row table plus its string tables (see module docstring)."""

    __slots__ = ("rows", "names", "span_sets", "qparams", "is_canonical")

    def __init__(self, rows: np.ndarray, names: Sequence[str],
                 span_sets: Sequence[tuple[str, ...]],
                 qparams: Mapping[int, dict[str, Any]] | None = None,
                 is_canonical: bool = False) -> None:
        if rows.ndim != 2 or rows.shape[1] != len(COLUMNS):
            raise ValueError(f"source map rows must be (n, {len(COLUMNS)}), got {rows.shape}")
        self.rows = rows
        self.names = tuple(names)
        self.span_sets = tuple(tuple(s) for s in span_sets)
        self.qparams = dict(qparams or {})
        self.is_canonical = is_canonical  # known to be its own canonical() (see there)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    # --- building -------------------------------------------------------------------------
    @classmethod
    def from_entries(cls, entries: Iterable[_Entry], line_base: int = 0) -> SourceMapTable:
        """From printer entries `(node_id, kind, sl, sc, el, ec, spans, op, is_ref)`, each
        optionally followed by its qparam dict (or None)."""
        interner = _Interner()
        name, span_set = interner.name, interner.span_set
        flat = array("q")
        qparams: dict[int, dict[str, Any]] = {}
        for nid, kind, sl, sc, el, ec, spans, op, ref, *qparam in entries:
            flat.extend((nid, name(kind), sl + line_base, sc, el + line_base, ec,
                         span_set(spans), name(op), 1 if ref else 0))
            if qparam and qparam[0]:
                qparams[nid] = qparam[0]
        rows = np.frombuffer(flat, dtype=np.int64).reshape(-1, len(COLUMNS)).copy() \
            if flat else np.zeros((0, len(COLUMNS)), dtype=np.int64)
        return cls(rows, list(interner.names), list(interner.spans), qparams)

    @classmethod
    def from_json(cls, entries: Iterable[dict[str, Any]]) -> SourceMapTable:
        """From protocol dicts (`{"node_id", "kind", "start", "end", "spans", "op"}`)."""
        return cls.from_entries(
            (int(e["node_id"]), str(e.get("kind", "")), int(e["start"][0]), int(e["start"][1]),
             int(e["end"][0]), int(e["end"][1]), tuple(str(s) for s in e.get("spans") or ()),
             e.get("op"), bool(e.get("ref", False)), e.get("qparam")) for e in entries)

    @classmethod
    def concat(cls, parts: Sequence[tuple[int, SourceMapTable]]) -> SourceMapTable:
        """Tables placed at line offsets, in order, as one table."""
        if len(parts) == 1:
            offset, table = parts[0]
            return table.shifted(offset)
        interner = _Interner()
        chunks = [table._remapped(offset, interner) for offset, table in parts]
        rows = np.concatenate(chunks) if chunks else np.zeros((0, len(COLUMNS)), np.int64)
        qparams = {k: v for _, table in parts for k, v in table.qparams.items()}
        # Canonical parts in text order intern their strings in first-use order.
        return cls(rows, list(interner.names), list(interner.spans), qparams,
                   all(table.is_canonical for _, table in parts))

    def shifted(self, lines: int) -> SourceMapTable:
        """The same entries `lines` lines further down."""
        rows = self.rows.copy()
        if lines:
            rows[:, START_LINE] += lines
            rows[:, END_LINE] += lines
        return SourceMapTable(rows, self.names, self.span_sets, self.qparams, self.is_canonical)

    def canonical(self) -> SourceMapTable:
        """The same map with its strings in first-use order (as `from_json` builds them) and
        unused ones dropped, so equal maps have equal tables, byte for byte (itself when it
        is so already: a printed table is made canonical once, and shifting lines or
        concatenating canonical tables keeps it so)."""
        if self.is_canonical:
            return self
        rows = self.rows.copy()
        names = _first_use_order(rows[:, [KIND, OP]].ravel())
        name_map = np.full(len(self.names) + 1, -1, dtype=np.int64)
        name_map[names] = np.arange(names.size)
        rows[:, KIND] = name_map[rows[:, KIND]]
        rows[:, OP] = name_map[rows[:, OP]]
        sets = _first_use_order(rows[:, SPANS])
        set_map = np.zeros(len(self.span_sets) + 1, dtype=np.int64)
        set_map[sets] = np.arange(sets.size)
        rows[:, SPANS] = set_map[rows[:, SPANS]]
        return SourceMapTable(rows, [self.names[i] for i in names.tolist()],
                              [self.span_sets[i] for i in sets.tolist()], self.qparams,
                              is_canonical=True)

    def without_refs(self) -> SourceMapTable:
        return SourceMapTable(self.rows[self.rows[:, REF] == 0], self.names, self.span_sets,
                              self.qparams)

    def _remapped(self, offset: int, interner: _Interner) -> np.ndarray:
        rows = self.rows.copy()
        rows[:, START_LINE] += offset
        rows[:, END_LINE] += offset
        names = np.array([interner.name(n) for n in self.names] + [-1], dtype=np.int64)
        spans = np.array([interner.span_set(s) for s in self.span_sets] or [0], dtype=np.int64)
        rows[:, KIND] = names[rows[:, KIND]]
        rows[:, OP] = names[rows[:, OP]]  # -1 picks the trailing -1: None stays None
        rows[:, SPANS] = spans[rows[:, SPANS]]
        return rows

    # --- reading ----------------------------------------------------------------------------
    def to_json(self) -> list[dict[str, Any]]:
        """The protocol's SourceMapEntry dicts, in order (uses carry `"ref": true`, a qnn
        scale's or zero point's definition its `"qparam"`)."""
        names, span_sets, qparams = self.names, self.span_sets, self.qparams
        out = []
        for nid, kind, sl, sc, el, ec, spans, op, ref in self.rows.tolist():
            entry = {"node_id": nid, "kind": names[kind], "start": [sl, sc], "end": [el, ec],
                     "spans": list(span_sets[spans]), "op": names[op] if op >= 0 else None}
            if ref:
                entry["ref"] = True
            elif nid in qparams:
                entry["qparam"] = qparams[nid]
            out.append(entry)
        return out

    def json_bytes(self) -> bytes:
        """`json.dumps(self.to_json(), separators=(",", ":"))`, byte for byte, but built
        from pre-encoded strings (a 50,000-line module has ~130,000 entries)."""
        def enc(value: Any) -> str:
            return json.dumps(value, separators=(",", ":"))

        kinds = [enc(n) for n in self.names]
        ops = [enc(n) for n in self.names] + ["null"]
        spans = [enc(list(s)) for s in self.span_sets]
        form = '{"node_id":%d,"kind":%s,"start":[%d,%d],"end":[%d,%d],"spans":%s,"op":%s%s}'
        tails = ("", ',"ref":true')
        notes = {nid: ',"qparam":' + enc(q) for nid, q in self.qparams.items()}
        parts = [form % (nid, kinds[kind], sl, sc, el, ec, spans[sp], ops[op],
                         tails[ref] if ref or nid not in notes else notes[nid])
                 for nid, kind, sl, sc, el, ec, sp, op, ref in self.rows.tolist()]
        return ("[" + ",".join(parts) + "]").encode()

    def node_ids(self) -> np.ndarray:
        return self.rows[:, NODE]

    def nodes_of_layers(self, layers: Iterable[str]) -> dict[str, frozenset[int]]:
        """For each layer name, the ids of the printed expressions (definitions, not uses of
        a bound name) whose spans name it."""
        defs = self.rows[self.rows[:, REF] == 0]
        found: dict[str, frozenset[int]] = {}
        for layer in layers:
            sets = np.array([layer in s for s in self.span_sets] + [False])
            found[layer] = frozenset(np.unique(defs[sets[defs[:, SPANS]], NODE]).tolist())
        return found

    def span_coverage(self) -> tuple[float, int]:
        """(fraction of the printed computing expressions that carry a span, their number),
        counting as `relay.analysis.span_coverage` does (`COMPUTING_KINDS`): each node
        once however often it is printed, uses of a bound name (refs) not at all."""
        counted = np.array([n in _COMPUTING_NAMES for n in self.names] + [False])
        has_span = np.array([bool(s) for s in self.span_sets] + [False])
        defs = self.rows[self.rows[:, REF] == 0]
        defs = defs[counted[defs[:, KIND]]]
        _, first = np.unique(defs[:, NODE], return_index=True)
        total = int(first.size)
        spanned = int(has_span[defs[first, SPANS]].sum())
        return (spanned / total if total else 1.0), total

    # --- bytes ------------------------------------------------------------------------------
    def columns_bytes(self) -> bytes:
        """The rows column by column, little-endian int64 (compresses well)."""
        return np.ascontiguousarray(self.rows.T, dtype="<i8").tobytes()

    @classmethod
    def from_columns_bytes(cls, raw: bytes, names: Sequence[str],
                           span_sets: Sequence[Sequence[str]],
                           qparams: Mapping[int, dict[str, Any]] | None = None
                           ) -> SourceMapTable:
        columns = np.frombuffer(raw, dtype="<i8").reshape(len(COLUMNS), -1)
        return cls(columns.T.astype(np.int64), names, [tuple(s) for s in span_sets], qparams)
