"""ONNX elementwise ops: unary math, broadcasting binaries, comparisons, bitwise ops,
variadics, Mod, Clip, Where, IsInf, Identity."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

import numpy as np

import engine.relay as relay
from engine.ir.dtype import finfo, iinfo, is_float
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter

_UNARY = {
    "Sqrt": "sqrt", "Exp": "exp", "Log": "log", "Neg": "negative", "Abs": "abs",
    "Floor": "floor", "Ceil": "ceil", "Sign": "sign", "Sin": "sin", "Cos": "cos",
    "Not": "logical_not", "Round": "round", "IsNaN": "isnan", "Tan": "tan", "Asin": "asin",
    "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh",
    "Acosh": "acosh", "Atanh": "atanh", "BitwiseNot": "bitwise_not",
}
_BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Pow": "power",
    "Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or",
    "Xor": "logical_xor", "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or",
    "BitwiseXor": "bitwise_xor",
}
_VARIADIC = {"Min": "minimum", "Max": "maximum", "Sum": "add", "Mean": "add"}


def _unary(ctx: NodeContext) -> ConvertResult:
    return getattr(relay, _UNARY[ctx.op_type])(ctx.input(0))


def _binary(ctx: NodeContext) -> ConvertResult:
    lhs, rhs = ctx.input(0), ctx.input(1)
    if ctx.op_type == "Pow" and ctx.dtype(1) != ctx.dtype(0):
        rhs = relay.cast(rhs, ctx.dtype(0))
    return getattr(relay, _BINARY[ctx.op_type])(lhs, rhs)


for _op_type in _UNARY:
    converter(_op_type)(_unary)
for _op_type in _BINARY:
    converter(_op_type)(_binary)


@converter("Div")
def div(ctx: NodeContext) -> ConvertResult:
    if np.issubdtype(np.dtype(ctx.dtype(0)), np.integer):
        return relay.trunc_divide(ctx.input(0), ctx.input(1))
    return relay.divide(ctx.input(0), ctx.input(1))


@converter("Reciprocal")
def reciprocal(ctx: NodeContext) -> ConvertResult:
    return relay.divide(relay.const(1.0, ctx.dtype(0)), ctx.input(0))


@converter(*_VARIADIC)
def variadic(ctx: NodeContext) -> ConvertResult:
    fn: Callable[[Expr, Expr], Expr] = getattr(relay, _VARIADIC[ctx.op_type])
    operands = [x for x in ctx.inputs if x is not None]
    out = reduce(fn, operands)
    if ctx.op_type == "Mean" and len(operands) > 1:
        out = relay.divide(out, relay.const(float(len(operands)), ctx.dtype(0)))
    return out


def _clip_bounds(ctx: NodeContext) -> tuple[float | Expr | None, float | Expr | None]:
    if ctx.opset < 11:
        return ctx.attr("min"), ctx.attr("max")
    bounds: list[float | Expr | None] = []
    for index in (1, 2):
        value = ctx.value(index)
        if value is not None:
            bounds.append(float(np.asarray(value).reshape(-1)[0]))
        else:
            bounds.append(ctx.inputs[index] if ctx.has(index) else None)
    return bounds[0], bounds[1]


@converter("Clip")
def clip(ctx: NodeContext) -> ConvertResult:
    low, high = _clip_bounds(ctx)
    x = ctx.input(0)
    if not isinstance(low, Expr) and not isinstance(high, Expr):
        limits = (finfo if is_float(ctx.dtype(0)) else iinfo)(ctx.dtype(0))
        return relay.clip(x, float(limits.min) if low is None else float(low),
                          float(limits.max) if high is None else float(high))
    dtype = ctx.dtype(0)
    if low is not None:
        x = relay.maximum(x, low if isinstance(low, Expr) else relay.const(low, dtype))
    if high is not None:
        x = relay.minimum(x, high if isinstance(high, Expr) else relay.const(high, dtype))
    return x


@converter("Where")
def where(ctx: NodeContext) -> ConvertResult:
    return relay.where(ctx.input(0), ctx.input(1), ctx.input(2))


@converter("Mod", since=10)
def mod(ctx: NodeContext) -> ConvertResult:
    """fmod=1: the sign of the dividend (C's fmod); fmod=0: the sign of the divisor."""
    fn = relay.mod if ctx.attr("fmod", 0) else relay.floor_mod
    return fn(ctx.input(0), ctx.input(1))


@converter("BitShift", since=11)
def bit_shift(ctx: NodeContext) -> ConvertResult:
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.fail(f"unknown direction {direction!r}")
    fn = relay.left_shift if direction == "LEFT" else relay.right_shift
    return fn(ctx.input(0), ctx.input(1))


@converter("IsInf", since=10)
def is_inf(ctx: NodeContext) -> ConvertResult:
    x = ctx.input(0)
    inf = relay.isinf(x)
    zero = relay.const(0, ctx.dtype(0))
    if not ctx.attr("detect_negative", 1):
        inf = relay.logical_and(inf, relay.greater(x, zero))
    if not ctx.attr("detect_positive", 1):
        inf = relay.logical_and(inf, relay.less(x, zero))
    return inf


@converter("Identity")
def identity(ctx: NodeContext) -> ConvertResult:
    return ctx.input(0)
