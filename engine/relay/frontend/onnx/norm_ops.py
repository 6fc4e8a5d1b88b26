"""ONNX normalisations and p-norm ops composed from Relay ops: Hardmax, LpNormalization,
LpPool, GroupNormalization, InstanceNormalization and MeanVarianceNormalization."""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.nn import _AVG_POOL, _nn, _window
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axes, norm_axis, relay_padding


def _hardmax_2d(x: Expr, axis: int, depth: int, dtype: str) -> Expr:
    index = relay.argmax(x, axis=[axis])
    on, off = relay.const(1.0, dtype), relay.const(0.0, dtype)
    return relay.one_hot(index, on, off, depth=depth, axis=axis, dtype=dtype)


@converter("Hardmax")
def hardmax(ctx: NodeContext) -> ConvertResult:
    """1 at the first maximum along `axis`, 0 elsewhere (opset < 13: over the input
    coerced to 2-D at `axis`)."""
    shape = ctx.static_shape(0)
    axis = norm_axis(int(ctx.attr("axis", -1 if ctx.opset >= 13 else 1)), len(shape))
    if ctx.opset >= 13:
        return _hardmax_2d(ctx.input(0), axis, shape[axis], ctx.dtype(0))
    rows, cols = int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))
    flat = relay.reshape(ctx.input(0), newshape=[rows, cols])
    return relay.reshape(_hardmax_2d(flat, 1, cols, ctx.dtype(0)), newshape=list(shape))


def _p_norm(x: Expr, p: int, axis: list[int]) -> Expr:
    if p == 1:
        return relay.sum(relay.abs(x), axis=axis, keepdims=True)
    if p == 2:
        return relay.sqrt(relay.sum(relay.multiply(x, x), axis=axis, keepdims=True))
    raise ValueError(f"p must be 1 or 2, got {p}")


@converter("LpNormalization")
def lp_normalization(ctx: NodeContext) -> ConvertResult:
    axis = norm_axis(int(ctx.attr("axis", -1)), ctx.rank(0))
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.fail(f"p must be 1 or 2, got {p}")
    x, zero = ctx.input(0), relay.const(0.0, ctx.dtype(0))
    norm = _p_norm(x, p, [axis])
    return relay.where(relay.equal(norm, zero), zero, relay.divide(x, norm))  # 0/0 is 0


@converter("LpPool", since=11)
def lp_pool(ctx: NodeContext) -> ConvertResult:
    """(sum over the window of |x|^p)^(1/p): a count-including-pads average pool of |x|^p
    times the window size."""
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides, dilations, pads = _window(ctx, kernel)
    p, dtype = float(ctx.attr("p", 2)), ctx.dtype(0)
    powered = relay.power(relay.abs(ctx.input(0)), relay.const(p, dtype))
    fn = _nn(ctx, _AVG_POOL, len(kernel))
    mean = fn(powered, pool_size=kernel, strides=strides, dilation=dilations,
              padding=relay_padding(pads), ceil_mode=bool(ctx.attr("ceil_mode", 0)),
              count_include_pad=True)
    total = relay.multiply(mean, relay.const(float(np.prod(kernel)), dtype))
    return relay.power(total, relay.const(1.0 / p, dtype))


def _per_channel(ctx: NodeContext, index: int, groups: int, channels: int) -> Expr:
    """Scale or bias as a (C, 1, ...) tensor; opset 18 gives one value per group."""
    param = ctx.input(index)
    if ctx.static_shape(index)[0] == groups and groups != channels:
        param = relay.repeat(param, channels // groups, axis=0)
    return relay.reshape(param, newshape=[channels] + [1] * (ctx.rank(0) - 2))


def _standardize(x: Expr, axes: list[int], eps: float, dtype: str) -> Expr:
    """(x - mean) / sqrt(variance + eps) over `axes` (the biased variance)."""
    centered = relay.subtract(x, relay.mean(x, axis=axes, keepdims=True))
    var = relay.mean(relay.multiply(centered, centered), axis=axes, keepdims=True)
    return relay.divide(centered, relay.sqrt(relay.add(var, relay.const(eps, dtype))))


@converter("GroupNormalization", since=18)
def group_normalization(ctx: NodeContext) -> ConvertResult:
    shape = ctx.static_shape(0)
    groups, channels = int(ctx.attr("num_groups")), shape[1]
    grouped = relay.reshape(ctx.input(0), newshape=[shape[0], groups, -1])
    normed = relay.reshape(_standardize(grouped, [2], float(ctx.attr("epsilon", 1e-5)),
                                        ctx.dtype(0)), newshape=list(shape))
    scaled = relay.multiply(normed, _per_channel(ctx, 1, groups, channels))
    return relay.add(scaled, _per_channel(ctx, 2, groups, channels))


@converter("InstanceNormalization", since=6)
def instance_normalization(ctx: NodeContext) -> ConvertResult:
    """Each (sample, channel) standardised over its spatial axes, then scale * y + B."""
    rank = ctx.rank(0)
    normed = _standardize(ctx.input(0), list(range(2, rank)),
                          float(ctx.attr("epsilon", 1e-5)), ctx.dtype(0))
    channel = [-1] + [1] * (rank - 2)
    scaled = relay.multiply(normed, relay.reshape(ctx.input(1), newshape=channel))
    return relay.add(scaled, relay.reshape(ctx.input(2), newshape=channel))


@converter("MeanVarianceNormalization", since=9)
def mean_variance_normalization(ctx: NodeContext) -> ConvertResult:
    """(x - mean) / (sqrt(variance) + 1e-9) over `axes` (default N, H, W), as ONNX's
    function body computes it."""
    x, dtype = ctx.input(0), ctx.dtype(0)
    axes = norm_axes(ctx.attr("axes", [0, 2, 3]), ctx.rank(0))
    centered = relay.subtract(x, relay.mean(x, axis=axes, keepdims=True))
    std = relay.sqrt(relay.mean(relay.multiply(centered, centered), axis=axes, keepdims=True))
    return relay.divide(centered, relay.add(std, relay.const(1e-9, dtype)))
