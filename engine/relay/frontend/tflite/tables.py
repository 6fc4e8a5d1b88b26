"""Element-wise functions of one quantized tensor as lookup tables over every input value
(256 entries for int8, 65536 for int16), as TFLite's optimized int8 kernels compute
LOGISTIC, TANH, GELU, ... (tables built from float: TFLite's LUTPopulate); HARD_SWISH's
table is TFLite's fixed-point algorithm evaluated for every input; SOFTMAX dequantizes,
computes in float and quantizes (TVM's fallback pattern). The table becomes a constant and
the op a `take`, so every pass and relay.build handle it."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.tflite.context import OpContext, integer_converter
from engine.relay.frontend.tflite.hard_swish import hard_swish_table
from engine.relay.frontend.tflite.integer import (
    QParams,
    const_f32,
    const_i32,
    qparams,
    round_away,
)
from engine.relay.frontend.tflite.quantize import round_half_away
from engine.relay.qnn import op as qnn


def _all_values(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(int(info.min), int(info.max) + 1, dtype="int64")


def float_table(xq: QParams, out: QParams, fn: Callable[[np.ndarray], np.ndarray]
                ) -> np.ndarray:
    """TFLite's LUTPopulate: every input value dequantized in float32, transformed, scaled by
    1 / output scale, rounded half away from zero, + zero point, clamped."""
    values = _all_values(xq.dtype)
    real = np.float32(xq.s) * (values - xq.zp).astype("float32")
    transformed = fn(real).astype("float32")
    rescaled = round_away(transformed * (np.float32(1.0) / np.float32(out.s)))
    lo, hi = out.limits
    return np.clip(rescaled.astype("int64") + out.zp, lo, hi).astype(out.dtype)


def lookup(ctx: OpContext, table: np.ndarray) -> Expr:
    offset = -int(np.iinfo(ctx.tensor(0).dtype).min)
    index = relay.cast(ctx.input(0), "int32")
    if offset:
        index = relay.add(index, const_i32(offset))
    return relay.take(relay.const(table), index, axis=0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = np.float32(1.0)
    return one / (one + np.exp(-x))


def _gelu(approximate: bool) -> Callable[[np.ndarray], np.ndarray]:
    def fn(x: np.ndarray) -> np.ndarray:
        x64 = x.astype("float64")
        if approximate:
            inner = math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)
            return (0.5 * x64 * (1 + np.tanh(inner))).astype("float32")
        erf = np.vectorize(math.erf, otypes=["float64"])
        return (0.5 * x64 * (1 + erf(x64 / math.sqrt(2)))).astype("float32")
    return fn


_FLOAT_FUNCTIONS: dict[str, Callable[[OpContext], Callable[[np.ndarray], np.ndarray]]] = {
    "LOGISTIC": lambda ctx: _sigmoid,
    "TANH": lambda ctx: np.tanh,
    "RSQRT": lambda ctx: lambda x: np.float32(1.0) / np.sqrt(x),
    "SQRT": lambda ctx: np.sqrt,
    "EXP": lambda ctx: np.exp,
    "ELU": lambda ctx: lambda x: np.where(x < 0, np.expm1(x), x),
    "GELU": lambda ctx: _gelu(bool(ctx.option("Approximate", False))),
    "LEAKY_RELU": lambda ctx: lambda x: np.where(
        x < 0, x * np.float32(ctx.option("Alpha", 0.2)), x),
    "RELU": lambda ctx: lambda x: np.maximum(x, np.float32(0)),
    "RELU6": lambda ctx: lambda x: np.clip(x, np.float32(0), np.float32(6)),
    "NEG": lambda ctx: np.negative,
    "ABS": lambda ctx: np.abs,
}


@integer_converter(*_FLOAT_FUNCTIONS)
def float_function(ctx: OpContext) -> Expr:
    xq, out = qparams(ctx, ctx.tensor(0)), qparams(ctx, ctx.out_tensor())
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        table = float_table(xq, out, _FLOAT_FUNCTIONS[ctx.op.op_type](ctx))
    return lookup(ctx, table)


@integer_converter("HARD_SWISH")
def hard_swish(ctx: OpContext) -> Expr:
    xq, out = qparams(ctx, ctx.tensor(0)), qparams(ctx, ctx.out_tensor())
    return lookup(ctx, hard_swish_table(_all_values(xq.dtype), xq, out))


@integer_converter("SOFTMAX")
def softmax(ctx: OpContext) -> Expr:
    xq, out = qparams(ctx, ctx.tensor(0)), qparams(ctx, ctx.out_tensor())
    x = qnn.dequantize(ctx.input(0), const_f32(xq.s), const_i32(xq.zp))
    beta = float(ctx.option("Beta", 1.0))
    if beta != 1.0:
        x = relay.multiply(x, const_f32(beta))
    probs = relay.nn.softmax(x, axis=-1)
    lo, hi = out.limits
    q = relay.add(round_half_away(relay.divide(probs, const_f32(out.s))), const_f32(float(out.zp)))
    return relay.cast(relay.clip(q, float(lo), float(hi)), out.dtype)

