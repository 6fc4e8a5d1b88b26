"""Elementwise and broadcast ops: one TE compute from each op's semantics.

Unary ops map an expression builder over the output; binary ops broadcast
numpy-style (trailing dimensions aligned, size-1 dimensions read at 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import engine.te as te
from engine.ir.attrs import Attrs
from engine.ir.type import Type
from engine.relay.strategy.base import (
    BROADCAST,
    ELEMWISE,
    OpStrategy,
    out_types,
    register_strategy,
    static_shape,
)
from engine.relay.strategy.schedules import INJECTIVE_SCHEDULES
from engine.te import Tensor
from engine.tir import expr as E
from engine.tir import intrin

Unary = Callable[[E.PrimExpr], Any]
Binary = Callable[[E.PrimExpr, E.PrimExpr], Any]


def _f(x: E.PrimExpr) -> E.PrimExpr:
    return x if E.is_float(x.dtype) else E.cast(x, "float32")


def _sign(x: E.PrimExpr) -> E.PrimExpr:
    one, zero = E.make_const(1, x.dtype), E.make_const(0, x.dtype)
    return te.Select(x > zero, one, te.Select(x < zero, -one, zero))


def _isinf(x: E.PrimExpr) -> E.PrimExpr:
    if not E.is_float(x.dtype):
        return E.make_const(False, "bool")
    return E.EQ(a=intrin.fabs(x), b=E.make_const(math.inf, x.dtype))


def _isfinite(x: E.PrimExpr) -> E.PrimExpr:
    if not E.is_float(x.dtype):
        return E.make_const(True, "bool")
    return E.LT(a=intrin.fabs(x), b=E.make_const(math.inf, x.dtype))


def _asin(x: E.PrimExpr) -> E.PrimExpr:
    x = _f(x)
    return intrin.atan(x / intrin.sqrt(1.0 - x * x))


UNARY: dict[str, Unary] = {
    "abs": intrin.abs, "ceil": intrin.ceil, "floor": intrin.floor, "round": intrin.round,
    "trunc": intrin.trunc, "exp": intrin.exp, "log": intrin.log, "log2": intrin.log2,
    "log10": intrin.log10, "sqrt": intrin.sqrt, "rsqrt": intrin.rsqrt, "tanh": intrin.tanh,
    "sigmoid": intrin.sigmoid, "erf": intrin.erf, "sin": intrin.sin, "cos": intrin.cos,
    "tan": intrin.tan, "atan": intrin.atan, "negative": lambda x: -x, "copy": lambda x: x,
    "sign": _sign, "isnan": lambda x: intrin.isnan(x) if E.is_float(x.dtype)
    else E.make_const(False, "bool"),
    "isinf": _isinf, "isfinite": _isfinite,
    "logical_not": lambda x: E.Not(a=x if x.dtype == "bool" else E.NE(a=x, b=E.make_const(
        0, x.dtype))),
    "bitwise_not": lambda x: -x - E.make_const(1, x.dtype),
    "nn.relu": lambda x: intrin.max(x, E.make_const(0, x.dtype)),
    "sinh": lambda x: (intrin.exp(_f(x)) - intrin.exp(-_f(x))) * 0.5,
    "cosh": lambda x: (intrin.exp(_f(x)) + intrin.exp(-_f(x))) * 0.5,
    "asinh": lambda x: intrin.log(_f(x) + intrin.sqrt(_f(x) * _f(x) + 1.0)),
    "acosh": lambda x: intrin.log(_f(x) + intrin.sqrt(_f(x) * _f(x) - 1.0)),
    "atanh": lambda x: intrin.log((1.0 + _f(x)) / (1.0 - _f(x))) * 0.5,
    "asin": _asin, "acos": lambda x: E.make_const(math.pi / 2, "float32") - _asin(x),
}

def _intrin2(name: str) -> Binary:
    """A two-argument integer intrinsic (TVM's `>>` is the call tir.shift_right); the
    result's dtype is the first operand's (the stored value is cast to the output's)."""
    return lambda a, b: intrin.call_intrin(name, a, b, dtype=a.dtype)


BINARY: dict[str, Binary] = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "trunc_divide": lambda a, b: a / b,
    "floor_divide": lambda a, b: a // b, "floor_mod": lambda a, b: a % b,
    "mod": lambda a, b: E.Mod(a=a, b=b), "trunc_mod": lambda a, b: E.Mod(a=a, b=b),
    "power": intrin.power, "maximum": intrin.max, "minimum": intrin.min,
    "equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b,
    "less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b,
    "logical_and": lambda a, b: E.And(a=a, b=b), "logical_or": lambda a, b: E.Or(a=a, b=b),
    "logical_xor": lambda a, b: E.NE(a=a, b=b),
    **{name: _intrin2(intrinsic) for name, intrinsic in (
        ("right_shift", "shift_right"), ("left_shift", "shift_left"),
        ("bitwise_and", "bitwise_and"), ("bitwise_or", "bitwise_or"),
        ("bitwise_xor", "bitwise_xor"))},
}


def broadcast_index(t: Tensor, out_idx: Sequence[Any]) -> list[Any]:
    """The index into `t` of the output element at `out_idx` (numpy broadcasting)."""
    offset = len(out_idx) - t.ndim
    idx = []
    for k, dim in enumerate(t.shape):
        one = isinstance(dim, E.IntImm) and dim.value == 1
        idx.append(0 if one else out_idx[offset + k])
    return idx


def bload(t: Tensor, out_idx: Sequence[Any]) -> E.PrimExpr:
    return t.load(broadcast_index(t, out_idx)) if t.ndim else t.load(())


def _as_dtype(value: Any, dtype: str) -> E.PrimExpr:
    expr = E.convert(value)
    return expr if expr.dtype == dtype else E.cast(expr, dtype)


def map_compute(name: str, tag: str, fn: Callable[..., Any]) -> Callable[..., list[Tensor]]:
    """A compute applying `fn(attrs, *loaded inputs)` per output element."""
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        ty = out_types(out_type)[0]
        shape = static_shape(ty)

        def body(*idx: Any) -> E.PrimExpr:
            return _as_dtype(fn(attrs, *(bload(t, idx) for t in inputs)), ty.dtype)
        return [te.compute(shape, body, name=name.replace(".", "_"), tag=tag)]
    return compute


def _unary(fn: Unary) -> Callable[..., Any]:
    return lambda attrs, x: fn(x)


def _binary(fn: Binary) -> Callable[..., Any]:
    return lambda attrs, a, b: fn(a, b)


def _clip(attrs: Attrs, x: E.PrimExpr) -> E.PrimExpr:
    lo, hi = E.make_const(attrs.a_min, x.dtype), E.make_const(attrs.a_max, x.dtype)
    return intrin.min(intrin.max(x, lo), hi)


def _leaky_relu(attrs: Attrs, x: E.PrimExpr) -> E.PrimExpr:
    return te.Select(x > E.make_const(0, x.dtype), x, x * E.make_const(attrs.alpha, x.dtype))


def _prelu(attrs: Attrs, x: E.PrimExpr, alpha: E.PrimExpr) -> E.PrimExpr:
    return te.Select(x > E.make_const(0, x.dtype), x, x * alpha)


def _where(attrs: Attrs, cond: E.PrimExpr, a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    test = cond if cond.dtype == "bool" else E.NE(a=cond, b=E.make_const(0, cond.dtype))
    return te.Select(test, a, b)


def _fill(value: Callable[[Attrs], Any]) -> Callable[..., Any]:
    return lambda attrs, *xs: value(attrs)


def _prelu_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data, alpha = inputs
    ty = out_types(out_type)[0]
    axis = int(attrs.get("axis", 1)) % data.ndim

    def body(*idx: Any) -> E.PrimExpr:
        return _prelu(attrs, data.load(idx), alpha.load((idx[axis],)))
    return [te.compute(static_shape(ty), body, name="prelu", tag=BROADCAST)]


def _bias_add_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data, bias = inputs
    ty = out_types(out_type)[0]
    axis = int(attrs.get("axis", 1)) % data.ndim
    return [te.compute(static_shape(ty), lambda *i: data.load(i) + bias.load((i[axis],)),
                       name="T_add", tag=BROADCAST)]


def _like_fill(fn: Callable[[Attrs, list[Tensor]], Any]) -> Callable[..., list[Tensor]]:
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        ty = out_types(out_type)[0]
        value = fn(attrs, inputs)
        return [te.compute(static_shape(ty), lambda *i: _as_dtype(
            value if not isinstance(value, Tensor) else value.load(()), ty.dtype),
            name="T_full", tag=ELEMWISE)]
    return compute


def _strategy(name: str, compute: Callable[..., list[Tensor]]) -> OpStrategy:
    return OpStrategy(name, compute, INJECTIVE_SCHEDULES)


def register() -> None:
    for name, unary in UNARY.items():
        register_strategy(name, _strategy(name, map_compute(name, ELEMWISE, _unary(unary))))
    for name, binary in BINARY.items():
        register_strategy(name, _strategy(name, map_compute(name, BROADCAST, _binary(binary))))
    table: dict[str, tuple[str, Callable[..., Any]]] = {
        "clip": (ELEMWISE, _clip), "nn.leaky_relu": (ELEMWISE, _leaky_relu),
        "cast": (ELEMWISE, lambda attrs, x: x), "cast_like": (ELEMWISE, lambda attrs, x, y: x),
        "where": (BROADCAST, _where),
        "broadcast_to": (BROADCAST, lambda attrs, x: x),
        "zeros_like": (ELEMWISE, _fill(lambda a: 0)), "ones_like": (ELEMWISE, _fill(lambda a: 1)),
    }
    for name, (tag, fn) in table.items():
        register_strategy(name, _strategy(name, map_compute(name, tag, fn)))
    register_strategy("nn.prelu", _strategy("nn.prelu", _prelu_compute))
    register_strategy("nn.bias_add", _strategy("nn.bias_add", _bias_add_compute))
    register_strategy(["zeros"], _strategy("zeros", _like_fill(lambda a, xs: 0)))
    register_strategy(["ones"], _strategy("ones", _like_fill(lambda a, xs: 1)))
    register_strategy(["full", "full_like"],
                      _strategy("full", _like_fill(lambda a, xs: xs[-1])))
