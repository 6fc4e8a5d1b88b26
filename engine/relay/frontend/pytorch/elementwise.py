"""Elementwise ATen ops: math functions, activations, arithmetic, comparisons, selection.

Operands take torch's result dtype (`promoted`) before the Relay op, so `int_tensor / 2`
divides in float32 and `x > 0.5` on integers compares in float32, as torch does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.pytorch.ops import (
    AtenCall,
    cast,
    const,
    converter,
    operand,
    promoted,
    tensor,
)

Fn = Callable[[Expr], Expr]


def _unary(name: str) -> Fn:
    fn: Fn = getattr(relay, name)
    return fn


_MATH: dict[str, Fn] = {
    name: _unary(name) for name in (
        "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "erf",
        "exp", "floor", "log", "log10", "log2", "rsqrt", "sigmoid", "sign", "sin", "sinh",
        "sqrt", "tan", "tanh", "trunc")}
_MATH.update({"neg": relay.negative, "round": relay.round, "fix": relay.trunc,
              "sgn": relay.sign, "relu": relay.nn.relu, "bitwise_not": relay.bitwise_not})


@converter(*(f"aten.{name}.default" for name in _MATH))
def math_fn(call: AtenCall) -> Expr:
    name = call.target.split(".")[1]
    return _MATH[name](operand(call, 0, call.out_dtype))


def _float(call: AtenCall) -> tuple[Expr, str]:
    """Operand 0 in the output's (floating) dtype."""
    return operand(call, 0, call.out_dtype), call.out_dtype


@converter("aten.expm1.default")
def expm1(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    return relay.subtract(relay.exp(x), const(1, dtype))


@converter("aten.log1p.default")
def log1p(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    return relay.log(relay.add(x, const(1, dtype)))


@converter("aten.reciprocal.default")
def reciprocal(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    return relay.divide(const(1, dtype), x)


@converter("aten.square.default")
def square(call: AtenCall) -> Expr:
    x, _ = _float(call)
    return relay.multiply(x, x)


@converter("aten.logical_not.default")
def logical_not(call: AtenCall) -> Expr:
    return relay.logical_not(operand(call, 0, "bool"))


@converter("aten.isnan.default", "aten.isinf.default", "aten.isfinite.default")
def predicate(call: AtenCall) -> Expr:
    x = tensor(call, 0)
    if not call.dtype(0).startswith(("float", "bfloat")):
        return relay.full_like(cast(x, call.dtype(0), "bool"), relay.const(
            call.target.startswith("aten.isfinite")))
    return getattr(relay, call.target.split(".")[1])(x)


# --- activations -----------------------------------------------------------------------------
@converter("aten.silu.default")
def silu(call: AtenCall) -> Expr:
    x, _ = _float(call)
    return relay.multiply(x, relay.sigmoid(x))


@converter("aten.gelu.default")
def gelu(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    if call.arg(1, "approximate", "none") == "tanh":
        inner = relay.multiply(const(math.sqrt(2 / math.pi), dtype), relay.add(
            x, relay.multiply(const(0.044715, dtype), relay.multiply(relay.multiply(x, x), x))))
        return relay.multiply(relay.multiply(const(0.5, dtype), x),
                              relay.add(const(1.0, dtype), relay.tanh(inner)))
    erf = relay.erf(relay.multiply(x, const(0.5 ** 0.5, dtype)))
    return relay.multiply(relay.multiply(x, const(0.5, dtype)), relay.add(const(1.0, dtype), erf))


def _hard_sigmoid(x: Expr, dtype: str) -> Expr:
    return relay.divide(relay.clip(relay.add(x, const(3, dtype)), 0.0, 6.0), const(6, dtype))


@converter("aten.hardsigmoid.default")
def hardsigmoid(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    return _hard_sigmoid(x, dtype)


@converter("aten.hardswish.default")
def hardswish(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    return relay.multiply(x, _hard_sigmoid(x, dtype))


@converter("aten.relu6.default")
def relu6(call: AtenCall) -> Expr:
    return relay.clip(tensor(call, 0), 0.0, 6.0)


@converter("aten.leaky_relu.default")
def leaky_relu(call: AtenCall) -> Expr:
    return relay.nn.leaky_relu(tensor(call, 0), float(call.arg(1, "negative_slope", 0.01)))


def _softplus(x: Expr, dtype: str, beta: float, threshold: float) -> Expr:
    scaled = relay.multiply(x, const(beta, dtype)) if beta != 1 else x
    soft = relay.log(relay.add(relay.exp(scaled), const(1, dtype)))
    soft = relay.divide(soft, const(beta, dtype)) if beta != 1 else soft
    return relay.where(relay.greater(scaled, const(threshold, dtype)), x, soft)


@converter("aten.softplus.default")
def softplus(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    return _softplus(x, dtype, float(call.arg(1, "beta", 1)), float(call.arg(2, "threshold", 20)))


@converter("aten.mish.default")
def mish(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    return relay.multiply(x, relay.tanh(_softplus(x, dtype, 1.0, 20.0)))


@converter("aten.elu.default", "aten.celu.default", "aten.selu.default")
def elu(call: AtenCall) -> Expr:
    x, dtype = _float(call)
    op = call.target.split(".")[1]
    if op == "selu":
        alpha, scale, input_scale = 1.6732632423543772, 1.0507009873554805, 1.0
    elif op == "celu":
        alpha = float(call.arg(1, "alpha", 1.0))
        scale, input_scale = 1.0, 1.0 / alpha
    else:
        alpha, scale = float(call.arg(1, "alpha", 1.0)), float(call.arg(2, "scale", 1.0))
        input_scale = float(call.arg(3, "input_scale", 1.0))
    negative = relay.multiply(const(alpha, dtype), relay.subtract(
        relay.exp(relay.multiply(x, const(input_scale, dtype))), const(1, dtype)))
    out = relay.where(relay.greater(x, const(0, dtype)), x, negative)
    return relay.multiply(out, const(scale, dtype)) if scale != 1 else out


@converter("aten.hardtanh.default", "aten.clamp.default", "aten.clamp_min.default",
           "aten.clamp_max.default", "aten.clip.default")
def clamp(call: AtenCall) -> Expr:
    x = operand(call, 0, call.out_dtype)
    op = call.target.split(".")[1]
    if op == "hardtanh":
        lo, hi = call.arg(1, "min_val", -1.0), call.arg(2, "max_val", 1.0)
    elif op == "clamp_max":
        lo, hi = None, call.args[1]
    else:
        lo, hi = call.arg(1, "min"), call.arg(2, "max")
    if not call.out_dtype.startswith(("float", "bfloat")):  # clip's bounds are floats
        return _clamp_tensors(x, lo, hi, call.out_dtype)
    return relay.clip(x, -math.inf if lo is None else float(lo),
                      math.inf if hi is None else float(hi))


def _clamp_tensors(x: Expr, lo: object, hi: object, dtype: str) -> Expr:
    if lo is not None:
        x = relay.maximum(x, lo if isinstance(lo, Expr) else const(lo, dtype))
    if hi is not None:
        x = relay.minimum(x, hi if isinstance(hi, Expr) else const(hi, dtype))
    return x


@converter("aten.clamp.Tensor", "aten.clamp_min.Tensor", "aten.clamp_max.Tensor")
def clamp_tensor(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    x = operand(call, 0, dtype)
    op = call.target.split(".")[1]
    lo = operand(call, 1, dtype, "min") if op != "clamp_max" and call.arg(1, "min") is not None \
        else None
    hi_index = 1 if op == "clamp_max" else 2
    hi = operand(call, hi_index, dtype, "max") if op != "clamp_min" and call.arg(
        hi_index, "max") is not None else None
    return _clamp_tensors(x, lo, hi, dtype)


# --- binary arithmetic -----------------------------------------------------------------------
_ARITHMETIC = {"add": relay.add, "sub": relay.subtract, "mul": relay.multiply,
               "maximum": relay.maximum, "minimum": relay.minimum, "max": relay.maximum,
               "min": relay.minimum, "fmax": relay.maximum, "fmin": relay.minimum,
               "bitwise_and": relay.bitwise_and, "bitwise_or": relay.bitwise_or,
               "bitwise_xor": relay.bitwise_xor, "bitwise_left_shift": relay.left_shift,
               "bitwise_right_shift": relay.right_shift}
_LOGICAL = {"logical_and": relay.logical_and, "logical_or": relay.logical_or,
            "logical_xor": relay.logical_xor}
_BOOL_BITWISE = {"bitwise_and": relay.logical_and, "bitwise_or": relay.logical_or,
                 "bitwise_xor": relay.logical_xor}


@converter(*(f"aten.{op}.{overload}" for op in _ARITHMETIC for overload in ("Tensor", "Scalar")),
           "aten.maximum.default", "aten.minimum.default", "aten.max.other", "aten.min.other",
           "aten.fmax.default", "aten.fmin.default", "aten.rsub.Tensor", "aten.rsub.Scalar")
def arithmetic(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    op = call.target.split(".")[1]
    lhs, rhs = operand(call, 0, dtype), operand(call, 1, dtype, "other")
    if op == "rsub":
        lhs, rhs, op = rhs, lhs, "sub"
        alpha = call.arg(2, "alpha", 1)
        rhs_scaled = relay.multiply(rhs, const(alpha, dtype)) if alpha != 1 else rhs
        return relay.subtract(lhs, rhs_scaled)
    alpha = call.kwargs.get("alpha", call.args[2] if len(call.args) > 2 else 1)
    if op in ("add", "sub") and alpha != 1:
        rhs = relay.multiply(rhs, const(alpha, dtype))
    if dtype == "bool" and op in _BOOL_BITWISE:
        return _BOOL_BITWISE[op](lhs, rhs)
    return _ARITHMETIC[op](lhs, rhs)


@converter(*(f"aten.{op}.default" for op in _LOGICAL))
def logical(call: AtenCall) -> Expr:
    op = call.target.split(".")[1]
    return _LOGICAL[op](operand(call, 0, "bool"), operand(call, 1, "bool"))


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


@converter("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode",
           "aten.true_divide.Tensor", "aten.floor_divide.default", "aten.floor_divide.Scalar")
def divide(call: AtenCall) -> Expr:
    mode = call.kwargs.get("rounding_mode", call.args[2] if len(call.args) > 2 else None)
    if call.target.startswith("aten.floor_divide"):
        mode = "floor"
    dtype = call.out_dtype
    if mode is None:
        return relay.divide(operand(call, 0, dtype), operand(call, 1, dtype, "other"))
    lhs, rhs = operand(call, 0, dtype), operand(call, 1, dtype, "other")
    if not _is_float(dtype):
        return (relay.floor_divide if mode == "floor" else relay.trunc_divide)(lhs, rhs)
    quotient = relay.divide(lhs, rhs)
    return relay.floor(quotient) if mode == "floor" else relay.trunc(quotient)


@converter("aten.fmod.Tensor", "aten.fmod.Scalar", "aten.remainder.Tensor",
           "aten.remainder.Scalar", "aten.remainder.Scalar_Tensor")
def modulo(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    lhs, rhs = operand(call, 0, dtype), operand(call, 1, dtype, "other")
    if call.target.startswith("aten.fmod"):
        return relay.trunc_mod(lhs, rhs)
    return relay.floor_mod(lhs, rhs)


@converter("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar",
           "aten.float_power.Tensor_Scalar", "aten.float_power.Tensor_Tensor")
def power(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    base = operand(call, 0, dtype)
    exponent = call.arg(1, "exponent")
    if exponent == 2 and not isinstance(exponent, bool):
        return relay.multiply(base, base)
    if exponent == 0.5:
        return relay.sqrt(base)
    return relay.power(base, operand(call, 1, dtype, "exponent"))


@converter("aten.atan2.default", "aten.arctan2.default")
def atan2(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    y, x = operand(call, 0, dtype), operand(call, 1, dtype, "other")
    zero = const(0, dtype)
    base = relay.atan(relay.divide(y, x))
    half_turn = relay.where(relay.greater_equal(y, zero), const(math.pi, dtype),
                            const(-math.pi, dtype))
    on_axis = relay.multiply(relay.sign(y), const(math.pi / 2, dtype))
    left = relay.add(base, half_turn)
    return relay.where(relay.greater(x, zero), base,
                       relay.where(relay.less(x, zero), left, on_axis))


@converter("aten.addcmul.default", "aten.addcdiv.default")
def addc(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    base, a, b = operand(call, 0, dtype), operand(call, 1, dtype), operand(call, 2, dtype)
    product = relay.multiply(a, b) if "addcmul" in call.target else relay.divide(a, b)
    value = call.kwargs.get("value", 1)
    if value != 1:
        product = relay.multiply(product, const(value, dtype))
    return relay.add(base, product)


@converter("aten.lerp.Scalar", "aten.lerp.Tensor")
def lerp(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    start, end, weight = operand(call, 0, dtype), operand(call, 1, dtype), operand(call, 2, dtype)
    return relay.add(start, relay.multiply(weight, relay.subtract(end, start)))


# --- comparisons and selection ---------------------------------------------------------------
_COMPARE = {"eq": relay.equal, "ne": relay.not_equal, "lt": relay.less,
            "le": relay.less_equal, "gt": relay.greater, "ge": relay.greater_equal}


@converter(*(f"aten.{op}.{overload}" for op in _COMPARE for overload in ("Tensor", "Scalar")))
def compare(call: AtenCall) -> Expr:
    dtype = promoted(call, (0, 1))
    op = call.target.split(".")[1]
    return _COMPARE[op](operand(call, 0, dtype), operand(call, 1, dtype, "other"))


@converter("aten.where.self", "aten.where.ScalarOther", "aten.where.ScalarSelf",
           "aten.where.Scalar")
def where(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    return relay.where(operand(call, 0, "bool"), operand(call, 1, dtype),
                       operand(call, 2, dtype, "other"))


@converter("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def masked_fill(call: AtenCall) -> Expr:
    dtype = call.out_dtype
    return relay.where(operand(call, 1, "bool"), operand(call, 2, dtype, "value"),
                       operand(call, 0, dtype))
