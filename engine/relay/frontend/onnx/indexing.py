"""ONNX indexing, scans and selection: GatherND, GatherElements, CumSum, CumProd, TopK, OneHot,
Trilu."""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis, wrap_negative, wrapped_indices


@converter("GatherND", since=11)
def gather_nd(ctx: NodeContext) -> ConvertResult:
    batch = int(ctx.attr("batch_dims", 0))
    idx_shape = ctx.shape(1)
    depth = idx_shape[-1]
    if depth is None:
        raise ctx.fail("the last dimension of indices must be static")
    indices = wrapped_indices(ctx, 1, list(range(batch, batch + int(depth))))
    rank = len(idx_shape)
    # ONNX keeps the index tuple on the last axis, Relay on the first
    moved = relay.transpose(indices, axes=[rank - 1, *range(rank - 1)])
    return relay.gather_nd(ctx.input(0), moved, batch_dims=batch, index_rank=int(depth))


@converter("GatherElements", since=11)
def gather_elements(ctx: NodeContext) -> ConvertResult:
    rank = ctx.rank(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), rank)
    indices = wrapped_indices(ctx, 1, [axis])
    return relay.gather(ctx.input(0), axis, indices)


@converter("CumSum", since=11)
@converter("CumProd", since=26)
def cumulative(ctx: NodeContext) -> ConvertResult:
    if ctx.value(1) is None:  # the axis is known at run time
        scan = relay.dyn.cumsum if ctx.op_type == "CumSum" else relay.dyn.cumprod
        return scan(ctx.input(0), ctx.input(1), exclusive=bool(ctx.attr("exclusive", 0)),
                    reverse=bool(ctx.attr("reverse", 0)))
    axis = norm_axis(ctx.ints(1, "axis")[0], ctx.rank(0))
    x = ctx.input(0)
    reverse = bool(ctx.attr("reverse", 0))
    if reverse:
        x = relay.reverse(x, axis=axis)
    scan = relay.cumsum if ctx.op_type == "CumSum" else relay.cumprod
    out = scan(x, axis=axis, exclusive=bool(ctx.attr("exclusive", 0)))
    return relay.reverse(out, axis=axis) if reverse else out


def _topk(ctx: NodeContext, k: int) -> ConvertResult:
    axis = int(ctx.attr("axis", -1))
    largest = bool(ctx.attr("largest", 1))
    out = relay.topk(ctx.input(0), k=k, axis=axis, ret_type="both", is_ascend=not largest,
                     dtype="int64")
    return [out[0], out[1]]


@converter("TopK")
def topk_attr(ctx: NodeContext) -> ConvertResult:
    return _topk(ctx, int(ctx.attr("k")))


@converter("TopK", since=10)
def topk_input(ctx: NodeContext) -> ConvertResult:
    if ctx.value(1) is None:  # k is known at run time
        out = relay.dyn.topk(ctx.input(0), ctx.input(1), axis=int(ctx.attr("axis", -1)),
                             is_ascend=not ctx.attr("largest", 1), dtype="int64")
        return [out[0], out[1]]
    return _topk(ctx, ctx.ints(1, "k")[0])


def _dyn_one_hot(ctx: NodeContext) -> ConvertResult:
    """Depth (or values) known at run time: indices wrap by the depth tensor."""
    dtype = ctx.dtype(2)
    depth = relay.reshape(relay.cast(ctx.input(1), "int64"), [])
    indices = relay.cast(ctx.input(0), "int64")
    wrapped = wrap_negative(indices, depth, "int64")
    values = ctx.input(2)
    on = relay.reshape(relay.strided_slice(values, [1], [2]), [])
    off = relay.reshape(relay.strided_slice(values, [0], [1]), [])
    return relay.dyn.one_hot(wrapped, on, off, depth, axis=int(ctx.attr("axis", -1)),
                             dtype=dtype)


@converter("OneHot", since=9)
def one_hot(ctx: NodeContext) -> ConvertResult:
    if ctx.value(1) is None or ctx.value(2) is None:
        return _dyn_one_hot(ctx)
    depth = ctx.ints(1, "depth")[0]
    values = np.asarray(ctx.const(2, "values")).reshape(-1)
    dtype = str(values.dtype)
    indices = ctx.input(0)
    idx_dtype = ctx.dtype(0)
    # ONNX: negative indices count from the end of the depth
    wrapped = wrap_negative(indices, relay.const(depth, idx_dtype), idx_dtype)
    return relay.one_hot(wrapped, relay.const(values[1], dtype), relay.const(values[0], dtype),
                         depth=depth, axis=int(ctx.attr("axis", -1)), dtype=dtype)


@converter("Trilu", since=14)
def trilu(ctx: NodeContext) -> ConvertResult:
    if ctx.has(1) and ctx.value(1) is None:  # k is known at run time
        k = relay.reshape(relay.cast(ctx.input(1), "int64"), [])
        return relay.dyn.trilu(ctx.input(0), k, upper=bool(ctx.attr("upper", 1)))
    shape = ctx.static_shape(0)
    k = ctx.ints(1, "k")[0] if ctx.has(1) else 0
    rows, cols = shape[-2], shape[-1]
    keep = np.triu(np.ones((rows, cols), bool), k) if ctx.attr("upper", 1) else \
        np.tril(np.ones((rows, cols), bool), k)
    zero = relay.const(np.zeros((), ctx.dtype(0)), ctx.dtype(0))
    return relay.where(relay.const(keep, "bool"), ctx.input(0), zero)
