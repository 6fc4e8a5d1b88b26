"""Indexing: select/slice, gathers and scatters, advanced indexing, strided views, tuples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr, TupleGetItem
from engine.relay.frontend.pytorch.ops import (
    AtenCall,
    axis_of,
    cast,
    const,
    converter,
    ints,
    operand,
    tensor,
)

_INT_MAX = 2 ** 62


def _slice_bounds(size: int, start: Any, end: Any) -> tuple[int, int]:
    start = 0 if start is None else int(start)
    end = size if end is None or int(end) >= _INT_MAX else int(end)
    start = max(start + size, 0) if start < 0 else min(start, size)
    end = max(end + size, 0) if end < 0 else min(end, size)
    return start, max(end, start)


def _slice(call: AtenCall, x: Expr, shape: tuple[int, ...], dim: Any, start: Any, end: Any,
           step: int) -> Expr:
    axis = axis_of(dim, len(shape))
    begin, stop = _slice_bounds(shape[axis], start, end)
    if begin == 0 and stop == shape[axis] and step == 1:
        return x
    return relay.strided_slice(x, [begin], [stop], [int(step)], axes=[axis])


@converter("aten.slice.Tensor", "aten.slice_copy.Tensor")
def slice_(call: AtenCall) -> Expr:
    return _slice(call, tensor(call, 0), call.shape(0), call.arg(1, "dim", 0),
                  call.arg(2, "start"), call.arg(3, "end"), int(call.arg(4, "step", 1)))


@converter("aten.narrow.default")
def narrow(call: AtenCall) -> Expr:
    start = int(call.args[2])
    axis = axis_of(call.args[1], len(call.shape(0)))
    start = start + call.shape(0)[axis] if start < 0 else start
    return _slice(call, tensor(call, 0), call.shape(0), axis, start, start + int(call.args[3]), 1)


@converter("aten.select.int", "aten.select_copy.int")
def select(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.args[1], len(shape))
    index = int(call.args[2]) % shape[axis]
    part = relay.strided_slice(tensor(call, 0), [index], [index + 1], axes=[axis])
    return relay.squeeze(part, axis=[axis])


def _index_tensor(call: AtenCall, index: int, size: int) -> Expr:
    """Indices as int64 with negatives wrapped (torch's indices may count from the end)."""
    idx = cast(tensor(call, index), call.dtype(index), "int64")
    return relay.where(relay.less(idx, const(0, "int64")),
                       relay.add(idx, const(size, "int64")), idx)


@converter("aten.index_select.default")
def index_select(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.args[1], len(shape))
    return relay.take(tensor(call, 0), _index_tensor(call, 2, shape[axis]), axis=axis)


@converter("aten.embedding.default")
def embedding(call: AtenCall) -> Expr:
    rows = call.shape(0)[0]
    return relay.take(tensor(call, 0), _index_tensor(call, 1, rows), axis=0)


@converter("aten.gather.default")
def gather(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.args[1], len(shape))
    return relay.gather(tensor(call, 0), axis, _index_tensor(call, 2, shape[axis]))


@converter("aten.take_along_dim.default")
def take_along_dim(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.args[2], len(shape))
    idx = _index_tensor(call, 1, shape[axis])
    target = list(call.out_shape)
    target[axis] = call.shape(1)[axis]
    if list(call.shape(1)) != target:
        idx = relay.broadcast_to(idx, target)
    return relay.gather(tensor(call, 0), axis, idx)


@dataclass(frozen=True)
class _Advanced:
    """x[i0, i1, ...] with index tensors (None skips a dim) as gather_nd / scatter_nd on x
    with the indexed dims moved to the front: `perm` moves them, `out_axes` takes the
    gathered (batch..., rest...) layout to torch's (the broadcast index dims first, or in
    place of the indexed block when the indexed dims are adjacent)."""

    stacked: Expr
    perm: list[int]
    out_axes: list[int]
    gathered: list[int]

    @property
    def target(self) -> list[int]:
        return [self.gathered[a] for a in self.out_axes]


def _advanced(call: AtenCall) -> _Advanced:
    shape = call.shape(0)
    metas = call.metas.get(1) or []
    indices = [(d, v, m) for d, (v, m) in enumerate(zip(call.args[1], metas)) if v is not None]
    if not indices:
        raise call.fail("indexing with no index tensor")
    if any(m is None or m.dtype == "bool" for _, _, m in indices):
        raise call.fail("indexing by a boolean mask is not supported (its size is data-"
                        "dependent)")
    dims = [d for d, _, _ in indices]
    rest = [d for d in range(len(shape)) if d not in dims]
    batch = _broadcast([m.shape for _, _, m in indices])
    stacked = relay.stack([relay.broadcast_to(_wrap(v, m.dtype, shape[d]), batch)
                           for d, v, m in indices], axis=0)
    nb = len(batch)
    lead = dims[0] if dims == list(range(dims[0], dims[0] + len(dims))) else 0
    out_axes = [*range(nb, nb + lead), *range(nb), *range(nb + lead, nb + len(rest))]
    return _Advanced(stacked, dims + rest, out_axes, batch + [shape[d] for d in rest])


def _permuted(x: Expr, axes: list[int]) -> Expr:
    return x if axes == sorted(axes) else relay.transpose(x, axes=axes)


def _inverse(axes: list[int]) -> list[int]:
    return [int(a) for a in np.argsort(axes)]


@converter("aten.index.Tensor", "aten._unsafe_index.Tensor")
def index(call: AtenCall) -> Expr:
    if all(v is None for v in call.args[1]):
        return tensor(call, 0)
    plan = _advanced(call)
    out = relay.gather_nd(_permuted(tensor(call, 0), plan.perm), plan.stacked)
    return _permuted(out, plan.out_axes)


def _wrap(idx: Expr, dtype: str, size: int) -> Expr:
    idx = cast(idx, dtype, "int64")
    return relay.where(relay.less(idx, const(0, "int64")), relay.add(idx, const(size, "int64")),
                       idx)


def _broadcast(shapes: list[tuple[int, ...]]) -> list[int]:
    return list(np.broadcast_shapes(*shapes))


@converter("aten.index_put.default", "aten._unsafe_index_put.default")
def index_put(call: AtenCall) -> Expr:
    plan = _advanced(call)
    values = operand(call, 2, call.dtype(0), "values")
    if list(call.shape(2)) != plan.target:
        values = relay.broadcast_to(values, plan.target)
    mode = "add" if call.arg(3, "accumulate", False) else "update"
    out = relay.scatter_nd(_permuted(tensor(call, 0), plan.perm), plan.stacked,
                           _permuted(values, _inverse(plan.out_axes)), mode=mode)
    return _permuted(out, _inverse(plan.perm))


@converter("aten.flip.default")
def flip(call: AtenCall) -> Expr:
    out = tensor(call, 0)
    for d in call.args[1]:
        out = relay.reverse(out, axis=axis_of(d, len(call.shape(0))))
    return out


@converter("aten.roll.default")
def roll(call: AtenCall) -> Expr:
    shape = call.shape(0)
    shifts, dims = ints(call.args[1]), ints(call.arg(2, "dims", []) or [])
    x = tensor(call, 0)
    if not dims:
        flat = _roll_axis(relay.reshape(x, newshape=[-1]), int(np.prod(shape)), shifts[0], 0)
        return relay.reshape(flat, newshape=list(shape))
    for shift, dim in zip(shifts, dims):
        axis = axis_of(dim, len(shape))
        x = _roll_axis(x, shape[axis], shift, axis)
    return x


def _roll_axis(x: Expr, size: int, shift: int, axis: int) -> Expr:
    shift %= size
    if not shift:
        return x
    head = relay.strided_slice(x, [size - shift], [size], axes=[axis])
    tail = relay.strided_slice(x, [0], [size - shift], axes=[axis])
    return relay.concatenate([head, tail], axis=axis)


@converter("aten.repeat.default", "aten.tile.default")
def repeat(call: AtenCall) -> Expr:
    reps = ints(call.args[1])
    x = tensor(call, 0)
    rank = len(call.shape(0))
    if len(reps) > rank:
        x = relay.reshape(x, newshape=[1] * (len(reps) - rank) + list(call.shape(0)))
    elif len(reps) < rank:
        reps = [1] * (rank - len(reps)) + reps
    return relay.tile(x, reps)


@converter("aten.repeat_interleave.self_int")
def repeat_interleave(call: AtenCall) -> Expr:
    dim = call.arg(2, "dim")
    x = tensor(call, 0)
    if dim is None:
        x, dim = relay.reshape(x, newshape=[-1]), 0
    return relay.repeat(x, int(call.args[1]), axis=axis_of(dim, max(len(call.shape(0)), 1)))


# --- strided views -----------------------------------------------------------------------------
def _strided_take(x: Expr, shape: tuple[int, ...], size: list[int], stride: list[int],
                  offset: int) -> Expr:
    """`as_strided` on the contiguous layout of x: take from the flat tensor."""
    positions = np.full(size, offset, dtype=np.int64)
    for axis, (n, step) in enumerate(zip(size, stride)):
        view = [1] * len(size)
        view[axis] = n
        positions = positions + (np.arange(n, dtype=np.int64) * step).reshape(view)
    return relay.take(relay.reshape(x, newshape=[-1]), relay.const(positions), axis=0)


@converter("aten.as_strided.default", "aten.as_strided_copy.default")
def as_strided(call: AtenCall) -> Expr:
    size, stride = ints(call.args[1]), ints(call.args[2])
    offset = int(call.arg(3, "storage_offset", 0) or 0)
    return _strided_take(tensor(call, 0), call.shape(0), size, stride, offset)


@converter("aten.diagonal.default", "aten.diagonal_copy.default")
def diagonal(call: AtenCall) -> Expr:
    shape = call.shape(0)
    rank = len(shape)
    offset = int(call.arg(1, "offset", 0))
    d1, d2 = axis_of(call.arg(2, "dim1", 0), rank), axis_of(call.arg(3, "dim2", 1), rank)
    rest = [d for d in range(rank) if d not in (d1, d2)]
    x = relay.transpose(tensor(call, 0), axes=rest + [d1, d2])
    moved = [shape[d] for d in rest] + [shape[d1], shape[d2]]
    strides = list(np.cumprod([1, *moved[::-1]])[:-1][::-1])
    n = call.out_shape[-1]
    start = offset * strides[-1] if offset >= 0 else -offset * strides[-2]
    return _strided_take(x, tuple(moved), [*moved[:-2], n],
                         [*strides[:-2], strides[-2] + strides[-1]], start)


# --- scatters ----------------------------------------------------------------------------------
def _scatter_region(call: AtenCall, base: Expr, src: Expr, axis: int, begin: int, end: int,
                    step: int) -> Expr:
    """base with positions begin:end:step on `axis` replaced by src (static positions)."""
    shape = call.shape(0)
    positions = np.arange(begin, end, step, dtype=np.int64)
    view = [1] * len(shape)
    view[axis] = len(positions)
    target = list(shape)
    target[axis] = len(positions)
    idx = np.broadcast_to(positions.reshape(view), target)
    return relay.scatter_elements(base, relay.const(np.ascontiguousarray(idx)), src, axis=axis)


@converter("aten.slice_scatter.default")
def slice_scatter(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.arg(2, "dim", 0), len(shape))
    begin, end = _slice_bounds(shape[axis], call.arg(3, "start"), call.arg(4, "end"))
    step = int(call.arg(5, "step", 1))
    src = operand(call, 1, call.dtype(0), "src")
    if begin == 0 and end == shape[axis] and step == 1:
        return src
    return _scatter_region(call, tensor(call, 0), src, axis, begin, end, step)


@converter("aten.select_scatter.default")
def select_scatter(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.args[2], len(shape))
    index = int(call.args[3]) % shape[axis]
    src = relay.expand_dims(operand(call, 1, call.dtype(0), "src"), axis)
    return _scatter_region(call, tensor(call, 0), src, axis, index, index + 1, 1)


_REDUCTIONS = {None: "update", "add": "add", "sum": "add", "multiply": "mul", "prod": "mul",
               "amax": "max", "amin": "min"}


@converter("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
           "aten.scatter.value_reduce", "aten.scatter_add.default", "aten.scatter_reduce.two")
def scatter(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.args[1], len(shape))
    idx = _index_tensor(call, 2, shape[axis])
    dtype = call.dtype(0)
    src = call.args[3]
    updates = operand(call, 3, dtype) if isinstance(src, Expr) else relay.full(
        const(src, dtype), list(call.shape(2)), dtype)
    reduce = call.kwargs.get("reduce", call.args[4] if len(call.args) > 4 else None)
    if call.target == "aten.scatter_add.default":
        reduce = "add"
    if reduce not in _REDUCTIONS or reduce == "mean":
        raise call.fail(f"scatter reduce={reduce!r} is not supported")
    if isinstance(src, Expr) and list(call.shape(3)) != list(call.shape(2)):
        region = [slice(0, n) for n in call.shape(2)]
        updates = relay.strided_slice(updates, [r.start for r in region],
                                      [r.stop for r in region])
    base = tensor(call, 0)
    if call.target == "aten.scatter_reduce.two" and not call.arg(5, "include_self", True):
        raise call.fail("scatter_reduce with include_self=False is not supported")
    return relay.scatter_elements(base, idx, updates, axis=axis, reduction=_REDUCTIONS[reduce])


@converter("aten.index_add.default", "aten.index_copy.default", "aten.index_fill.int_Scalar")
def index_add(call: AtenCall) -> Expr:
    shape = call.shape(0)
    axis = axis_of(call.args[1], len(shape))
    idx = _index_tensor(call, 2, shape[axis])
    dtype = call.dtype(0)
    if call.target.startswith("aten.index_fill"):
        target = list(shape)
        target[axis] = call.shape(2)[0]
        src = relay.full(const(call.args[3], dtype), target, dtype)
    else:
        src = operand(call, 3, dtype, "source")
        alpha = call.kwargs.get("alpha", 1)
        if alpha != 1:
            src = relay.multiply(src, const(alpha, dtype))
    src_shape = list(shape)
    src_shape[axis] = call.shape(2)[0]
    view = [1] * len(shape)
    view[axis] = src_shape[axis]
    full_idx = relay.broadcast_to(relay.reshape(idx, newshape=view), src_shape)
    mode = "add" if call.target.startswith("aten.index_add") else "update"
    return relay.scatter_elements(tensor(call, 0), full_idx, src, axis=axis, reduction=mode)


@converter("aten.nonzero.default", "aten.argwhere.default")
def nonzero(call: AtenCall) -> Expr:
    return relay.argwhere(tensor(call, 0), dtype="int64")


@converter("_operator.getitem")
def getitem(call: AtenCall) -> Any:
    value, i = call.args[0], int(call.args[1])
    if isinstance(value, (list, tuple)):
        return value[i]  # None for an output not computed: reading it fails
    return TupleGetItem(value, i)


@converter("aten.diff.default")
def diff(call: AtenCall) -> Expr:
    rank = len(call.shape(0))
    axis = axis_of(call.arg(2, "dim", -1), rank)
    parts = [(call.arg(i, key), i) for i, key in ((3, "prepend"), (0, ""), (4, "append"))]
    x = relay.concatenate([p for p, _ in parts if isinstance(p, Expr)], axis=axis) if any(
        isinstance(call.arg(i, k), Expr) for i, k in ((3, "prepend"), (4, "append"))) \
        else tensor(call, 0)
    size = call.out_shape[axis] + int(call.arg(1, "n", 1))
    for _ in range(int(call.arg(1, "n", 1))):
        later = relay.strided_slice(x, [1], [size], axes=[axis])
        earlier = relay.strided_slice(x, [0], [size - 1], axes=[axis])
        x = relay.logical_xor(later, earlier) if call.dtype(0) == "bool" else relay.subtract(
            later, earlier)
        size -= 1
    return x
