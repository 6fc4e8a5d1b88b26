"""Re-typing a printed block: new type trailers spliced in, instead of printing again.

Type inference fills `checked_type` in place, so the module after an `InferType` holds
the very objects it was given and prints to the same text except for its
`/* ty=... */` trailers. The printer records, while it prints with types, a *type
slot* per trailer it writes or would write: the node, where the trailer goes
(line relative to the block, column) and the type it printed then (None: no
trailer). `retype` compares each slot's node's type now with the one printed; for
those that differ it replaces the old trailer's text by the new one, and moves every
source-map position behind it on that line by the difference:

    slots = TypeSlots()                  # filled by Writer.type_trailer while printing
    again = retype(lines, table, slots, top=fn)   # None: print afresh
    new_lines, new_table, new_slots = again

A trailer always directly follows the last token of its own node (a `)`, `}`, name or
literal that no child entry covers), so a source-map entry starting or ending at or
after the old trailer's end is behind it, and one ending before it is not. Where two
trailers would touch (no text between them, which the printer never writes) the
positions are ambiguous and `retype` declines; it also declines when the text at a
slot is not the trailer recorded there.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from engine.ir.expr import Expr
from engine.ir.type import Type
from engine.relay.printer.format import type_trailer
from engine.relay.printer.table import END_COL, END_LINE, START_COL, START_LINE, SourceMapTable

__all__ = ["TypeSlots", "retype"]

_LINE_SHIFT = 32  # positions as one sortable int: line << 32 | column


class TypeSlots:
    """The type trailers of one printed block, in text order (see module docstring):
    per slot its node, the type printed and, in `pos`, three ints: line, column and
    width of the trailer printed (0: none).

    `nodes` holds every slot's node except a top-level function's own (the last slot of a
    definition), which `detach_top` replaces by None so that a cache keyed weakly by the
    function does not keep it alive through its own block."""

    __slots__ = ("nodes", "types", "pos")

    def __init__(self) -> None:
        self.nodes: list[Expr | None] = []
        self.types: list[Type | None] = []
        self.pos: list[int] | array[int] = []  # a list while printing, then `seal`ed

    def seal(self) -> TypeSlots:
        """Keep the positions as a compact int array (printing is over)."""
        self.pos = array("q", self.pos)
        return self

    def __len__(self) -> int:
        return len(self.types)

    def add(self, node: Expr, ty: Type | None, line: int, col: int, width: int) -> None:
        self.nodes.append(node)
        self.types.append(ty)
        self.pos.extend((line, col, width))

    def positions(self) -> np.ndarray:
        """`pos` as an (n, 3) int64 array: line, column, width."""
        return np.array(self.pos, dtype=np.int64).reshape(-1, 3)

    def detach_top(self, top: Expr) -> None:
        if not self.nodes or self.nodes[-1] is not top:
            raise ValueError("a definition's last type slot must be its function's own")
        self.nodes[-1] = None

    def current_types(self, top: Expr | None) -> list[Type | None]:
        return [(top if node is None else node)._checked_type  # type: ignore[union-attr]
                for node in self.nodes]

    def stale(self, now: list[Type | None]) -> list[int]:
        """Indices of the slots whose node's type (`now`) is no longer the one printed."""
        types = self.types
        return [i for i, ty in enumerate(now) if ty is not types[i]]


def _trailer_text(ty: Type | None) -> str:
    return "" if ty is None else type_trailer(ty)


def _touching(pos: np.ndarray) -> bool:
    """Whether two slots on one line have no text between them."""
    same = pos[1:, 0] == pos[:-1, 0]
    return bool(np.any(same & (pos[1:, 1] <= pos[:-1, 1] + pos[:-1, 2])))


def _splice_lines(lines: tuple[str, ...], slots: TypeSlots, stale: list[int],
                  texts: list[str]) -> list[str] | None:
    """The lines with each stale slot's trailer replaced by `texts[k]`; None if a slot's
    text is not the trailer recorded for it."""
    out = list(lines)
    pos = slots.pos
    k = 0
    while k < len(stale):
        line = pos[3 * stale[k]]
        old = lines[line]
        pieces: list[str] = []
        prev = 0
        while k < len(stale) and pos[3 * stale[k]] == line:
            i = stale[k]
            col, width = pos[3 * i + 1], pos[3 * i + 2]
            if width and old[col:col + width] != type_trailer(slots.types[i]):  # type: ignore[arg-type]
                return None
            pieces.append(old[prev:col])
            pieces.append(texts[k])
            prev = col + width
            k += 1
        pieces.append(old[prev:])
        out[line] = "".join(pieces)
    return out


def _shift(positions: np.ndarray, keys: np.ndarray, cum: np.ndarray, side: Any) -> np.ndarray:
    """Column shift of each (line << 32 | col) position: the sum of the edits on its line
    whose key is before it (`side="right"`: at or before)."""
    upto = np.searchsorted(keys, positions, side=side)
    line_start = np.searchsorted(keys, (positions >> _LINE_SHIFT) << _LINE_SHIFT, side="left")
    return cum[upto] - cum[line_start]


def _shifted_table(table: SourceMapTable, keys: np.ndarray, cum: np.ndarray
                   ) -> SourceMapTable:
    rows = table.rows.copy()
    for line_col, col_col in ((START_LINE, START_COL), (END_LINE, END_COL)):
        pos = (rows[:, line_col] << _LINE_SHIFT) | rows[:, col_col]
        rows[:, col_col] += _shift(pos, keys, cum, "right")
    return SourceMapTable(rows, table.names, table.span_sets, table.qparams,
                          table.is_canonical)


def _shifted_slots(slots: TypeSlots, pos: np.ndarray, stale: list[int],
                   now: list[Type | None], keys: np.ndarray, cum: np.ndarray,
                   widths: list[int]) -> TypeSlots:
    out = TypeSlots()
    out.nodes = slots.nodes
    out.types = now
    moved = pos.copy()
    # A slot moves by the edits before it on its line, never by its own.
    moved[:, 1] += _shift((pos[:, 0] << _LINE_SHIFT) | pos[:, 1], keys, cum, "left")
    moved[stale, 2] = widths
    out.pos = array("q", moved.tobytes())
    return out


def retype(lines: tuple[str, ...], table: SourceMapTable, slots: TypeSlots,
           top: Expr | None = None
           ) -> tuple[tuple[str, ...], SourceMapTable, TypeSlots] | None:
    """`lines`/`table`/`slots` of a block printed with types, brought up to its nodes'
    types now (see module docstring); the same objects when no type changed, None when
    the block must be printed again."""
    now = slots.current_types(top)
    stale = slots.stale(now)
    if not stale:
        return lines, table, slots
    pos = slots.positions()
    if _touching(pos):
        return None
    texts = [_trailer_text(now[i]) for i in stale]
    new_lines = _splice_lines(lines, slots, stale, texts)
    if new_lines is None:
        return None
    widths = [len(t) for t in texts]
    edited = pos[stale]
    keys = (edited[:, 0] << _LINE_SHIFT) | (edited[:, 1] + edited[:, 2])
    cum = np.concatenate(([0], np.cumsum(np.array(widths, dtype=np.int64) - edited[:, 2])))
    return (tuple(new_lines), _shifted_table(table, keys, cum),
            _shifted_slots(slots, pos, stale, now, keys, cum, widths))
