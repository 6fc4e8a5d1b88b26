"""ONNX sequences and optionals, for lengths and presence known at import time.

A sequence is a Relay tuple: its length is part of its type, so every sequence op here
works on a known length and a known position (SequenceAt also takes a run-time position
when the elements share one type). A length that depends on run-time values (a loop
that grows a sequence, SplitToSequence with run-time sizes) is a ConversionError. An
optional is its value when present; an empty one is bound to no expression
(`EMPTY_OPTIONAL`), so its presence is answered at import time.
"""

from __future__ import annotations

import numpy as np

from engine.ir.expr import Expr, Tuple, TupleGetItem
from engine.ir.type import TensorType, TupleType
from engine.relay import op as _op
from engine.relay.expr import const
from engine.relay.frontend.onnx.scope import EMPTY_OPTIONAL
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis


def elements(ctx: NodeContext, index: int) -> list[Expr]:
    """The elements of sequence input `index`."""
    seq = ctx.input(index)
    if isinstance(seq, Tuple):
        return list(seq.fields)
    ty = ctx.importer.type_of(seq)
    if not isinstance(ty, TupleType):
        raise ctx.fail(f"input {ctx.input_names[index]!r} is not a sequence (it is {ty})")
    return [TupleGetItem(seq, k) for k in range(len(ty.fields))]


def _position(ctx: NodeContext, index: int, length: int, default: int, end: int) -> int:
    """A constant position in [-length, length + end), normalized."""
    if not ctx.has(index):
        return default
    pos = int(np.asarray(ctx.const(index, "the position")).reshape(-1)[0])
    if not -length <= pos < length + end:
        raise ctx.fail(f"position {pos} is out of range for a sequence of {length}")
    return pos + length if pos < 0 else pos


def _run_time_position(ctx: NodeContext, index: int, length: int, values: list[Expr]
                       ) -> Expr:
    """A position known only at run time, as an int64 scalar in [0, ...): the elements can
    then only be chosen at run time, so `values` must all have one type."""
    if len({ctx.importer.type_of(v) for v in values}) > 1:
        raise ctx.fail("the position is known only at run time and the elements differ in "
                       "type, so the result's types are not known")
    pos = _op.cast(_op.reshape(ctx.input(index), ()), "int64")
    return _op.where(_op.less(pos, _int(0)), pos + _int(length), pos)


def _int(value: int) -> Expr:
    return const(np.int64(value), "int64")


def _pick(cond: Expr, then: Expr, other: Expr) -> Expr:
    return _op.where(cond, then, other)


@converter("SequenceConstruct", since=11)
def sequence_construct(ctx: NodeContext) -> ConvertResult:
    return Tuple(tuple(ctx.input(k) for k in range(len(ctx.inputs))))


@converter("SequenceEmpty", since=11)
def sequence_empty(ctx: NodeContext) -> ConvertResult:
    return Tuple(())


@converter("SequenceInsert", since=11)
def sequence_insert(ctx: NodeContext) -> ConvertResult:
    items, new = elements(ctx, 0), ctx.input(1)
    if not ctx.has(2) or ctx.value(2) is not None:
        pos = _position(ctx, 2, len(items), len(items), 1)
        return Tuple((*items[:pos], new, *items[pos:]))
    at = _run_time_position(ctx, 2, len(items), [*items, new])
    out = []  # element k: old k before the position, the new one at it, old k - 1 after
    for k in range(len(items) + 1):
        value = new if k == 0 else _pick(_op.equal(at, _int(k)), new, items[k - 1])
        out.append(value if k == len(items) else _pick(_op.less(_int(k), at), items[k], value))
    return Tuple(tuple(out))


@converter("SequenceErase", since=11)
def sequence_erase(ctx: NodeContext) -> ConvertResult:
    items = elements(ctx, 0)
    if not items:
        raise ctx.fail("erasing from an empty sequence")
    if not ctx.has(1) or ctx.value(1) is not None:
        pos = _position(ctx, 1, len(items), len(items) - 1, 0)
        return Tuple((*items[:pos], *items[pos + 1:]))
    at = _run_time_position(ctx, 1, len(items), items)
    return Tuple(tuple(_pick(_op.less(_int(k), at), items[k], items[k + 1])
                       for k in range(len(items) - 1)))


@converter("SequenceAt", since=11)
def sequence_at(ctx: NodeContext) -> ConvertResult:
    items = elements(ctx, 0)
    if ctx.value(1) is not None:
        return items[_position(ctx, 1, len(items), 0, 0)]
    types = {ctx.importer.type_of(item) for item in items}
    if len(types) != 1:
        raise ctx.fail("the position is known only at run time and the elements differ in "
                       "type, so the result's type is not known")
    position = _op.reshape(ctx.input(1), ())
    return _op.take(_op.stack(items, 0), position, axis=0, mode="wrap")


@converter("SequenceLength", since=11)
def sequence_length(ctx: NodeContext) -> ConvertResult:
    return _int(len(elements(ctx, 0)))


@converter("ConcatFromSequence", since=11)
def concat_from_sequence(ctx: NodeContext) -> ConvertResult:
    items = elements(ctx, 0)
    if not items:
        raise ctx.fail("concatenating an empty sequence")
    ty = ctx.importer.type_of(items[0])
    assert isinstance(ty, TensorType)
    axis = int(ctx.attr("axis"))
    if int(ctx.attr("new_axis", 0)):
        return _op.stack(items, norm_axis(axis, ty.ndim + 1))
    return _op.concatenate(items, norm_axis(axis, ty.ndim))


@converter("SplitToSequence", since=11)
def split_to_sequence(ctx: NodeContext) -> ConvertResult:
    shape = ctx.static_shape(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), len(shape))
    size = shape[axis]
    if not ctx.has(1):
        pieces = _op.split(ctx.input(0), size, axis)
        items: list[Expr] = [pieces[k] for k in range(size)]
        if not int(ctx.attr("keepdims", 1)):
            items = [_op.squeeze(item, [axis]) for item in items]
        return Tuple(tuple(items))
    split = np.asarray(ctx.const(1, "split")).astype(np.int64)
    if split.ndim == 0:
        chunk = int(split)
        sizes = [min(chunk, size - start) for start in range(0, size, chunk)]
    else:
        sizes = [int(s) for s in split]
    if sum(sizes) != size or any(s < 0 for s in sizes):
        raise ctx.fail(f"split sizes {sizes} do not add up to {size}")
    points = np.cumsum(sizes)[:-1].tolist()
    pieces = _op.split(ctx.input(0), points, axis)
    return Tuple(tuple(pieces[k] for k in range(len(sizes))))


@converter("SequenceMap", since=17)
def sequence_map(ctx: NodeContext) -> ConvertResult:
    """One copy of the body per element (the length is known)."""
    body = ctx.graph("body")
    columns: list[list[Expr] | Expr] = []
    for index in range(len(ctx.inputs)):
        is_seq = isinstance(ctx.importer.type_of(ctx.input(index)), TupleType)
        columns.append(elements(ctx, index) if is_seq else ctx.input(index))
    length = len(columns[0])  # type: ignore[arg-type]
    if any(isinstance(c, list) and len(c) != length for c in columns):
        raise ctx.fail("the input sequences differ in length")
    outputs: list[list[Expr]] = [[] for _ in body.output]
    for k in range(length):
        inputs = [c[k] if isinstance(c, list) else c for c in columns]
        sub = ctx.importer.import_subgraph(body, inputs, False, ctx.name)
        for column, value in zip(outputs, sub.outputs):
            if value is None:
                raise ctx.fail("the body gives an empty optional")
            column.append(value)
    return [Tuple(tuple(column)) for column in outputs]


# --- optionals -------------------------------------------------------------------------------
@converter("Optional", since=15)
def optional(ctx: NodeContext) -> ConvertResult:
    return [ctx.input(0) if ctx.has(0) else EMPTY_OPTIONAL]


@converter("OptionalHasElement", since=15)
def optional_has_element(ctx: NodeContext) -> ConvertResult:
    return const(np.array(ctx.has(0)))


@converter("OptionalGetElement", since=15)
def optional_get_element(ctx: NodeContext) -> ConvertResult:
    if not ctx.has(0):
        raise ctx.fail(f"optional {ctx.input_names[0]!r} is empty (known at import time)")
    return ctx.input(0)
