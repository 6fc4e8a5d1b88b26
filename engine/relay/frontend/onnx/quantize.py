"""ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, and the integer ops
MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.

The quantized layers import into the QNN dialect (TVM's `qnn.*`) where it computes them
exactly: QuantizeLinear / DequantizeLinear of float32 to and from int8, uint8 or int16
(int32 for dequantize), per tensor or per axis, as qnn.quantize / qnn.dequantize;
QLinearConv's 2-D convolution as qnn.conv2d, QLinearMatMul with a 2-D b as qnn.dense and
with batched operands (attention's) as qnn.batch_matmul over the broadcast leading dims
flattened (as MatMul's), their scales and zero points operands (expressions). The
dynamic-quantization products MatMulInteger and ConvInteger are the same qnn ops with
scales 1.0: the node has none (DynamicQuantizeLinear computes them at run time and the
graph multiplies them in float afterwards), and a qnn product's int32 result does not use
its scales, as in TVM's ONNX frontend; their zero points, run-time values too, are
expressions. A zero point per row of a (or per column of a batched b) is outside what
the qnn ops take: that product stays the int32 matmul of the shifted operands. Everything
else composes Relay ops
with the float semantics: blocked scales, 4- and 2-bit integers (ml_dtypes' types, one
value per byte), float8 (saturating as Cast does, `saturate` attribute) and
float4_e2m1fn; the integer ops take 8- and 16-bit integers.

The integer ops compute exactly as onnxruntime does: operands minus their zero points in
int32, products accumulated in int32; QLinear* then requantize in float32
(accumulator * (scale_a * scale_b / scale_y)), round half to even, add the output zero
point and saturate: a qnn.requantize with compute_dtype="float32"
(`requantize_onnxruntime`), or its float composition (`requantize_float`) where a
per-row scale of a meets a per-column one of b.
A QuantizeLinear whose scale is infinite (onnxruntime's calibration writes one for a
tensor holding -inf) sends the NaN quotient of an infinite input to the low bound, as
MLAS's clamp does."""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.dtype import FLOAT8_WITH_FINITE_MAX, iinfo, is_float
from engine.ir.expr import Expr
from engine.relay import qnn
from engine.relay.frontend.onnx.cast import cast_to
from engine.relay.frontend.onnx.nn import MatmulKernels, conv_of, conv_window, matmul_of
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis, onnx_dtype

QUANT_INTS = ("uint8", "int8", "uint16", "int16", "uint4", "int4", "uint2", "int2")
QNN_TYPES = ("uint8", "int8", "int16")  # what qnn.quantize / qnn.dequantize take
QUANT_FLOATS = (*FLOAT8_WITH_FINITE_MAX, "float4_e2m1fn")
INTEGER_OP_TYPES = ("uint8", "int8", "uint16", "int16")  # what the integer ops take
KERNEL_TYPES = ("uint8", "int8", "int16")  # what qnn.conv2d / qnn.dense take


def _broadcastable(ctx: NodeContext, index: int) -> Expr:
    """Input `index` (a scale or zero point) shaped to broadcast against input 0: a scalar as
    is, a vector along `axis`, a blocked tensor repeated `block_size` times along `axis`."""
    param, shape = ctx.input(index), ctx.static_shape(index)
    x_shape = ctx.static_shape(0)
    rank = len(x_shape)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return param
    axis = norm_axis(int(ctx.attr("axis", 1)), rank)
    block = int(ctx.attr("block_size", 0))
    if block > 0:
        repeated = relay.repeat(param, block, axis=axis)
        return relay.strided_slice(repeated, [0], [x_shape[axis]], axes=[axis])
    if len(shape) != 1:
        raise ctx.fail(f"a scale or zero point of shape {shape} needs block_size")
    return relay.reshape(param, newshape=[1] * axis + [shape[0]] + [1] * (rank - axis - 1))


def _quantized_dtype(ctx: NodeContext) -> str:
    if ctx.has(2):
        return ctx.dtype(2)
    output_dtype = int(ctx.attr("output_dtype", 0))
    return onnx_dtype(output_dtype) if output_dtype else "uint8"


def _quantize(x: Expr, scale: Expr, zero_point: Expr | None, src: str, dtype: str,
              saturate: bool = True) -> Expr:
    """saturate(round(x / scale) + zero_point) for an integer `dtype`; for a float one the
    quotient plus the zero point is cast (rounding to nearest even, saturating as Cast)."""
    scaled = relay.divide(x, scale)
    if dtype in QUANT_FLOATS:
        if zero_point is not None:
            scaled = relay.add(scaled, relay.cast(zero_point, src))
        return cast_to(scaled, src, dtype, saturate)
    info = iinfo(dtype)
    # a NaN quotient (a NaN input, or an infinite input over an infinite scale, which
    # onnxruntime's calibration writes for a tensor holding -inf) saturates low, as MLAS's
    # clamp (maxps) makes it
    lowest = relay.const(-np.inf, src)
    q = relay.round(relay.where(relay.isnan(scaled), lowest, scaled))
    if zero_point is not None:
        q = relay.add(q, relay.cast(zero_point, src))
    return relay.cast(relay.clip(q, float(info.min), float(info.max)), dtype)


def _qnn_axis(ctx: NodeContext, dtype: str, types: tuple[str, ...]) -> int | None:
    """The axis of a QuantizeLinear/DequantizeLinear that qnn.quantize/dequantize express
    exactly (float32 values and scale, an integer `dtype` among `types`, per tensor or per
    axis), or None when it needs the general composition (blocked, other types)."""
    if dtype not in types or ctx.dtype(1) != "float32" or int(ctx.attr("block_size", 0)):
        return None
    if int(ctx.attr("precision", 0)) not in (0, 1):
        return None
    rank, scale_shape = len(ctx.static_shape(0)), ctx.static_shape(1)
    if len(scale_shape) > 1:
        return None
    if not rank:
        return 0
    if int(np.prod(scale_shape)) == 1:
        return rank - 1  # per tensor: ONNX ignores `axis` (its default 1 may not exist)
    return norm_axis(int(ctx.attr("axis", 1)), rank)


def _finite(ctx: NodeContext, index: int) -> bool:
    """Whether input `index` (a scale) is not known to hold an infinity or a NaN."""
    value = ctx.value(index)
    return value is None or bool(np.all(np.isfinite(value)))


@converter("QuantizeLinear", since=10)
def quantize_linear(ctx: NodeContext) -> ConvertResult:
    """qnn.quantize where it computes the node exactly (float32 input and scale, int8,
    uint8 or int16, per tensor or per axis); the float composition otherwise."""
    dtype = _quantized_dtype(ctx)
    axis = _qnn_axis(ctx, dtype, QNN_TYPES) if ctx.dtype(0) == "float32" else None
    if axis is not None and _finite(ctx, 1):
        return qnn.op.quantize(ctx.input(0), ctx.input(1), int32_zero_point(ctx, 2), axis=axis,
                               out_dtype=dtype)
    if dtype not in QUANT_INTS and dtype not in QUANT_FLOATS:
        raise ctx.fail(f"quantizing to {dtype} is not supported (8-, 16-, 4- and 2-bit "
                       "integers, float8 and float4_e2m1fn are)")
    x, scale = ctx.input(0), _broadcastable(ctx, 1)
    precision = int(ctx.attr("precision", 0))
    src = onnx_dtype(precision) if precision else ctx.dtype(0)
    if not is_float(src):  # an int32 input is divided in the scale's type
        src = ctx.dtype(1)
    if ctx.dtype(0) != src:
        x = relay.cast(x, src)
    if ctx.dtype(1) != src:
        scale = relay.cast(scale, src)
    zero_point = _broadcastable(ctx, 2) if ctx.has(2) else None
    return _quantize(x, scale, zero_point, src, dtype, bool(ctx.attr("saturate", 1)))


@converter("DequantizeLinear", since=10)
def dequantize_linear(ctx: NodeContext) -> ConvertResult:
    """(x - zero_point) * scale: the difference exact (in int32, or float32 for a float
    `x`), the product in the output type."""
    src = ctx.dtype(0)
    float_out = int(ctx.attr("output_dtype", 0)) in (0, 1)
    axis = _qnn_axis(ctx, src, (*QNN_TYPES, "int32")) if float_out else None
    if axis is not None:
        return qnn.op.dequantize(ctx.input(0), ctx.input(1), int32_zero_point(ctx, 2), axis=axis)
    if src not in QUANT_INTS and src not in QUANT_FLOATS and src != "int32":
        raise ctx.fail(f"dequantizing {src} is not supported (8-, 16-, 32-, 4- and 2-bit "
                       "integers, float8 and float4_e2m1fn are)")
    out_dtype = int(ctx.attr("output_dtype", 0))
    dtype = onnx_dtype(out_dtype) if out_dtype else ctx.dtype(1)
    wide = "float32" if src in QUANT_FLOATS else "int32"
    x = relay.cast(ctx.input(0), wide)
    if ctx.has(2):
        x = relay.subtract(x, relay.cast(_broadcastable(ctx, 2), wide))
    scale = _broadcastable(ctx, 1)
    if ctx.dtype(1) != dtype:
        scale = relay.cast(scale, dtype)
    return relay.multiply(relay.cast(x, dtype), scale)


@converter("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(ctx: NodeContext) -> ConvertResult:
    return list(dynamic_quantize(ctx.input(0), ctx.dtype(0)))


def dynamic_quantize(x: Expr, dtype: str) -> tuple[Expr, Expr, Expr]:
    """DynamicQuantizeLinear of `x` (of float `dtype`): (uint8 values, scale, zero point),
    scale = (max(x, 0) - min(x, 0)) / 255, zero point = round(-min / scale)."""
    zero = relay.const(0.0, dtype)
    high = relay.maximum(relay.max(x), zero)
    low = relay.minimum(relay.min(x), zero)
    scale = relay.divide(relay.subtract(high, low), relay.const(255.0, dtype))
    zp_float = relay.clip(relay.round(relay.divide(relay.negative(low), scale)), 0.0, 255.0)
    zero_point = relay.cast(zp_float, "uint8")
    return _quantize(x, scale, zero_point, dtype, "uint8"), scale, zero_point


# --- integer matmul and convolution ------------------------------------------------------
def _vector_along(ctx: NodeContext, index: int, axis: int, rank: int) -> Expr:
    """Input `index` (a scalar, or a vector with one value per position of `axis` of a
    rank-`rank` operand) shaped to broadcast against that operand."""
    param = ctx.input(index)
    shape = ctx.shape(index)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return param
    if len(shape) != 1:
        raise ctx.fail(f"a scale or zero point of shape {shape} is not supported (a scalar "
                       "or one value per row, column or channel is)")
    return relay.reshape(param, newshape=[-1] + [1] * (rank - axis - 1))


def int32_operand(ctx: NodeContext, index: int, zp_index: int, zp_axis: int) -> Expr:
    """Input `index` in int32 minus its zero point (input `zp_index`, when given), the zero
    point per position of `zp_axis` when it is a vector."""
    if ctx.dtype(index) not in INTEGER_OP_TYPES:
        raise ctx.fail(f"{ctx.dtype(index)} operands are not supported (8- and 16-bit "
                       "integers are)")
    x = relay.cast(ctx.input(index), "int32")
    if not ctx.has(zp_index):
        return x
    rank = ctx.rank(index)
    zero_point = _vector_along(ctx, zp_index, zp_axis % rank, rank)
    return relay.subtract(x, relay.cast(zero_point, "int32"))


def _unit_scale() -> Expr:
    """The scale a qnn product op gets where the node has none (MatMulInteger,
    ConvInteger): their int32 products do not use it (only a requantize would), so the
    scales DynamicQuantizeLinear computes at run time stay out of the qnn op, as in TVM's
    ONNX frontend."""
    return relay.const(1.0, "float32")


def _qnn_scales(ctx: NodeContext, scales: tuple[int, int] | None) -> tuple[Expr, Expr]:
    """A qnn product's input and kernel scales: inputs `scales` (per tensor, and per tensor
    or per output channel), or 1.0 for a node without scales."""
    if scales is None:
        return _unit_scale(), _unit_scale()
    return scalar_param(ctx, scales[0]), _per_channel(ctx, scales[1])


def _per_tensor_or_absent(ctx: NodeContext, index: int) -> bool:
    return not ctx.has(index) or _is_per_tensor(ctx, index)


def _qnn_matmul_fits(ctx: NodeContext, a: int, b: int, zps: tuple[int, int],
                     scales: tuple[int, int] | None) -> bool:
    """Whether qnn.dense (a 2-D b) or qnn.batch_matmul computes the node: 8-bit (or int16)
    operands, a per-tensor zero point and scale of a, b's per tensor or (a 2-D b: the
    dense's output channels) per column, float32 scales."""
    b_2d = ctx.rank(b) == 2
    if ctx.dtype(a) not in KERNEL_TYPES or ctx.dtype(b) not in KERNEL_TYPES:
        return False
    b_params = (zps[1], *(scales[1:] if scales else ()))
    if not _per_tensor_or_absent(ctx, zps[0]) or not (
            b_2d or all(_per_tensor_or_absent(ctx, k) for k in b_params)):
        return False
    return scales is None or (_is_per_tensor(ctx, scales[0]) and all(
        ctx.dtype(k) == "float32" for k in scales))


def _qnn_matmul_kernels(zps: tuple[Expr, Expr], scales: tuple[Expr, Expr]) -> MatmulKernels:
    """qnn.dense and qnn.batch_matmul with the given zero points and scales (a's, b's)."""
    return MatmulKernels(
        lambda a, w, units: qnn.op.dense(a, w, *zps, *scales, units=units),
        lambda a, b: qnn.op.batch_matmul(a, b, *zps, *scales, transpose_b=False))


def integer_matmul(ctx: NodeContext, a: int, b: int, a_zp: int, b_zp: int,
                   scales: tuple[int, int] | None = None) -> Expr:
    """int32 (input a - input a_zp) @ (input b - input b_zp) (a zero point per row of a,
    per column of b): qnn.dense for a 2-D b, qnn.batch_matmul (leading dims broadcast and
    flattened as MatMul's) for batched ones, where they fit; the int32 matmul of the
    shifted operands otherwise. `scales`: the inputs holding a's and b's scales (1.0 when
    the node has none)."""
    if not _qnn_matmul_fits(ctx, a, b, (a_zp, b_zp), scales):
        return matmul_of(ctx, int32_operand(ctx, a, a_zp, -2),
                         int32_operand(ctx, b, b_zp, -1), b_index=b)
    zps = (int32_zero_point(ctx, a_zp), int32_zero_point(ctx, b_zp))
    return matmul_of(ctx, ctx.input(a), ctx.input(b), b_index=b,
                     kernels=_qnn_matmul_kernels(zps, _qnn_scales(ctx, scales)))


@converter("MatMulInteger", since=10)
def matmul_integer(ctx: NodeContext) -> ConvertResult:
    """int32 (A - a_zero_point) @ (B - b_zero_point)."""
    return integer_matmul(ctx, 0, 1, 2, 3)


@converter("ConvInteger", since=10)
def conv_integer(ctx: NodeContext) -> ConvertResult:
    """int32 conv of (x - x_zero_point) by (w - w_zero_point): the padding is the zero
    point (0 after the shift); w's zero point may be per output channel. A 2-D one is a
    qnn.conv2d (scales 1.0: the node has none)."""
    return integer_conv(ctx, 0, 1, 2, 3, None)


def integer_conv(ctx: NodeContext, x: int, w: int, x_zp: int, w_zp: int,
                 scales: tuple[int, int] | None) -> Expr:
    """The int32 convolution of (input x - input x_zp) by (input w - input w_zp):
    qnn.conv2d for a 2-D convolution of 8-bit operands, the conv of the shifted operands
    otherwise."""
    if ctx.rank(x) == 4 and ctx.dtype(x) in KERNEL_TYPES and ctx.dtype(w) in KERNEL_TYPES \
            and _per_tensor_or_absent(ctx, x_zp):
        return qnn.op.conv2d(ctx.input(x), ctx.input(w), int32_zero_point(ctx, x_zp),
                             int32_zero_point(ctx, w_zp), *_qnn_scales(ctx, scales),
                             **conv_window(ctx, w))
    return conv_of(ctx, int32_operand(ctx, x, x_zp, 1), int32_operand(ctx, w, w_zp, 0),
                   w_index=w)


def requantize_float(acc: Expr, multiplier: Expr, zero_point: Expr, dtype: str) -> Expr:
    """int32 accumulator -> round_half_even(acc * multiplier) + zero_point (int32),
    saturated to `dtype`: onnxruntime's requantization, the multiplier in float32."""
    scaled = relay.round(relay.multiply(relay.cast(acc, "float32"), multiplier))
    q = relay.add(relay.cast(scaled, "int32"), zero_point)
    info = iinfo(dtype)
    return relay.cast(relay.clip(q, int(info.min), int(info.max)), dtype)


def scale_product(ctx: NodeContext, factors: list[int | float]) -> Expr | None:
    """The float32 product, left to right, of the inputs numbered in `factors` (scalars or
    per-channel vectors) and the floats among them, as one constant (qnn.requantize's
    lowering needs its scales constant, and onnxruntime multiplies them ahead of time in
    this order); None when an input is computed at run time."""
    product: np.ndarray = np.ones((), "float32")  # 1 * a is a, exactly
    for factor in factors:
        if isinstance(factor, float):
            product = product * np.float32(factor)
            continue
        value = ctx.value(factor)
        if value is None:
            return None
        product = product * np.asarray(value, "float32").reshape(-1 if value.size > 1 else ())
    return relay.const(np.asarray(product, "float32"))


def requantize_onnxruntime(acc: Expr, in_scale: Expr, out_scale: Expr, zero_point: Expr,
                           dtype: str, axis: int) -> Expr:
    """The int32 accumulator `acc` (zero point 0, scale `in_scale`: per tensor or one per
    position of `axis`) requantized as onnxruntime does: a qnn.requantize computing in
    float32 (multiplier in_scale / out_scale, round half to even)."""
    return qnn.op.requantize(acc, in_scale, relay.const(0, "int32"), out_scale, zero_point,
                             axis=axis, compute_dtype="float32", out_dtype=dtype)


def _requantize_product(ctx: NodeContext, acc: Expr, factors: list[int | float], y_scale: int,
                        zp: Expr, dtype: str, axis: int) -> Expr | None:
    """requantize_onnxruntime with the input scale the constant product of `factors`
    (None when a scale is computed at run time)."""
    in_scale, out_scale = scale_product(ctx, factors), scale_product(ctx, [y_scale])
    if in_scale is None or out_scale is None:
        return None
    return requantize_onnxruntime(acc, in_scale, out_scale, zp, dtype, axis)


def _scale(ctx: NodeContext, index: int, axis: int, rank: int) -> Expr:
    return relay.cast(_vector_along(ctx, index, axis, rank), "float32")


def _out_dtype(ctx: NodeContext, zp_index: int) -> str:
    dtype = ctx.dtype(zp_index) if ctx.has(zp_index) else ctx.dtype(0)
    if dtype not in INTEGER_OP_TYPES:
        raise ctx.fail(f"a {dtype} output is not supported (8- and 16-bit integers are)")
    return dtype


def _is_per_tensor(ctx: NodeContext, index: int) -> bool:
    shape = ctx.shape(index)
    return len(shape) == 0 or (len(shape) == 1 and shape[0] == 1)


def scalar_param(ctx: NodeContext, index: int) -> Expr:
    """A per-tensor scale or zero point as a scalar (a 1-element vector reshaped)."""
    if not _is_per_tensor(ctx, index):
        raise ctx.fail(f"input {index} ({ctx.input_names[index]!r}) must be a scalar or "
                       f"have one element; it has shape {ctx.shape(index)}")
    value = ctx.value(index)
    if value is not None:  # a constant, as qnn lowerings need their parameters
        return relay.const(np.asarray(value).reshape(()))
    return relay.reshape(ctx.input(index), newshape=[]) if ctx.shape(index) else ctx.input(index)


def _per_channel(ctx: NodeContext, index: int) -> Expr:
    """A scale or zero point that is a scalar or one value per output channel."""
    return scalar_param(ctx, index) if _is_per_tensor(ctx, index) else ctx.input(index)


def int32_zero_point(ctx: NodeContext, index: int) -> Expr:
    """Input `index` (a zero point: a scalar or one per channel) as the int32 the qnn ops
    take; 0 when it is absent."""
    if not ctx.has(index):
        return relay.const(0, "int32")
    value = ctx.value(index)
    if value is not None:  # a constant, as qnn lowerings need their parameters
        value = np.asarray(value, "int32")
        return relay.const(value.reshape(-1) if value.size > 1 else value.reshape(()))
    return relay.cast(_per_channel(ctx, index), "int32")


@converter("QLinearMatMul", since=10)
def qlinear_matmul(ctx: NodeContext) -> ConvertResult:
    """Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point;
    a's scale and zero point may be per row, b's per column. A 2-D b makes a qnn.dense,
    batched operands (attention's) a qnn.batch_matmul, then a qnn.requantize."""
    a_rank, b_rank = ctx.rank(0), ctx.rank(3)
    acc = integer_matmul(ctx, 0, 3, 2, 5, scales=(1, 4))
    out_dtype = _out_dtype(ctx, 7)
    if _is_per_tensor(ctx, 1):  # one scale per output column at most: a qnn.requantize
        out = _requantize_product(ctx, acc, [1, 4], 6, int32_zero_point(ctx, 7), out_dtype,
                                  axis=-1)
        if out is not None:
            return out
    multiplier = relay.divide(relay.multiply(_scale(ctx, 1, max(a_rank - 2, 0), a_rank),
                                             _scale(ctx, 4, b_rank - 1, b_rank)),
                              _scale(ctx, 6, 0, 1))
    return requantize_float(acc, multiplier, int32_zero_point(ctx, 7), out_dtype)


@converter("QLinearConv", since=10)
def qlinear_conv(ctx: NodeContext) -> ConvertResult:
    """Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point
    and an int32 bias B (added to the accumulator); w's scale and zero point may be per
    output channel."""
    rank = ctx.rank(0)
    acc = integer_conv(ctx, 0, 3, 2, 5, scales=(1, 4))
    if ctx.has(8):
        acc = relay.add(acc, relay.reshape(relay.cast(ctx.input(8), "int32"),
                                           newshape=[-1] + [1] * (rank - 2)))
    zero_point, out_dtype = int32_zero_point(ctx, 7), _out_dtype(ctx, 7)
    out = _requantize_product(ctx, acc, [1, 4], 6, zero_point, out_dtype, axis=1)
    if out is not None:
        return out
    multiplier = relay.divide(relay.multiply(_scale(ctx, 1, 0, 1), _scale(ctx, 4, 1, rank)),
                              _scale(ctx, 6, 0, 1))
    return requantize_float(acc, multiplier, zero_point, out_dtype)
