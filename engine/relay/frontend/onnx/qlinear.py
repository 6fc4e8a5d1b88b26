"""onnxruntime's quantized operators of the com.microsoft domain, as its quantizer emits
them in QOperator format: QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat and
QGemm, and the MatMulIntegerToFloat / DynamicQuantizeMatMul its graph optimizer fuses
dynamic quantization into.

Each computes what onnxruntime's CPU kernel computes on x86-64 (MLAS), to the bit where
its arithmetic is expressible here:

- QLinearAdd: MLAS's AVX2 kernel takes the raw 8-bit values to float32 and computes
  `a * (sa/sc) + (b * (sb/sc) + F)` with fused multiply-adds, F = `zc - ((sa/sc) * za +
  (sb/sc) * zb)`, rounding half to even; a one-element operand is folded into F first.
  A fused multiply-add is one rounding of the exact `a * r + t`: with 8-bit `a` and
  float32 `r` the product is exact in float64, so float64 arithmetic cast to float32
  reproduces it (barring a double rounding at an exact float32 tie, which needs a sum
  beyond float64's 53 bits: none in 8-bit operands).
- QLinearMul: `(a - za) * (b - zb)` exact in int32, times `sa * sb / sc` in float32,
  plus zc, rounded half to even.
- QLinearGlobalAveragePool: the int32 sum minus `zx * N`, times `sx / (sy * N)` in
  float32, rounded, plus zy (a qnn.requantize computing in float32).
- QLinearSigmoid, QLinearLeakyRelu: onnxruntime builds a 256-entry table of
  `quantize(f(dequantize(q)))`; so do qnn.sigmoid and qnn.leaky_relu (TVM's table ops):
  exact but where our float32 sigmoid and MLAS's could differ in the last bit right at a
  rounding tie (at most 1 LSB; none seen).
- QLinearAveragePool: the float pool of the dequantized values, `round(y / sy + zy)`
  (the zero point added before rounding, as onnxruntime's kernel does).
- QLinearSoftmax: onnxruntime's table method: `exp((x - max(x) + shift) * sx)` per
  value (computed in float64 at import, stored float32), summed in float32, each output
  `round(e * floor(1 / sy) / sum) + zy`. The float32 sum's order may differ from
  onnxruntime's sequential sum in the last bit (at most 1 LSB at a tie).
- QLinearConcat: qnn.concatenate (each input requantized to the output's parameters).
- QGemm: qnn.dense `(A - za) @ (B - zb)` plus C in int32, requantized by
  `alpha * sa * sb / sy` in float32 as QLinearMatMul is; without y_scale a float output
  `acc * alpha * sa * sb`.
"""

from __future__ import annotations

import math

import numpy as np

import engine.relay as relay
from engine.ir.dtype import iinfo
from engine.ir.expr import Expr
from engine.relay import qnn
from engine.relay.frontend.onnx.nn import average_pool_of, matmul_of
from engine.relay.frontend.onnx.quantize import (
    KERNEL_TYPES,
    dynamic_quantize,
    int32_operand,
    int32_zero_point,
    integer_matmul,
    requantize_onnxruntime,
    scalar_param,
    scale_product,
)
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis

MICROSOFT = "com.microsoft"


def _float(x: Expr) -> Expr:
    return relay.cast(x, "float32")


def _saturate(x: Expr, dtype: str) -> Expr:
    """A float32 of integer values (or an int32) clipped to `dtype` and cast to it."""
    info = iinfo(dtype)
    q = relay.cast(x, "int32")
    return relay.cast(relay.clip(q, int(info.min), int(info.max)), dtype)


def _quantized_input(ctx: NodeContext, index: int) -> Expr:
    if ctx.dtype(index) not in KERNEL_TYPES:
        raise ctx.fail(f"a {ctx.dtype(index)} input is not supported (int8, uint8 and "
                       "int16 are)")
    return ctx.input(index)


def _zp_float(ctx: NodeContext, index: int) -> Expr:
    return _float(int32_zero_point(ctx, index))


def _fma(a: Expr, b: Expr, c: Expr) -> Expr:
    """float32(a * b + c) rounded once, as a fused multiply-add (exact in float64 for
    the 8-bit times float32 products used here)."""
    wide = relay.add(relay.multiply(relay.cast(a, "float64"), relay.cast(b, "float64")),
                     relay.cast(c, "float64"))
    return relay.cast(wide, "float32")


@converter(f"{MICROSOFT}.QLinearAdd")
def qlinear_add(ctx: NodeContext) -> ConvertResult:
    """Inputs A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point."""
    a, b = _quantized_input(ctx, 0), _quantized_input(ctx, 3)
    c_scale = scalar_param(ctx, 6)
    ratio_a = relay.divide(scalar_param(ctx, 1), c_scale)
    ratio_b = relay.divide(scalar_param(ctx, 4), c_scale)
    shifts = relay.add(relay.multiply(ratio_a, _zp_float(ctx, 2)),
                       relay.multiply(ratio_b, _zp_float(ctx, 5)))
    fixed = relay.subtract(_zp_float(ctx, 7), shifts)
    a_one, b_one = _one_element(ctx, 0), _one_element(ctx, 3)
    if b_one and not a_one:
        fixed = relay.add(fixed, relay.multiply(_float(b), ratio_b))
        out = _fma(_float(a), ratio_a, fixed)
    elif a_one and not b_one:
        fixed = relay.add(fixed, relay.multiply(_float(a), ratio_a))
        out = _fma(_float(b), ratio_b, fixed)
    else:
        out = _fma(_float(a), ratio_a, _fma(_float(b), ratio_b, fixed))
    return _saturate(relay.round(out), ctx.dtype(0))


def _one_element(ctx: NodeContext, index: int) -> bool:
    return int(np.prod(ctx.static_shape(index))) == 1


@converter(f"{MICROSOFT}.QLinearMul")
def qlinear_mul(ctx: NodeContext) -> ConvertResult:
    """Inputs as QLinearAdd's: `(a - za) * (b - zb)` in int32, scaled in float32."""
    a = relay.subtract(relay.cast(_quantized_input(ctx, 0), "int32"), int32_zero_point(ctx, 2))
    b = relay.subtract(relay.cast(_quantized_input(ctx, 3), "int32"), int32_zero_point(ctx, 5))
    ratio = relay.divide(relay.multiply(scalar_param(ctx, 1), scalar_param(ctx, 4)),
                         scalar_param(ctx, 6))
    out = relay.add(relay.multiply(_float(relay.multiply(a, b)), ratio), _zp_float(ctx, 7))
    return _saturate(relay.round(out), ctx.dtype(0))


@converter(f"{MICROSOFT}.QLinearGlobalAveragePool")
def qlinear_global_average_pool(ctx: NodeContext) -> ConvertResult:
    """Inputs X, x_scale, x_zero_point, y_scale, y_zero_point; `channels_last` 0 or 1."""
    x = _quantized_input(ctx, 0)
    shape = ctx.static_shape(0)
    channels_last = int(ctx.attr("channels_last", 0))
    axes = list(range(1, len(shape) - 1)) if channels_last else list(range(2, len(shape)))
    count = int(np.prod([shape[a] for a in axes]))
    total = relay.sum(relay.cast(x, "int32"), axis=axes, keepdims=True)
    acc = relay.subtract(total, relay.multiply(int32_zero_point(ctx, 2),
                                               relay.const(count, "int32")))
    # the multiplier sx / (sy * N): the sum requantized to the output scale times N
    in_scale = scale_product(ctx, [1])
    out_scale = scale_product(ctx, [3, float(count)])
    if in_scale is None or out_scale is None:
        raise ctx.fail("x_scale and y_scale must be known at import time")
    return requantize_onnxruntime(acc, in_scale, out_scale, int32_zero_point(ctx, 4),
                                  ctx.dtype(0), axis=-1)


def _dequantized(ctx: NodeContext, index: int = 0) -> Expr:
    return qnn.op.dequantize(_quantized_input(ctx, index), scalar_param(ctx, index + 1),
                             int32_zero_point(ctx, index + 2))


def _table_params(ctx: NodeContext) -> tuple[Expr, Expr, Expr, Expr]:
    return (scalar_param(ctx, 1), int32_zero_point(ctx, 2), scalar_param(ctx, 3),
            int32_zero_point(ctx, 4))


@converter(f"{MICROSOFT}.QLinearSigmoid")
def qlinear_sigmoid(ctx: NodeContext) -> ConvertResult:
    """Inputs X, X_scale, X_zero_point, Y_scale, Y_zero_point: qnn.sigmoid."""
    return qnn.op.sigmoid(_quantized_input(ctx, 0), *_table_params(ctx))


@converter(f"{MICROSOFT}.QLinearLeakyRelu")
def qlinear_leaky_relu(ctx: NodeContext) -> ConvertResult:
    """Inputs as QLinearSigmoid's; attribute alpha (0.01): qnn.leaky_relu."""
    alpha = float(ctx.attr("alpha", 0.01))
    return qnn.op.leaky_relu(_quantized_input(ctx, 0), alpha, *_table_params(ctx))


@converter(f"{MICROSOFT}.QLinearAveragePool")
def qlinear_average_pool(ctx: NodeContext) -> ConvertResult:
    """Inputs X, x_scale, x_zero_point, y_scale, y_zero_point and AveragePool's
    attributes: the float pool of the dequantized input, then `round(y / sy + zy)` (the
    zero point added before rounding, as onnxruntime's kernel does)."""
    if int(ctx.attr("channels_last", 0)):
        raise ctx.fail("channels_last=1 is not supported")
    pooled = average_pool_of(ctx, _dequantized(ctx))
    shifted = relay.add(relay.divide(pooled, scalar_param(ctx, 3)), _zp_float(ctx, 4))
    return _saturate(relay.round(shifted), ctx.dtype(0))


@converter(f"{MICROSOFT}.QLinearConcat")
def qlinear_concat(ctx: NodeContext) -> ConvertResult:
    """Inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input."""
    count = (len(ctx.inputs) - 2) // 3
    if count < 1 or len(ctx.inputs) != 2 + 3 * count:
        raise ctx.fail("inputs must be Y_scale, Y_zero_point and (X, scale, zero point) "
                       "triples")
    axis = norm_axis(int(ctx.attr("axis", 0)), ctx.rank(2))
    firsts = [2 + 3 * k for k in range(count)]
    return qnn.op.concatenate([_quantized_input(ctx, k) for k in firsts],
                              [scalar_param(ctx, k + 1) for k in firsts],
                              [int32_zero_point(ctx, k + 2) for k in firsts],
                              scalar_param(ctx, 0), int32_zero_point(ctx, 1), axis=axis)


# --- softmax ---------------------------------------------------------------------------
def _softmax_table(x_scale: float, reduce_len: int) -> np.ndarray:
    """onnxruntime's exp table: entry i is exp((i - 255 + shift) * x_scale) (float64,
    stored float32), shift keeping a row's sum within float32's range."""
    shift = max(0.0, math.log(float(np.finfo(np.float32).max) / reduce_len) - 5) / x_scale
    i = np.arange(256, dtype="float64")
    return np.exp((i - 255 + shift) * np.float64(x_scale)).astype("float32")


@converter(f"{MICROSOFT}.QLinearSoftmax")
def qlinear_softmax(ctx: NodeContext) -> ConvertResult:
    """Inputs X, X_scale, X_zero_point, Y_scale, Y_zero_point; attributes axis and opset
    (below 13 the softmax runs over the flattened dims from axis on, as Softmax did)."""
    x = _quantized_input(ctx, 0)
    shape = ctx.static_shape(0)
    opset = int(ctx.attr("opset", 13))
    axis = norm_axis(int(ctx.attr("axis", -1 if opset >= 13 else 1)), len(shape))
    axes = list(range(axis, len(shape))) if opset < 13 else [axis]
    reduce_len = int(np.prod([shape[a] for a in axes]))
    x_scale = float(np.asarray(ctx.const(1, "X_scale")).reshape(-1)[0])
    table = relay.const(_softmax_table(x_scale, reduce_len))
    xi = relay.cast(x, "int32")
    index = relay.add(relay.subtract(xi, relay.max(xi, axis=axes, keepdims=True)),
                      relay.const(255, "int32"))
    exps = relay.take(table, index)
    total = relay.sum(exps, axis=axes, keepdims=True)
    y_scale = float(np.asarray(ctx.const(3, "Y_scale")).reshape(-1)[0])
    inverse = relay.const(np.float32(math.floor(np.float32(1.0) / np.float32(y_scale))))
    scaled = relay.round(relay.divide(relay.multiply(exps, inverse), total))
    q = relay.add(relay.cast(scaled, "int32"), int32_zero_point(ctx, 4))
    return _saturate(q, ctx.dtype(0))


# --- QGemm -----------------------------------------------------------------------------
@converter(f"{MICROSOFT}.QGemm")
def qgemm(ctx: NodeContext) -> ConvertResult:
    """Inputs A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32), y_scale,
    y_zero_point; attributes alpha, transA, transB. B's scale and zero point may be per
    column (per output unit)."""
    a = _quantized_input(ctx, 0)
    b = _quantized_input(ctx, 3)
    if int(ctx.attr("transA", 0)):
        a = relay.transpose(a, axes=[1, 0])
    weight = b if int(ctx.attr("transB", 0)) else relay.transpose(b, axes=[1, 0])
    b_shape = ctx.static_shape(3)
    units = b_shape[0] if int(ctx.attr("transB", 0)) else b_shape[1]
    b_scale = ctx.input(4) if not _one_element(ctx, 4) else scalar_param(ctx, 4)
    acc = qnn.op.dense(a, weight, int32_zero_point(ctx, 2), int32_zero_point(ctx, 5),
                       scalar_param(ctx, 1), b_scale, units=units)
    if ctx.has(6):
        acc = relay.add(acc, relay.cast(ctx.input(6), "int32"))
    alpha = float(ctx.attr("alpha", 1.0))
    if not ctx.has(7):
        scale = relay.multiply(relay.multiply(relay.const(np.float32(alpha)),
                                              scalar_param(ctx, 1)), b_scale)
        return relay.multiply(_float(acc), scale)
    in_scale, out_scale = scale_product(ctx, [alpha, 1, 4]), scale_product(ctx, [7])
    if in_scale is None or out_scale is None:
        raise ctx.fail("a_scale, b_scale and y_scale must be known at import time")
    out_dtype = ctx.dtype(8) if ctx.has(8) else "uint8"
    return requantize_onnxruntime(acc, in_scale, out_scale, int32_zero_point(ctx, 8),
                                  out_dtype, axis=-1)


@converter(f"{MICROSOFT}.MatMulIntegerToFloat")
def matmul_integer_to_float(ctx: NodeContext) -> ConvertResult:
    """Inputs A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias:
    float(MatMulInteger(A, B)) * (a_scale * b_scale) + bias."""
    acc = integer_matmul(ctx, 0, 1, 4, 5, scales=(2, 3))
    scale = relay.multiply(ctx.input(2), ctx.input(3))
    out = relay.multiply(_float(acc), scale)
    return relay.add(out, ctx.input(6)) if ctx.has(6) else out


@converter(f"{MICROSOFT}.DynamicQuantizeMatMul")
def dynamic_quantize_matmul(ctx: NodeContext) -> ConvertResult:
    """Inputs A (float), B (8-bit), b_scale, b_zero_point, bias: A quantized as
    DynamicQuantizeLinear does, then float(MatMulInteger) * (a_scale * b_scale) + bias."""
    q, a_scale, a_zp = dynamic_quantize(ctx.input(0), ctx.dtype(0))
    a = relay.subtract(relay.cast(q, "int32"), relay.cast(a_zp, "int32"))
    acc = matmul_of(ctx, a, int32_operand(ctx, 1, 3, -1))
    out = relay.multiply(_float(acc), relay.multiply(a_scale, ctx.input(2)))
    return relay.add(out, ctx.input(4)) if ctx.has(4) else out
