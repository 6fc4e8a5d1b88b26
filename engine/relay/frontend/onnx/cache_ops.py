"""ONNX's ops that carry a decoder's state from step to step, composed from Relay ops:
TensorScatter (opset 24: writes new keys or values into a fixed-size KV cache) and
CausalConvWithState (opset 27: the depthwise causal conv of Mamba and Gated DeltaNet with
its carried left context).
"""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.activation import swish_expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis


def _write_offsets(ctx: NodeContext, rank: int, axis: int, max_len: int) -> Expr:
    """For every cache position along `axis` and every batch row, its offset into `update`:
    position - write_indices[b] (modulo max_len in circular mode)."""
    positions = np.arange(max_len, dtype="int64").reshape(
        [1] * axis + [max_len] + [1] * (rank - axis - 1))
    offsets: Expr = relay.const(positions)
    if ctx.has(2):
        starts = relay.reshape(relay.cast(ctx.input(2), "int64"), newshape=[-1] + [1] * (rank - 1))
        offsets = relay.subtract(offsets, starts)
    if ctx.attr("mode", "linear") == "circular":
        offsets = relay.floor_mod(offsets, relay.const(max_len, "int64"))
    return offsets


@converter("TensorScatter", since=24)
def tensor_scatter(ctx: NodeContext) -> ConvertResult:
    """present[b, ..., write_indices[b] + s, ...] = update[b, ..., s, ...]: each cache slot
    picks its update row (a gather) where the write window covers it, else keeps the past."""
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.fail(f"unknown mode {mode!r} (linear and circular are defined)")
    cache_shape, update_shape = ctx.static_shape(0), ctx.static_shape(1)
    rank = len(cache_shape)
    axis = norm_axis(int(ctx.attr("axis", -2)), rank)
    if axis == 0:
        raise ctx.fail("axis 0 is the batch axis; the sequence axis must come after it")
    seq, max_len = update_shape[axis], cache_shape[axis]
    offsets = _write_offsets(ctx, rank, axis, max_len)
    covered = relay.logical_and(relay.greater_equal(offsets, relay.const(0, "int64")),
                                relay.less(offsets, relay.const(seq, "int64")))
    rows = relay.broadcast_to(relay.clip(offsets, 0, max(seq - 1, 0)), list(cache_shape))
    picked = relay.gather(ctx.input(1), axis, rows)
    return relay.where(covered, picked, ctx.input(0))


def _activation(ctx: NodeContext, out: Expr, dtype: str) -> Expr:
    """The fused SiLU (alias swish), computed in float32 for half-precision inputs."""
    activation = ctx.attr("activation", "none")
    if activation == "none":
        return out
    if activation not in ("silu", "swish"):
        raise ctx.fail(f"unknown activation {activation!r} (none, silu and swish are defined)")
    wide = np.dtype(dtype).itemsize < 4
    x = relay.cast(out, "float32") if wide else out
    y = swish_expr(x, 1.0, lambda v: relay.const(v, "float32" if wide else dtype))
    return relay.cast(y, dtype) if wide else y


@converter("CausalConvWithState", since=27)
def causal_conv_with_state(ctx: NodeContext) -> ConvertResult:
    """conv1d(concat(past_state or zeros, input), groups=channels) (+ bias, + SiLU), and the
    last k-1 positions of the padded input as the present state."""
    batch, channels, length = ctx.static_shape(0)
    k = ctx.static_shape(1)[2]
    dtype = ctx.dtype(0)
    past = ctx.input(3) if ctx.has(3) else relay.zeros((batch, channels, k - 1), dtype)
    padded = relay.concatenate([past, ctx.input(0)], axis=2)
    out = relay.nn.conv1d(padded, ctx.input(1), groups=channels, channels=channels,
                          kernel_size=[k])
    if ctx.has(2):
        out = relay.nn.bias_add(out, ctx.input(2), axis=1)
    present = relay.strided_slice(padded, begin=[length], end=[length + k - 1], axes=[2])
    return [_activation(ctx, out, dtype), present]
