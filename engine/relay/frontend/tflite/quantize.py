"""Quantized tensors: QUANTIZE / DEQUANTIZE (float <-> int8/uint8/int16 and fp16 weights),
DENSIFY, and the dynamic-range ("hybrid") arithmetic TFLite's kernels use when a float
activation meets int8 weights.

TFLite's hybrid kernels (conv.cc, depthwise_conv.cc, fully_connected.cc, with
tensor_utils' SymmetricQuantizeFloats / AsymmetricQuantizeFloats) quantize the float input
on the fly, one scale per batch row, accumulate int8 x int8 in int32, and rescale by
`input scale * weight scale[channel]` before the bias and the fused activation:

- symmetric (per-tensor CONV_2D weights; FULLY_CONNECTED without asymmetric_quantize_inputs):
  range = max|x|, scale = range / 127, q = clamp(round(x * (127 / range)), -127, 127);
- asymmetric (per-channel CONV_2D, every DEPTHWISE_CONV_2D, FULLY_CONNECTED with
  asymmetric_quantize_inputs): the range [min(x, 0), max(x, 0)] in double, scale =
  range / 255, the zero point taken from whichever end loses less and nudged into
  [-128, 127], q = clamp(round(x * (1 / scale)) + zp, -128, 127) (rounded before the
  offset is added: what the reference interpreter computes on x86, checked element by
  element against tflite 2.21's builtin kernels); padding counts as zp.

`round` is C's (half away from zero). Composed here from Relay ops, so every pass and
relay.build handle them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import engine.relay as relay
from engine.ir.expr import Constant, Expr
from engine.relay.frontend.tflite.context import OpContext, converter
from engine.relay.frontend.tflite.model import Quantization, TensorRecord

QUANTIZED_DTYPES = ("int8", "uint8", "int16")


def _f32(value: float) -> Expr:
    return relay.const(value, "float32")


def _f64(value: float) -> Expr:
    return relay.const(value, "float64")


def round_half_away(x: Expr, dtype: str = "float32") -> Expr:
    """C's round(): trunc(x) plus sign(x) where the fraction is at least one half (exact:
    x - trunc(x) is representable)."""
    whole = relay.trunc(x)
    half = relay.greater_equal(relay.abs(relay.subtract(x, whole)),
                               relay.const(0.5, dtype))
    return relay.add(whole, relay.multiply(relay.sign(x), relay.cast(half, dtype)))


def _axis_shape(quant: Quantization, rank: int) -> list[int]:
    shape = [1] * rank
    if quant.scale.size > 1:
        shape[quant.axis] = quant.scale.size
    return shape


def _param(values: np.ndarray, shape: list[int], dtype: str) -> np.ndarray:
    return values.astype(dtype).reshape(shape if values.size > 1 else ())


def quant_params(tensor: TensorRecord) -> tuple[np.ndarray, np.ndarray]:
    """(scale, zero_point) broadcastable against the tensor (per-axis or per-tensor)."""
    quant = tensor.quant
    assert quant is not None
    shape = _axis_shape(quant, len(tensor.shape))
    return _param(quant.scale, shape, "float32"), _param(quant.zero_point, shape, "float32")


@converter("DEQUANTIZE")
def dequantize(ctx: OpContext) -> Expr:
    """fp16 weights become float32 constants; int8/uint8/int16 apply (q - zero_point) * scale
    in float32. Constant inputs are folded at import (as TVM's tflite frontend does)."""
    tensor = ctx.tensor(0)
    expr = ctx.input(0)
    if tensor.dtype in ("float16", "float32"):
        if isinstance(expr, Constant):
            return relay.const(expr.data.numpy().astype("float32"))
        return relay.cast(expr, "float32")
    if tensor.quant is None:
        raise ctx.fail(f"{tensor.dtype} tensor {tensor.name!r} has no quantization parameters")
    scale, zero = quant_params(tensor)
    if isinstance(expr, Constant):
        value = (expr.data.numpy().astype("float32") - zero) * scale
        return relay.const(value.astype("float32"))
    shifted = relay.subtract(relay.cast(expr, "float32"), relay.const(zero))
    return relay.multiply(shifted, relay.const(scale))


@converter("QUANTIZE")
def quantize(ctx: OpContext) -> Expr:
    """float32 -> int: clamp(round(x / scale) + zero_point) (TFLite's AffineQuantize)."""
    out = ctx.out_tensor()
    if ctx.tensor(0).dtype != "float32":
        raise ctx.fail(f"the {ctx.tensor(0).dtype} input {ctx.tensor(0).name!r} has no "
                       "quantization parameters to requantize from")
    if out.quant is None:
        raise ctx.fail(f"output tensor {out.name!r} has no quantization parameters")
    scale, zero = quant_params(out)
    info = np.iinfo(out.dtype)
    scaled = round_half_away(relay.divide(ctx.input(0), relay.const(scale)))
    q = relay.clip(relay.add(scaled, relay.const(zero)), float(info.min), float(info.max))
    return relay.cast(q, out.dtype)


@converter("DENSIFY")
def densify(ctx: OpContext) -> Expr:
    """The sparse constant was densified when the model was read (`sparse.densify`)."""
    expr = ctx.input(0)
    if not isinstance(expr, Constant):
        raise ctx.fail("DENSIFY of a run-time tensor (only constant sparse tensors exist)")
    return relay.const(expr.data.numpy(), span=expr.span)


# --- dynamic-range ("hybrid") kernels -------------------------------------------------------
def is_hybrid(ctx: OpContext, weight_index: int = 1) -> bool:
    return ctx.tensor(0).dtype == "float32" and ctx.tensor(weight_index).dtype in ("int8",
                                                                                    "uint8")


def _symmetric(x: Expr, axes: Sequence[int]) -> tuple[Expr, Expr]:
    """(q, scale) of SymmetricQuantizeFloats, one scale per row over `axes`."""
    top = relay.max(relay.abs(x), axis=list(axes), keepdims=True)
    top = relay.where(relay.equal(top, _f32(0.0)), _f32(127.0), top)  # all zero: q = 0
    scale = relay.divide(top, _f32(127.0))
    q = round_half_away(relay.multiply(x, relay.divide(_f32(127.0), top)))
    return relay.clip(q, -127.0, 127.0), scale


def _asymmetric(x: Expr, axes: Sequence[int]) -> tuple[Expr, Expr]:
    """(q - zero_point, scale) of AsymmetricQuantizeFloats, one (scale, zp) per row."""
    low = relay.cast(relay.minimum(relay.min(x, axis=list(axes), keepdims=True), _f32(0.0)),
                     "float64")
    high = relay.cast(relay.maximum(relay.max(x, axis=list(axes), keepdims=True), _f32(0.0)),
                      "float64")
    flat = relay.equal(low, high)
    scale = relay.where(flat, _f64(1.0), relay.divide(relay.subtract(high, low), _f64(255.0)))
    low_s, high_s = relay.divide(low, scale), relay.divide(high, scale)
    from_min = relay.subtract(_f64(-128.0), low_s)
    from_max = relay.subtract(_f64(127.0), high_s)
    use_min = relay.less(relay.add(_f64(128.0), relay.abs(low_s)),
                         relay.add(_f64(127.0), relay.abs(high_s)))
    nudged = relay.clip(round_half_away(relay.where(use_min, from_min, from_max), "float64"),
                        -128.0, 127.0)
    zero = relay.cast(relay.where(flat, _f64(0.0), nudged), "float32")
    scale32 = relay.cast(scale, "float32")
    inverse = relay.cast(relay.divide(_f64(1.0), relay.cast(scale32, "float64")), "float32")
    q = relay.add(round_half_away(relay.multiply(x, inverse)), zero)
    return relay.subtract(relay.clip(q, -128.0, 127.0), zero), scale32


def quantize_rows(x: Expr, axes: Sequence[int], asymmetric: bool) -> tuple[Expr, Expr]:
    """The int32 operand (q, or q - zero point) and the float32 per-row scale."""
    q, scale = _asymmetric(x, axes) if asymmetric else _symmetric(x, axes)
    return relay.cast(q, "int32"), scale


def weight_scale(ctx: OpContext, index: int, channel_axis: int) -> Expr:
    """The float32 per-output-channel (or per-tensor) scale of int8 weights, checked."""
    tensor = ctx.tensor(index)
    quant = tensor.quant
    if quant is None:
        raise ctx.fail(f"int8 weights {tensor.name!r} have no quantization parameters")
    if np.any(quant.zero_point != 0):
        raise ctx.fail(f"hybrid weights {tensor.name!r} have a non-zero zero point")
    if quant.scale.size > 1 and quant.axis != channel_axis:
        raise ctx.fail(f"weights {tensor.name!r} are quantized along axis {quant.axis}, not "
                       f"the output channels (axis {channel_axis})")
    return relay.const(quant.scale.astype("float32"))


def rescale(acc: Expr, input_scale: Expr, channel_scale: Expr) -> Expr:
    """float(acc) * (weight scale[c] * input scale[row])."""
    return relay.multiply(relay.cast(acc, "float32"), relay.multiply(channel_scale, input_scale))
