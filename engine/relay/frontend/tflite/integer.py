"""Full-integer TFLite kernels (int8 / uint8 activations, and int16 activations with int8
weights): QNN ops for the kernels, TFLite's own integer arithmetic around them.

- CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, BATCH_MATMUL: `qnn.conv2d` / `qnn.dense` /
  an int32 batch_matmul of zero-point-shifted operands, plus the int32 (int16x8: int64)
  bias, then `qnn.requantize(rounding="TFLITE")` from the exact float64 product of the
  input and weight scales (TFLite's multiplier, per channel; int16x8: "TFLITE_INT16", the
  int64 form with a 16-bit significand). Per-channel FULLY_CONNECTED rounds once, as its
  reference kernel does: that is composed (`fixed_point`).
- ADD / SUB: TFLite's formula, not `qnn.add`'s (which requantizes each side to the output
  and rounds once; it lands 1 LSB away on about a quarter of random int8 pairs): both
  sides shifted left by 20 (int16: 15), each scaled by `scale / (2 * max scale)`, summed,
  then scaled to the output, three roundings.
- MUL, QUANTIZE (int to int): `qnn.requantize` of the int32 product (or value) (int16
  MUL: TFLite computes its multiplier in float32, so it is composed);
  SQUARED_DIFFERENCE: its fixed-point formula.
- MEAN: TFLite 2.21's QuantizedMeanOrSum: the int32 sum less count * zero point, with
  1 / count folded into the fixed-point multiplier in integers.
- LOGISTIC, TANH, HARD_SWISH, GELU, SOFTMAX, ...: lookup tables (`tables`).
- Fused activations clamp in the quantized domain (TFLite's
  `CalculateActivationRangeQuantized`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.tflite.context import OpContext, integer_converter
from engine.relay.frontend.tflite.fixed_point import (
    multiply_by_fixed,
    multiply_by_quantized,
    multiply_single_rounding,
    quantize_multiplier,
)
from engine.relay.frontend.tflite.model import TensorRecord
from engine.relay.frontend.tflite.nn import (
    batched,
    dilation_of,
    fc_keep_dims,
    fc_operands,
    strides_of,
    window_padding,
)
from engine.relay.frontend.tflite.quantize import round_half_away
from engine.relay.qnn import op as qnn


@dataclass(frozen=True)
class QParams:
    scale: np.ndarray  # float32, per tensor (size 1) or per axis
    zero_point: np.ndarray  # int64
    axis: int
    dtype: str

    @property
    def s(self) -> float:
        return float(self.scale.reshape(-1)[0])

    @property
    def zp(self) -> int:
        return int(self.zero_point.reshape(-1)[0])

    @property
    def limits(self) -> tuple[int, int]:
        info = np.iinfo(self.dtype)
        return int(info.min), int(info.max)


def qparams(ctx: OpContext, tensor: TensorRecord) -> QParams:
    if tensor.quant is None:
        raise ctx.fail(f"{tensor.dtype} tensor {tensor.name!r} has no quantization parameters")
    return QParams(tensor.quant.scale.astype("float32"),
                   tensor.quant.zero_point.astype("int64"), tensor.quant.axis, tensor.dtype)


def const_i32(value: int | np.ndarray) -> Expr:
    return relay.const(np.asarray(value, "int32"))


def const_f32(value: float | np.floating | np.ndarray) -> Expr:
    return relay.const(np.asarray(value, "float32"))


def activation_range(ctx: OpContext, out: QParams) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the fused activation's bounds in output steps."""
    lo, hi = out.limits
    code = int(ctx.option("FusedActivationFunction", 0))

    def q(value: float) -> int:
        return out.zp + int(round_away(np.float32(value) / np.float32(out.s)))

    bounds = {0: (lo, hi), 1: (max(lo, q(0.0)), hi), 2: (max(lo, q(-1.0)), min(hi, q(1.0))),
              3: (max(lo, q(0.0)), min(hi, q(6.0)))}
    if code not in bounds:
        raise ctx.fail(f"fused activation {code} on a quantized output is not supported")
    return bounds[code]


def round_away(x: np.ndarray | np.floating | float) -> np.ndarray:
    x = np.asarray(x)
    return np.trunc(x + np.copysign(np.asarray(0.5, x.dtype), x))


def finish(ctx: OpContext, scaled: Expr, out: QParams) -> Expr:
    """+ output zero point, clamp to the fused activation's range, to the output dtype."""
    lo, hi = activation_range(ctx, out)
    shifted = relay.add(scaled, relay.const(np.asarray(out.zp, "int64")))
    return relay.cast(relay.clip(shifted, float(lo), float(hi)), out.dtype)


def _wide(dtype: str) -> bool:
    return dtype == "int16"


# --- kernels ------------------------------------------------------------------------
def _weight_params(ctx: OpContext, index: int = 1) -> tuple[QParams, Expr, Expr]:
    """The weight's parameters, its zero point (int32) and scale (float32) as qnn operands."""
    wq = qparams(ctx, ctx.tensor(index))
    zero = const_i32(wq.zero_point) if wq.zero_point.size > 1 and wq.zero_point.any() else \
        const_i32(wq.zp)
    scale = const_f32(wq.scale) if wq.scale.size > 1 else const_f32(wq.s)
    return wq, zero, scale


def _bias_and_rescale(ctx: OpContext, acc: Expr, xq: QParams, wq: QParams,
                      single_rounding: bool = False) -> Expr:
    out = qparams(ctx, ctx.out_tensor())
    wide = _wide(xq.dtype)
    if ctx.has(2):
        bias = ctx.input(2)
        acc = relay.add(acc, relay.cast(bias, "int64" if wide else "int32"))
    product = np.float64(xq.s) * wq.scale.astype("float64")  # exact: two float32 scales
    if single_rounding:
        return finish(ctx, multiply_single_rounding(acc, product / np.float64(out.s)), out)
    return requantized(ctx, acc, product, out, wide)


def requantized(ctx: OpContext, acc: Expr, in_scale: np.ndarray, out: QParams,
                wide: bool = False) -> Expr:
    """`qnn.requantize` with TFLite's rounding (the int16x8 kernels' int64 form when
    `wide`) from the accumulator's (float64) scale, per channel along the last axis, then
    the fused activation's clamp."""
    scale = relay.const(in_scale if in_scale.size > 1 else in_scale.reshape(()))
    q = qnn.requantize(acc, scale, const_i32(0), const_f32(out.s), const_i32(out.zp), axis=-1,
                       rounding="TFLITE_INT16" if wide else "TFLITE", out_dtype=out.dtype)
    return _clamped(ctx, q)


def _kernel_const(ctx: OpContext, data: np.ndarray) -> Expr:
    expr = ctx.input(1)
    return relay.const(np.ascontiguousarray(data), span=expr.span)


def _conv(ctx: OpContext, weight: np.ndarray, groups: int, channels: int, layout: str
          ) -> Expr:
    xq = qparams(ctx, ctx.tensor(0))
    wq, w_zero, w_scale = _weight_params(ctx)
    kernel = weight.shape[:2]
    strides, dilation = strides_of(ctx), dilation_of(ctx)
    acc = qnn.conv2d(ctx.input(0), _kernel_const(ctx, weight), const_i32(xq.zp), w_zero,
                     const_f32(xq.s), w_scale, kernel_size=kernel, channels=channels,
                     strides=strides, padding=window_padding(ctx, kernel, strides, dilation),
                     dilation=dilation, groups=groups, data_layout="NHWC",
                     kernel_layout=layout, out_dtype="int64" if _wide(xq.dtype) else "int32")
    return _bias_and_rescale(ctx, acc, xq, wq)


@integer_converter("CONV_2D")
def conv2d(ctx: OpContext) -> Expr:
    out_c, _, _, in_c = ctx.tensor(1).shape
    weight = ctx.value(1).transpose(1, 2, 3, 0)
    return _conv(ctx, weight, ctx.shape(0)[3] // in_c, out_c, "HWIO")


@integer_converter("DEPTHWISE_CONV_2D")
def depthwise_conv2d(ctx: OpContext) -> Expr:
    _, kh, kw, total = ctx.tensor(1).shape
    in_c = ctx.shape(0)[3]
    weight = ctx.value(1).reshape(kh, kw, in_c, total // in_c)
    return _conv(ctx, weight, in_c, total, "HWOI")


@integer_converter("FULLY_CONNECTED")
def fully_connected(ctx: OpContext) -> Expr:
    units, _, x = fc_operands(ctx)
    xq = qparams(ctx, ctx.tensor(0))
    wq, w_zero, w_scale = _weight_params(ctx)
    acc = qnn.dense(x, ctx.input(1), const_i32(xq.zp), w_zero, const_f32(xq.s), w_scale, units=units,
                    out_dtype="int64" if _wide(xq.dtype) else "int32")
    out = _bias_and_rescale(ctx, acc, xq, wq, single_rounding=wq.scale.size > 1)
    return fc_keep_dims(ctx, out, units)


def _shifted(ctx: OpContext, index: int, dtype: str = "int32") -> tuple[Expr, QParams]:
    q = qparams(ctx, ctx.tensor(index))
    x = relay.cast(ctx.input(index), dtype)
    return (relay.subtract(x, relay.const(np.asarray(q.zp, dtype))) if q.zp else x), q


@integer_converter("BATCH_MATMUL")
def batch_matmul(ctx: OpContext) -> Expr:
    a, aq = _shifted(ctx, 0)
    b, bq = _shifted(ctx, 1)
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    adj_x, adj_y = bool(ctx.option("AdjX", False)), bool(ctx.option("AdjY", False))
    batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    acc = relay.nn.batch_matmul(batched(a, a_shape, batch), batched(b, b_shape, batch),
                                out_dtype="int64" if _wide(aq.dtype) else "int32",
                                transpose_a=adj_x, transpose_b=adj_y)
    out = qparams(ctx, ctx.out_tensor())
    product = np.asarray(np.float64(aq.s) * np.float64(bq.s))
    result = requantized(ctx, acc, product, out, _wide(aq.dtype))
    rows = a_shape[-1] if adj_x else a_shape[-2]
    cols = b_shape[-2] if adj_y else b_shape[-1]
    return result if len(batch) == 1 else relay.reshape(result, newshape=[*batch, rows, cols])


# --- element-wise arithmetic ----------------------------------------------------------
def _scaled_sides(ctx: OpContext, left_shift: int) -> tuple[Expr, Expr, float]:
    """Both inputs shifted left and scaled by scale / (2 * max scale) (ADD, SUB and
    SQUARED_DIFFERENCE prepare their inputs alike)."""
    (x1, q1), (x2, q2) = _shifted(ctx, 0, "int64"), _shifted(ctx, 1, "int64")
    twice_max = 2.0 * max(float(q1.s), float(q2.s))
    shift = relay.const(np.asarray(left_shift, "int64"))
    sides = [multiply_by_quantized(relay.left_shift(x, shift), np.asarray(float(q.s) / twice_max))
             for x, q in ((x1, q1), (x2, q2))]
    return sides[0], sides[1], twice_max


@integer_converter("ADD", "SUB")
def add_sub(ctx: OpContext) -> Expr:
    out = qparams(ctx, ctx.out_tensor())
    left_shift = 15 if _wide(out.dtype) else 20
    a, b, twice_max = _scaled_sides(ctx, left_shift)
    total = relay.add(a, b) if ctx.op.op_type == "ADD" else relay.subtract(a, b)
    real = twice_max / ((1 << left_shift) * float(out.s))
    return finish(ctx, multiply_by_quantized(total, np.asarray(real)), out)


@integer_converter("SQUARED_DIFFERENCE")
def squared_difference(ctx: OpContext) -> Expr:
    out = qparams(ctx, ctx.out_tensor())
    a, b, twice_max = _scaled_sides(ctx, 7)
    diff = relay.subtract(a, b)
    real = twice_max * twice_max / ((1 << 14) * float(out.s))
    return finish(ctx, multiply_by_quantized(relay.multiply(diff, diff), np.asarray(real)), out)


@integer_converter("MUL")
def mul(ctx: OpContext) -> Expr:
    """(a - za) * (b - zb) in int32, requantized from the product of the scales (TFLite's
    multiplier: that product in double over the output scale)."""
    (x1, q1), (x2, q2) = _shifted(ctx, 0), _shifted(ctx, 1)
    out = qparams(ctx, ctx.out_tensor())
    if _wide(out.dtype):  # int16: TFLite computes this multiplier in float32
        real = np.float32(np.float32(q1.s) * np.float32(q2.s)) / np.float32(out.s)
        product = relay.multiply(x1, x2)
        return finish(ctx, multiply_by_quantized(product, np.asarray(real, "float64")), out)
    product = np.asarray(np.float64(q1.s) * np.float64(q2.s))
    return requantized(ctx, relay.multiply(x1, x2), product, out)


@integer_converter("QUANTIZE")
def requantize(ctx: OpContext) -> Expr:
    """int -> int (e.g. a uint8 model input to the int8 kernels): Requantize, the
    multiplier `input scale / output scale` in double (float -> int is the float
    converter's: the input is not quantized)."""
    xq, out = qparams(ctx, ctx.tensor(0)), qparams(ctx, ctx.out_tensor())
    return qnn.requantize(ctx.input(0), relay.const(np.asarray(xq.s, "float64")), const_i32(xq.zp),
                          const_f32(out.s), const_i32(out.zp), rounding="TFLITE", out_dtype=out.dtype)


# --- reductions and windows -------------------------------------------------------------
@integer_converter("MEAN")
def mean(ctx: OpContext) -> Expr:
    """TFLite's QuantizedMeanOrSum: the sum less count * zero point, rescaled by the
    `input scale / output scale` multiplier with 1 / count folded into it in integers
    (the significand shifted left by floor(log2(count)), at most 32, and divided by the
    count, truncating); the sum is int32 for int16 inputs too."""
    xq, out = qparams(ctx, ctx.tensor(0)), qparams(ctx, ctx.out_tensor())
    shape = ctx.shape(0)
    axes = sorted({a % len(shape) for a in ctx.ints(1)})
    count = int(np.prod([shape[a] for a in axes]))
    total = relay.sum(relay.cast(ctx.input(0), "int64"), axis=axes,
                      keepdims=bool(ctx.option("KeepDims", False)))
    if xq.zp:
        total = relay.subtract(total, relay.const(np.asarray(xq.zp * count, "int64")))
    sig, shift = quantize_multiplier(float(np.float64(xq.s) / np.float64(out.s)))
    fold = min(count.bit_length() - 1, 32, 31 + shift)
    sig, shift = (sig << fold) // count, shift - fold
    return finish(ctx, multiply_by_fixed(total, np.asarray(sig), np.asarray(shift)), out)


def _window(ctx: OpContext) -> dict[str, Any]:
    kernel = int(ctx.options["FilterHeight"]), int(ctx.options["FilterWidth"])
    strides = strides_of(ctx)
    return {"pool_size": kernel, "strides": strides, "layout": "NHWC",
            "padding": window_padding(ctx, kernel, strides, (1, 1))}


def _clamped(ctx: OpContext, x: Expr) -> Expr:
    out = qparams(ctx, ctx.out_tensor())
    lo, hi = activation_range(ctx, out)
    if (lo, hi) == out.limits:
        return x
    return relay.clip(x, float(lo), float(hi))


@integer_converter("MAX_POOL_2D")
def max_pool(ctx: OpContext) -> Expr:
    return _clamped(ctx, relay.nn.max_pool2d(ctx.input(0), **_window(ctx)))


@integer_converter("AVERAGE_POOL_2D")
def avg_pool(ctx: OpContext) -> Expr:
    """The window's integer sum over its count, rounded half away from zero (exact in
    float32: the quotient is never within an ulp of a tie it is not on)."""
    out = qparams(ctx, ctx.out_tensor())
    mean_value = relay.nn.avg_pool2d(relay.cast(ctx.input(0), "float32"),
                                     count_include_pad=False, **_window(ctx))
    lo, hi = activation_range(ctx, out)
    return relay.cast(relay.clip(round_half_away(mean_value), float(lo), float(hi)), out.dtype)


@integer_converter("PAD", "PADV2")
def pad(ctx: OpContext) -> Expr:
    widths = [(int(b), int(e)) for b, e in ctx.value(1).reshape(-1, 2)]
    fill = int(ctx.value(2).reshape(-1)[0]) if ctx.has(2) and len(ctx.op.inputs) > 2 else \
        qparams(ctx, ctx.tensor(0)).zp
    return relay.nn.pad(ctx.input(0), pad_width=widths, pad_value=float(fill))


@integer_converter("CONCATENATION")
def concatenation(ctx: OpContext) -> Expr:
    out = qparams(ctx, ctx.out_tensor())
    parts = []
    for i in range(len(ctx.inputs)):
        q = qparams(ctx, ctx.tensor(i))
        same = q.s == out.s and q.zp == out.zp
        parts.append(ctx.input(i) if same else _requantize_float(ctx.input(i), q, out))
    return _clamped(ctx, relay.concatenate(parts, axis=int(ctx.option("Axis", 0))))


def _requantize_float(x: Expr, q: QParams, out: QParams) -> Expr:
    """TFLite's ConcatenationWithScaling: round(x * scale + bias) + zp in float."""
    scale = np.float32(q.s) * (np.float32(1.0) / np.float32(out.s))
    bias = np.float32(-q.zp) * scale
    value = relay.add(relay.multiply(relay.cast(x, "float32"), const_f32(scale)), const_f32(bias))
    lo, hi = out.limits
    rounded = relay.add(round_half_away(value), const_f32(np.float32(out.zp)))
    return relay.cast(relay.clip(rounded, float(lo), float(hi)), out.dtype)
