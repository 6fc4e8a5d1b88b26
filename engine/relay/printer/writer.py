"""Line writer of the printer: text plus, for every printed expression, where it is.

Positions are (line, column) with a 0-based line relative to the block being
written and a 0-based column; the module printer shifts lines when it places
a block. Entries go straight into one flat list of ints (nine each, the columns
of `printer.table.SourceMapTable`), with kinds, op names and spans interned, so
a 100k-node program leaves no per-entry containers for the garbage collector to
walk; `table()` turns them into an int64 table in text order.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from engine.ir.expr import Call, Expr
from engine.ir.op import Op
from engine.ir.span import SpanLike
from engine.relay.printer.format import span_names as _names_of_span
from engine.relay.printer.format import span_trailer as _span_trailer
from engine.relay.printer.format import type_trailer as _type_trailer
from engine.relay.printer.retype import TypeSlots
from engine.relay.printer.table import (
    COLUMNS,
    END_COL,
    END_LINE,
    SPANS,
    START_COL,
    START_LINE,
    SourceMapTable,
)

INDENT = "  "


def op_name(node: Expr) -> str | None:
    if isinstance(node, Call):
        return node.op.name if isinstance(node.op, Op) else None
    if isinstance(node, Op):
        return node.name
    return None


def span_names(node: Expr) -> tuple[str, ...]:
    return _names_of_span(node.span)


class Writer:
    """Accumulates lines; `begin`/`end` bracket a printed expression, `ref` a use of one."""

    __slots__ = ("lines", "parts", "col", "depth", "flat", "origin_ids", "origin_ends",
                 "_starts", "_open", "_closed", "_names", "_spans", "_span_objs", "notes",
                 "slots", "_ids", "_kind_op")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.col = 0
        self.depth = 0
        # Plain lists while printing (a list takes a tuple of ints several times faster
        # than an int array); table() and origins() hand out compact arrays.
        self.flat: list[int] = []
        self.origin_ids: list[int] = []
        self.origin_ends: list[int] = []
        self._starts: list[int] = []
        self._open: list[int] = []
        self._closed = 0
        self._names: dict[str | None, int] = {None: -1}
        self._spans: dict[int, int] = {}
        self._span_objs: list[SpanLike] = []
        self.notes: dict[int, dict[str, Any]] = {}
        self.slots = TypeSlots()
        self._ids: dict[Expr, tuple[int, int, int]] = {}
        self._kind_op: dict[object, tuple[int, int]] = {}

    def _start_line(self) -> None:
        pad = INDENT * self.depth
        self.parts.append(pad)
        self.col = len(pad)

    def write(self, text: str) -> None:
        if not self.parts:
            self._start_line()
        self.parts.append(text)
        self.col += len(text)

    def newline(self) -> None:
        self.lines.append("".join(self.parts))
        self.parts = []
        self.col = 0
        if self._starts:
            self.origin_ids.extend(self._starts)
            self._starts = []
        elif self._closed:
            self.origin_ids.append(self._closed)
        elif self._open:
            self.origin_ids.append(self._open[-1])
        self.origin_ends.append(len(self.origin_ids))
        self._closed = 0

    def begin(self, node: Expr, text: str = "") -> tuple[int, int]:
        """Open `node`'s entry here, and write `text` (its first words) after the start."""
        if not self.parts:
            self._start_line()
        self._starts.append(node.node_id)
        self._open.append(node.node_id)
        start = (len(self.lines), self.col)
        if text:
            self.parts.append(text)
            self.col += len(text)
        return start

    def end(self, node: Expr, start: tuple[int, int]) -> None:
        self._open.pop()
        self._closed = node.node_id
        kind, span, op = self._ids.get(node) or self._interned(node)
        self.flat.extend((node.node_id, kind, start[0], start[1], len(self.lines), self.col,
                          span, op, 0))

    def ref(self, node: Expr, text: str) -> None:
        if not self.parts:
            self._start_line()
        line, col = len(self.lines), self.col
        self.parts.append(text)
        self.col = end = col + len(text)
        kind, span, op = self._ids.get(node) or self._interned(node)
        self.flat.extend((node.node_id, kind, line, col, line, end, span, op, 1))

    def atom(self, node: Expr, text: str, show_types: bool) -> None:
        """`node` whole, as `text` and its trailers: `begin`, `write`, `trailers`, `end`."""
        if not self.parts:
            self._start_line()
        line, col = len(self.lines), self.col
        self._starts.append(node.node_id)
        self.parts.append(text)
        self.col += len(text)
        self.trailers(node, show_types)
        self._closed = node.node_id
        kind, span, op = self._ids.get(node) or self._interned(node)
        self.flat.extend((node.node_id, kind, line, col, line, self.col, span, op, 0))

    def trailers(self, node: Expr, show_types: bool) -> None:
        """What follows `node`'s own text: with `show_types`, its ` /* ty=... */` if it has
        a type and its type slot either way (see `printer.retype`); then its span comment."""
        parts = self.parts
        if not parts:
            self._start_line()
        if show_types:
            ty = node._checked_type
            slots = self.slots
            slots.nodes.append(node)
            slots.types.append(ty)
            if ty is None:
                slots.pos.extend((len(self.lines), self.col, 0))
            else:
                text = _type_trailer(ty)
                slots.pos.extend((len(self.lines), self.col, len(text)))
                parts.append(text)
                self.col += len(text)
        comment = _span_trailer(node.span)
        if comment:
            parts.append(comment)
            self.col += len(comment)

    def end_line(self, text: str) -> None:
        """`text` (a `;`) and the end of the line."""
        self.parts.append(text)
        self.newline()

    def note(self, node: Expr, qparam: dict[str, Any]) -> None:
        """Values the source map carries for `node` (a qnn call's scale or zero point)."""
        self.notes[node.node_id] = qparam

    def finish(self) -> None:
        if self.parts:
            self.newline()

    # --- interning ----------------------------------------------------------------------
    def _interned(self, node: Expr) -> tuple[int, int, int]:
        """`node`'s kind, span and op as table indices, once per node (a bound node has
        one entry for its definition and one per use)."""
        key = node.op if isinstance(node, Call) else type(node)  # what decides kind and op
        kind_op = self._kind_op.get(key)
        if kind_op is None:
            kind_op = self._kind_op[key] = (self._name(node.kind), self._name(op_name(node)))
        found = self._ids[node] = (kind_op[0], self._span(node.span), kind_op[1])
        return found

    def _name(self, text: str | None) -> int:
        found = self._names.get(text)
        if found is None:
            found = self._names[text] = len(self._names) - 1
        return found

    def _span(self, span: SpanLike) -> int:
        # By identity while printing (the nodes keep their spans alive); equal span sets
        # are merged once, in table().
        found = self._spans.get(id(span))
        if found is None:
            found = self._spans[id(span)] = len(self._span_objs)
            self._span_objs.append(span)
        return found

    def table(self) -> SourceMapTable:
        """The entries in text order: by start, then the enclosing (longer) range first."""
        rows = np.fromiter(self.flat, dtype=np.int64, count=len(self.flat)).reshape(
            -1, len(COLUMNS))
        order = np.lexsort((-rows[:, END_COL], -rows[:, END_LINE], rows[:, START_COL],
                            rows[:, START_LINE]))
        rows = rows[order]
        sets: dict[tuple[str, ...], int] = {}
        remap = np.array([sets.setdefault(_names_of_span(s), len(sets))
                          for s in self._span_objs] or [0], dtype=np.int64)
        rows[:, SPANS] = remap[rows[:, SPANS]]
        names = [n for n in self._names if n is not None]
        return SourceMapTable(rows, names, list(sets), self.notes).canonical()

    def origins(self) -> tuple[array[int], array[int]]:
        """Per line, the ids of the nodes on it: flat ids and each line's end offset."""
        return array("q", self.origin_ids), array("q", self.origin_ends)
