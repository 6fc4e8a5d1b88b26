"""ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear with their float
semantics (per tensor, per axis and blocked), composed from Relay ops. The integer QNN
dialect (TVM's `qnn.quantize`) is a later step; 8- and 16-bit integer types are covered,
sub-byte and float8 types are not."""

from __future__ import annotations

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis, onnx_dtype

INT_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535),
              "int16": (-32768, 32767)}


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


def _quantize(x: Expr, scale: Expr, zero_point: Expr | None, dtype: str) -> Expr:
    low, high = INT_RANGES[dtype]
    q = relay.cast(relay.round(relay.divide(x, scale)), "int32")
    if zero_point is not None:
        q = relay.add(q, relay.cast(zero_point, "int32"))
    return relay.cast(relay.clip(q, low, high), dtype)


@converter("QuantizeLinear", since=10)
def quantize_linear(ctx: NodeContext) -> ConvertResult:
    dtype = _quantized_dtype(ctx)
    if dtype not in INT_RANGES:
        raise ctx.fail(f"quantizing to {dtype} is not supported (8- and 16-bit integers are)")
    x, scale = ctx.input(0), _broadcastable(ctx, 1)
    precision = int(ctx.attr("precision", 0))
    if precision:
        x, scale = relay.cast(x, onnx_dtype(precision)), relay.cast(scale, onnx_dtype(precision))
    elif ctx.dtype(1) != ctx.dtype(0):
        scale = relay.cast(scale, ctx.dtype(0))
    zero_point = _broadcastable(ctx, 2) if ctx.has(2) else None
    return _quantize(x, scale, zero_point, dtype)


@converter("DequantizeLinear", since=10)
def dequantize_linear(ctx: NodeContext) -> ConvertResult:
    if ctx.dtype(0) not in INT_RANGES and ctx.dtype(0) != "int32":
        raise ctx.fail(f"dequantizing {ctx.dtype(0)} is not supported (8-, 16- and 32-bit "
                       "integers are)")
    out_dtype = int(ctx.attr("output_dtype", 0))
    dtype = onnx_dtype(out_dtype) if out_dtype else ctx.dtype(1)
    x = relay.cast(ctx.input(0), "int32")
    if ctx.has(2):
        x = relay.subtract(x, relay.cast(_broadcastable(ctx, 2), "int32"))
    scale = _broadcastable(ctx, 1)
    return relay.cast(relay.multiply(relay.cast(x, ctx.dtype(1)), scale), dtype)


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
    return [_quantize(x, scale, zero_point, "uint8"), scale, zero_point]

