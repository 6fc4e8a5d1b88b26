"""The printed document: `print_ir` (text + source map), `astext`, and their cache.

    r = print_ir(mod)
    r.text             # '#[version = "0.0.5"]\\ndef @main(%x: Tensor[(1, 3), float32]) {...'
    r.source_map       # [SourceMapEntry(node_id, kind, start, end, spans, op, is_ref), ...]
    r.line_origins     # per line, the ids of the nodes printed on it
    r.to_json()        # [SourceMapEntry as in docs/PROTOCOL.md]
    r.source_map_table()  # the same map as int columns (table.SourceMapTable)

Each top-level function is printed once per (function object, name, constant
numbering, options): its lines and relative source map (entries, and their
column table once asked for) are kept in a weak cache, so re-printing a module
whose functions are unchanged objects costs only the assembly, and re-printing one
whose nodes were typed in place since costs only splicing in their type trailers
(`printer.retype`).
"""

from __future__ import annotations

import base64
import json
import threading
import weakref
from array import array
from dataclasses import dataclass
from typing import Any

from engine.ir.expr import Constant, Expr, Function, GlobalVar
from engine.ir.module import IRModule
from engine.ir.type import Type
from engine.relay.printer.expr import ExprPrinter, MetaTable
from engine.relay.printer.format import (
    META_OMITTED,
    METADATA_LINE,
    VERSION_LINE,
    type_text,
)
from engine.relay.printer.retype import TypeSlots, retype
from engine.relay.printer.table import SourceMapTable
from engine.relay.printer.writer import Writer

__all__ = ["PrintResult", "SourceMapEntry", "SourceMapTable", "astext", "metadata_text",
           "print_ir", "type_text"]


@dataclass(frozen=True, slots=True)
class SourceMapEntry:
    """One printed expression (or, with `is_ref`, one use of a bound name such as `%3`).

    `start`/`end` are (line, col): 1-based line, 0-based column, end exclusive.
    """

    node_id: int
    kind: str
    start: tuple[int, int]
    end: tuple[int, int]
    spans: tuple[str, ...]
    op: str | None
    is_ref: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The protocol's SourceMapEntry (docs/PROTOCOL.md); a use also has `"ref": true`."""
        out = {"node_id": self.node_id, "kind": self.kind, "start": list(self.start),
               "end": list(self.end), "spans": list(self.spans), "op": self.op}
        if self.is_ref:
            out["ref"] = True
        return out


class _Block:
    """The printed lines of one top-level function (or expression), positions relative:
    its source map as a column table, its line origins as flat ids plus line ends, and
    where its type trailers are (`printer.retype`)."""

    __slots__ = ("lines", "table", "origin_ids", "origin_ends", "constants", "slots")

    def __init__(self, lines: tuple[str, ...], table: SourceMapTable, origin_ids: array[int],
                 origin_ends: array[int], constants: tuple[Constant, ...],
                 slots: TypeSlots) -> None:
        self.lines = lines
        self.table = table
        self.origin_ids = origin_ids
        self.origin_ends = origin_ends
        self.constants = constants
        self.slots = slots

    def retyped(self, fn: Function) -> _Block | None:
        """This definition of `fn` with the type trailers of `fn`'s nodes now: itself when
        none changed, None when it must be printed again."""
        found = retype(self.lines, self.table, self.slots, top=fn)
        if found is None:
            return None
        lines, table, slots = found
        if slots is self.slots:
            return self
        return _Block(lines, table, self.origin_ids, self.origin_ends, self.constants, slots)

    def origins(self) -> list[tuple[int, ...]]:
        ids, ends = self.origin_ids, self.origin_ends
        return [tuple(ids[a:b]) for a, b in zip([0, *ends[:-1]], ends, strict=True)]


class PrintResult:
    """Text plus source map; the map and line origins are built on first use."""

    __slots__ = ("text", "constants", "_placed", "_source_map", "_origins")

    def __init__(self, text: str, placed: list[tuple[int, _Block]],
                 constants: list[Constant]) -> None:
        self.text = text
        self.constants = constants
        self._placed = placed
        self._source_map: list[SourceMapEntry] | None = None
        self._origins: list[tuple[int, ...]] | None = None

    @property
    def line_count(self) -> int:
        return self.text.count("\n")

    @property
    def source_map(self) -> list[SourceMapEntry]:
        if self._source_map is None:
            table = self.source_map_table()
            names, sets = table.names, table.span_sets
            self._source_map = [
                SourceMapEntry(nid, names[kind], (sl, sc), (el, ec), sets[spans],
                               names[op] if op >= 0 else None, bool(ref))
                for nid, kind, sl, sc, el, ec, spans, op, ref in table.rows.tolist()]
        return self._source_map

    def to_json(self, include_refs: bool = True) -> list[dict[str, Any]]:
        """The source map as protocol dicts, in text order (uses carry `"ref": true`)."""
        return self.source_map_table(include_refs).to_json()

    @property
    def line_origins(self) -> list[tuple[int, ...]]:
        """For each line (index 0 is line 1), the ids of the nodes it belongs to."""
        if self._origins is None:
            origins: list[tuple[int, ...]] = []
            for offset, block in self._placed:
                origins.extend([()] * (offset - len(origins)))
                origins.extend(block.origins())
            origins.extend([()] * (self.line_count - len(origins)))
            self._origins = origins
        return self._origins

    def source_map_table(self, include_refs: bool = True) -> SourceMapTable:
        """The source map as columns (see `printer.table`); each function's part is built
        once per printed function object, so an unchanged function only shifts lines."""
        table = SourceMapTable.concat([(off + 1, block.table) for off, block in self._placed])
        return table if include_refs else table.without_refs()

    def node_ids(self) -> set[int]:
        return set(self.source_map_table().node_ids().tolist())

    def __str__(self) -> str:
        return self.text


# --- blocks and their cache -------------------------------------------------------------

_CACHE: weakref.WeakKeyDictionary[Function, dict[tuple[Any, ...], _Block]] = (
    weakref.WeakKeyDictionary())
_CACHE_LOCK = threading.Lock()


def forget_printed(fn: Function) -> None:
    """Drop the cached printing of `fn` (its nodes were given other ids since)."""
    with _CACHE_LOCK:
        _CACHE.pop(fn, None)


def _finish(writer: Writer, meta: MetaTable) -> _Block:
    writer.finish()
    ids, ends = writer.origins()
    return _Block(tuple(writer.lines), writer.table(), ids, ends, tuple(meta.constants),
                  writer.slots.seal())


def _print_def(gv: GlobalVar, fn: Function, base: int, show_types: bool) -> _Block:
    writer, meta = Writer(), MetaTable(base)
    ExprPrinter(writer, meta, show_types).print_def(gv, fn)
    if show_types:
        writer.slots.detach_top(fn)  # the cache holds `fn` weakly: its block must not pin it
    return _finish(writer, meta)


def _def_block(gv: GlobalVar, fn: Function, base: int, show_types: bool) -> _Block:
    # Types are filled in place (InferType), so a cached block is brought up to fn's
    # types now: a trailer spliced in per node whose type changed, not a new print.
    key = (gv.name_hint, gv.node_id, gv.span, base, show_types)
    with _CACHE_LOCK:
        per_fn = _CACHE.get(fn)
        cached = per_fn.get(key) if per_fn is not None else None
    block = cached.retyped(fn) if cached is not None else None
    if block is None:
        block = _print_def(gv, fn, base, show_types)
    if block is not cached:
        with _CACHE_LOCK:
            _CACHE.setdefault(fn, {})[key] = block
    return block


def _expr_block(expr: Expr, show_types: bool) -> _Block:
    writer, meta = Writer(), MetaTable(0)
    ExprPrinter(writer, meta, show_types).print_top(expr)
    return _finish(writer, meta)


# --- assembly ------------------------------------------------------------------------------


class _Assembler:
    def __init__(self) -> None:
        self.chunks: list[str] = [VERSION_LINE]
        self.line = 1
        self.placed: list[tuple[int, _Block]] = []
        self.constants: list[Constant] = []

    def add(self, block: _Block) -> None:
        self.placed.append((self.line, block))
        self.chunks.extend(block.lines)
        self.line += len(block.lines)
        self.constants.extend(block.constants)

    def add_line(self, text: str) -> None:
        self.chunks.append(text)
        self.line += 1

    def result(self, show_meta_data: bool, note: bool) -> PrintResult:
        if self.constants and show_meta_data:
            self.chunks.extend(metadata_text(self.constants).splitlines())
        elif self.constants and note:
            self.chunks.append(META_OMITTED)
        self.chunks.append("")
        return PrintResult("\n".join(self.chunks), self.placed, self.constants)


def _print(node: Any, show_meta_data: bool, show_types: bool, note: bool,
           reuse: bool = True) -> PrintResult:
    if isinstance(node, Type):
        return PrintResult(type_text(node), [], [])
    out = _Assembler()
    if isinstance(node, IRModule):
        block_of = _def_block if reuse else _print_def
        for i, (gv, fn) in enumerate(node.items()):
            if i:
                out.add_line("")
            out.add(block_of(gv, fn, len(out.constants), show_types))
    elif isinstance(node, Expr):
        out.add(_expr_block(node, show_types))
    else:
        raise TypeError(f"cannot print {type(node).__name__}: expected an Expr, IRModule or Type")
    return out.result(show_meta_data, note)


def print_ir(node: Expr | IRModule | Type, show_types: bool = False,
             show_meta_data: bool = False, *, reuse: bool = True) -> PrintResult:
    """Print `node` and return the text with its source map (see the module docstring);
    `reuse=False` prints every function afresh, bypassing the cache (the reference that
    reused and spliced prints are checked against)."""
    return _print(node, show_meta_data, show_types, note=False, reuse=reuse)


def astext(node: Expr | IRModule | Type, show_meta_data: bool = True,
           show_types: bool = False) -> str:
    """The Relay text of an expression, module or type (TVM's `astext`)."""
    return _print(node, show_meta_data, show_types, note=True).text


# --- metadata -----------------------------------------------------------------------------


def _constant_json(const: Constant) -> str:
    array = const.data.numpy()
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    data = base64.b64encode(little.tobytes(order="C")).decode("ascii")
    return json.dumps({"dtype": str(array.dtype), "shape": list(array.shape), "data": data})


def metadata_text(constants: list[Constant]) -> str:
    """The `#[metadata]` section: one JSON object, one constant per line."""
    rows = ",\n    ".join(_constant_json(c) for c in constants)
    return f'{METADATA_LINE}\n{{\n  "relay.Constant": [\n    {rows}\n  ]\n}}'
