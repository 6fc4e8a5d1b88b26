"""Line writer of the printer: text plus, for every printed expression, where it is.

Positions are (line, column) with a 0-based line relative to the block being
written and a 0-based column; the module printer shifts lines when it places
a block. An entry is a plain tuple (cheap for 100k-node programs):
`(node_id, kind, start_line, start_col, end_line, end_col, span_names, op_name, is_ref)`.
"""

from __future__ import annotations

from engine.ir.expr import Call, Expr
from engine.ir.op import Op
from engine.relay.printer_format import span_names as _names_of_span

Entry = tuple[int, str, int, int, int, int, tuple[str, ...], "str | None", bool]

INDENT = "  "


def op_name(node: Expr) -> str | None:
    if isinstance(node, Call) and isinstance(node.op, Op):
        return node.op.name
    if isinstance(node, Op):
        return node.name
    return None


def span_names(node: Expr) -> tuple[str, ...]:
    return _names_of_span(node.span)


class Writer:
    """Accumulates lines; `begin`/`end` bracket a printed expression, `ref` a use of one."""

    __slots__ = ("lines", "parts", "col", "depth", "entries", "origins", "_starts", "_open",
                 "_closed")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.col = 0
        self.depth = 0
        self.entries: list[Entry] = []
        self.origins: list[tuple[int, ...]] = []
        self._starts: list[int] = []
        self._open: list[int] = []
        self._closed = 0

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
            self.origins.append(tuple(self._starts))
            self._starts = []
        elif self._closed:
            self.origins.append((self._closed,))
        else:
            self.origins.append((self._open[-1],) if self._open else ())
        self._closed = 0

    def begin(self, node: Expr) -> tuple[int, int]:
        if not self.parts:
            self._start_line()
        self._starts.append(node.node_id)
        self._open.append(node.node_id)
        return (len(self.lines), self.col)

    def end(self, node: Expr, start: tuple[int, int]) -> None:
        self._open.pop()
        self._closed = node.node_id
        self.entries.append((node.node_id, node.kind, start[0], start[1], len(self.lines),
                             self.col, span_names(node), op_name(node), False))

    def ref(self, node: Expr, text: str) -> None:
        if not self.parts:
            self._start_line()
        line, col = len(self.lines), self.col
        self.parts.append(text)
        self.col += len(text)
        self.entries.append((node.node_id, node.kind, line, col, line, self.col,
                             span_names(node), op_name(node), True))

    def finish(self) -> None:
        if self.parts:
            self.newline()
