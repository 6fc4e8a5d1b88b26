"""ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear with their float
semantics (per tensor, per axis and blocked), composed from Relay ops. The integer QNN
dialect (TVM's `qnn.quantize`) is a later step. Quantized types: 8-, 16-, 4- and 2-bit
integers (int4 and int2 are ml_dtypes' types, one value per byte), float8 (saturating as
Cast does, `saturate` attribute) and float4_e2m1fn."""

from __future__ import annotations

import engine.relay as relay
from engine.ir.dtype import FLOAT8_WITH_FINITE_MAX, iinfo, is_float
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.cast import cast_to
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis, onnx_dtype

QUANT_INTS = ("uint8", "int8", "uint16", "int16", "uint4", "int4", "uint2", "int2")
QUANT_FLOATS = (*FLOAT8_WITH_FINITE_MAX, "float4_e2m1fn")


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
    q = relay.cast(relay.round(scaled), "int32")
    if zero_point is not None:
        q = relay.add(q, relay.cast(zero_point, "int32"))
    return relay.cast(relay.clip(q, int(info.min), int(info.max)), dtype)


@converter("QuantizeLinear", since=10)
def quantize_linear(ctx: NodeContext) -> ConvertResult:
    dtype = _quantized_dtype(ctx)
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
    """uint8: scale = (max(x, 0) - min(x, 0)) / 255, zero point = round(-min / scale)."""
    x = ctx.input(0)
    dtype = ctx.dtype(0)
    zero = relay.const(0.0, dtype)
    high = relay.maximum(relay.max(x), zero)
    low = relay.minimum(relay.min(x), zero)
    scale = relay.divide(relay.subtract(high, low), relay.const(255.0, dtype))
    zp_float = relay.clip(relay.round(relay.divide(relay.negative(low), scale)), 0.0, 255.0)
    zero_point = relay.cast(zp_float, "uint8")
    return [_quantize(x, scale, zero_point, dtype, "uint8"), scale, zero_point]

