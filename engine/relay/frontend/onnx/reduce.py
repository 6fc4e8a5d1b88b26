"""ONNX reductions (the plain ones and the composite L1/L2/LogSum/LogSumExp/SumSquare),
LayerNormalization, RMSNormalization, and resizing (Resize, Upsample)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axes, norm_axis
from engine.relay.op.image.resize import onnx_plan

_REDUCE = {
    "ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min",
    "ReduceProd": "prod",
}

def _square(x: Expr) -> Expr:
    return relay.multiply(x, x)


# Composite reductions: (elementwise before, reduction, elementwise after).
_COMPOSITE: dict[str, tuple[Callable[[Expr], Expr] | None, str, Callable[[Expr], Expr] | None]] = {
    "ReduceL1": (relay.abs, "sum", None),
    "ReduceL2": (_square, "sum", relay.sqrt),
    "ReduceSumSquare": (_square, "sum", None),
    "ReduceLogSum": (None, "sum", relay.log),
    "ReduceLogSumExp": (relay.exp, "sum", relay.log),
}
# The opset where each reduction's `axes` moved from attribute to input.
_AXES_AS_INPUT = {"ReduceSum": 13}
_AXES_AS_INPUT_DEFAULT = 18


def _axes_as_input(ctx: NodeContext) -> bool:
    return ctx.opset >= _AXES_AS_INPUT.get(ctx.op_type, _AXES_AS_INPUT_DEFAULT)


def _reduce_axes(ctx: NodeContext) -> list[int] | None:
    if _axes_as_input(ctx):
        axes = ctx.ints(1, "axes") if ctx.has(1) else []
    else:
        axes = [int(a) for a in ctx.attr("axes", [])]
    return norm_axes(axes, ctx.rank(0)) if axes else None


@converter(*_REDUCE, *_COMPOSITE)
def reduce_op(ctx: NodeContext) -> ConvertResult:
    before, name, after = _COMPOSITE.get(ctx.op_type, (None, _REDUCE.get(ctx.op_type, ""), None))
    x = before(ctx.input(0)) if before else ctx.input(0)
    keepdims, noop = bool(ctx.attr("keepdims", 1)), bool(ctx.attr("noop_with_empty_axes", 0))
    if _axes_as_input(ctx) and ctx.has(1) and ctx.value(1) is None:
        x = relay.dyn.reduce(name, x, ctx.input(1), keepdims, noop)  # axes known at run time
        return after(x) if after else x
    axes = _reduce_axes(ctx)
    if axes is not None or not noop:
        x = getattr(relay, name)(x, axis=axes, keepdims=keepdims)
    return after(x) if after else x


@converter("LayerNormalization", since=17)
def layer_norm(ctx: NodeContext) -> ConvertResult:
    """Y, and when read, the optional Mean and InvStdDev (reduced axes kept as 1)."""
    x, rank = ctx.input(0), ctx.rank(0)
    axis = norm_axis(int(ctx.attr("axis", -1)), rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    dtype = ctx.dtype(0)
    beta = ctx.input(2) if ctx.has(2) else relay.zeros_like(ctx.input(1))
    extras = any(name for name in ctx.output_names[1:])
    if axis == rank - 1 and not extras:
        return relay.nn.layer_norm(x, ctx.input(1), beta, axis=-1, epsilon=eps)
    axes = list(range(axis, rank))
    mean = relay.mean(x, axis=axes, keepdims=True)
    centered = relay.subtract(x, mean)
    var = relay.mean(relay.multiply(centered, centered), axis=axes, keepdims=True)
    inv_std = relay.rsqrt(relay.add(var, relay.const(eps, dtype)))
    y = relay.add(relay.multiply(relay.multiply(centered, inv_std), ctx.input(1)), beta)
    return [y, mean, inv_std] if extras else y


@converter("RMSNormalization", since=23)
def rms_norm(ctx: NodeContext) -> ConvertResult:
    """x / sqrt(mean(x^2 over axis..last) + epsilon) * scale, in `stash_type` (float32)."""
    x, rank, dtype = ctx.input(0), ctx.rank(0), ctx.dtype(0)
    axes = list(range(norm_axis(int(ctx.attr("axis", -1)), rank), rank))
    stash = "float32" if int(ctx.attr("stash_type", 1)) == 1 else dtype
    wide = relay.cast(x, stash) if stash != dtype else x
    mean_square = relay.mean(relay.multiply(wide, wide), axis=axes, keepdims=True)
    inv = relay.rsqrt(relay.add(mean_square, relay.const(float(ctx.attr("epsilon", 1e-5)),
                                                         stash)))
    normed = relay.multiply(wide, inv)
    normed = relay.cast(normed, dtype) if stash != dtype else normed
    return relay.multiply(normed, ctx.input(1))


_METHOD = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear",
           "cubic": "cubic"}


def _resize(ctx: NodeContext, scales_index: int, sizes_index: int, coord_mode: str,
            rounding: str = "round_prefer_floor", roi_index: int | None = None) -> Expr:
    """Resize from ONNX scales or sizes: image.resize2d when they (and the input shape) are
    known at import time, else dyn.image.resize2d with ONNX operands. Coordinates divide by
    the given scale (x_original = f(x_resized, scale)), not by output / input size."""
    if ctx.rank(0) != 4:
        raise ctx.fail(f"only 4-D (NCHW) resizing is supported, got rank {ctx.rank(0)}")
    mode = ctx.attr("mode", "nearest")
    if mode not in _METHOD:
        raise ctx.fail(f"resize mode {mode!r} is not supported")
    sizes = ctx.value(sizes_index)
    kind = "sizes" if ctx.has(sizes_index) and (sizes is None or sizes.size) else "scales"
    operand = sizes_index if kind == "sizes" else scales_index
    if not ctx.has(operand):
        raise ctx.fail("Resize needs scales or sizes")
    axes = [int(a) for a in ctx.attr("axes") or ()]
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    crop = coord_mode == "tf_crop_and_resize"
    roi_given = crop and roi_index is not None and ctx.has(roi_index)
    kwargs: dict[str, Any] = {
        "layout": "NCHW", "method": _METHOD[mode], "coordinate_transformation_mode": coord_mode,
        "rounding_method": ctx.attr("nearest_mode", rounding) if mode == "nearest" else "",
        "cubic_alpha": float(ctx.attr("cubic_coeff_a", -0.75)),
        "cubic_exclude": int(ctx.attr("exclude_outside", 0)),
        "extrapolation_value": float(ctx.attr("extrapolation_value", 0.0)),
        "antialias": bool(ctx.attr("antialias", 0)) and mode != "nearest"}
    values, shape = ctx.value(operand), ctx.shape(0)
    roi = ctx.value(roi_index) if roi_given and roi_index is not None else np.zeros(0)
    if values is not None and roi is not None and all(d is not None for d in shape):
        dims = [int(d) for d in shape]  # type: ignore[arg-type]
        try:
            size, scales, box = onnx_plan(dims, values, kind, axes, policy, roi)
        except ValueError as err:
            raise ctx.fail(str(err)) from None
        exact = all(abs(s - o / i) < 1e-12 for s, o, i in zip(scales, size, dims[2:]))
        return relay.image.resize2d(
            ctx.input(0), size=size, roi=box if crop else [0.0, 0.0, 0.0, 0.0],
            scales=None if exact else scales, **kwargs)
    box_expr = ctx.input(roi_index) if roi_given and roi_index is not None else \
        relay.const(np.zeros(0, "float32"), "float32")
    return relay.dyn.image.resize2d(ctx.input(0), box_expr, ctx.input(operand), onnx_kind=kind,
                                    axes=axes, keep_aspect_ratio_policy=policy, **kwargs)


@converter("Resize", since=10)
def resize_v10(ctx: NodeContext) -> ConvertResult:
    return _resize(ctx, 1, 99, "asymmetric", rounding="floor")


@converter("Resize", since=11)
def resize(ctx: NodeContext) -> ConvertResult:
    mode = ctx.attr("coordinate_transformation_mode", "half_pixel")
    return _resize(ctx, 2, 3, mode, roi_index=1)


@converter("Upsample", since=9)
def upsample(ctx: NodeContext) -> ConvertResult:
    return _resize(ctx, 1, 99, "asymmetric", rounding="floor")
