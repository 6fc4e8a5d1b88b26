"""Intrinsic functions (`tir.exp`, `tir.if_then_else`, `tir.likely`...) and the
table that tells the evaluator how to compute each one.

The evaluator looks an intrinsic up by name in `INTRINSICS`; the table is the
single place that knows what every `Call.op` means.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from engine.ir.dtype import finfo, iinfo
from engine.tir.errors import TIRError
from engine.tir.expr import (
    And,
    Call,
    Max,
    Min,
    Or,
    PrimExpr,
    Select,
    binary,
    cast,
    convert,
    is_float,
    make_const,
)


def _safe(fn: Callable[..., float], overflow: float) -> Callable[..., float]:
    def run(*x: float) -> float:
        try:
            return fn(*x)
        except OverflowError:
            return overflow
        except ValueError:
            return math.nan
    return run


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _rsqrt(x: float) -> float:
    return 1.0 / math.sqrt(x) if x > 0 else (math.inf if x == 0 else math.nan)


@dataclass(frozen=True, slots=True)
class Intrinsic:
    """How to evaluate one intrinsic on Python scalars (`lazy`: if_then_else-like)."""

    name: str
    impl: Callable[..., Any] | None
    num_args: int = 1
    lazy: bool = False


INTRINSICS: dict[str, Intrinsic] = {i.name: i for i in [
    Intrinsic("exp", _safe(math.exp, math.inf)),
    Intrinsic("exp2", _safe(lambda x: 2.0 ** x, math.inf)),
    Intrinsic("exp10", _safe(lambda x: 10.0 ** x, math.inf)),
    Intrinsic("log", lambda x: math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)),
    Intrinsic("log2", lambda x: math.log2(x) if x > 0 else (-math.inf if x == 0 else math.nan)),
    Intrinsic("log10", lambda x: math.log10(x) if x > 0 else (-math.inf if x == 0 else math.nan)),
    Intrinsic("log1p", _safe(math.log1p, -math.inf)),
    Intrinsic("sqrt", lambda x: math.sqrt(x) if x >= 0 else math.nan),
    Intrinsic("rsqrt", _rsqrt),
    Intrinsic("tanh", math.tanh),
    Intrinsic("sigmoid", _sigmoid),
    Intrinsic("erf", math.erf),
    Intrinsic("sin", math.sin),
    Intrinsic("cos", math.cos),
    Intrinsic("tan", math.tan),
    Intrinsic("atan", math.atan),
    Intrinsic("fabs", abs),
    Intrinsic("abs", abs),
    Intrinsic("floor", lambda x: float(math.floor(x)) if math.isfinite(x) else x),
    Intrinsic("ceil", lambda x: float(math.ceil(x)) if math.isfinite(x) else x),
    Intrinsic("trunc", lambda x: float(math.trunc(x)) if math.isfinite(x) else x),
    Intrinsic("round", lambda x: float(np.rint(x))),
    Intrinsic("isnan", math.isnan),
    Intrinsic("pow", _safe(lambda x, y: float(x) ** y, math.inf), 2),
    Intrinsic("shift_right", lambda x, y: int(x) >> int(y), 2),
    Intrinsic("shift_left", lambda x, y: int(x) << int(y), 2),
    Intrinsic("bitwise_and", lambda x, y: int(x) & int(y), 2),
    Intrinsic("bitwise_or", lambda x, y: int(x) | int(y), 2),
    Intrinsic("bitwise_xor", lambda x, y: int(x) ^ int(y), 2),
    Intrinsic("likely", lambda x: x),
    Intrinsic("if_then_else", None, 3, lazy=True),
]}


def call_intrin(name: str, *args: Any, dtype: str | None = None) -> PrimExpr:
    """A `Call` of a registered intrinsic, checked against the table."""
    intrin = INTRINSICS.get(name)
    if intrin is None:
        raise TIRError(f"unknown intrinsic {name!r} (known: {', '.join(sorted(INTRINSICS))})")
    values = tuple(convert(a) for a in args)
    if len(values) != intrin.num_args:
        raise TIRError(f"{name} takes {intrin.num_args} argument(s), got {len(values)}")
    return Call(op=name, args=values, dtype=dtype or values[-1].dtype)


def _float_unary(name: str) -> Callable[[Any], PrimExpr]:
    def fn(x: Any) -> PrimExpr:
        value = convert(x)
        if not is_float(value.dtype):
            value = cast(value, "float32")
        return call_intrin(name, value)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a floating-point expression."
    return fn


exp = _float_unary("exp")
exp2 = _float_unary("exp2")
exp10 = _float_unary("exp10")
log = _float_unary("log")
log2 = _float_unary("log2")
log10 = _float_unary("log10")
log1p = _float_unary("log1p")
sqrt = _float_unary("sqrt")
rsqrt = _float_unary("rsqrt")
tanh = _float_unary("tanh")
sigmoid = _float_unary("sigmoid")
erf = _float_unary("erf")
sin = _float_unary("sin")
cos = _float_unary("cos")
tan = _float_unary("tan")
atan = _float_unary("atan")
floor = _float_unary("floor")
ceil = _float_unary("ceil")
trunc = _float_unary("trunc")
round = _float_unary("round")
fabs = _float_unary("fabs")


def abs(x: Any) -> PrimExpr:
    value = convert(x)
    if is_float(value.dtype):
        return call_intrin("fabs", value)
    return Select(condition=value < 0, true_value=-value, false_value=value)


def isnan(x: Any) -> PrimExpr:
    return call_intrin("isnan", convert(x), dtype="bool")


def power(x: Any, y: Any) -> PrimExpr:
    base = convert(x)
    exponent = make_const(y, base.dtype) if isinstance(y, (int, float)) else convert(y)
    return call_intrin("pow", base, cast(exponent, base.dtype), dtype=base.dtype)


pow = power


def likely(cond: Any) -> PrimExpr:
    return call_intrin("likely", convert(cond), dtype="bool")


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """`t` if `cond` else `f`, evaluating only the branch taken (safe for guarded reads)."""
    tv = convert(t)
    fv = convert(f) if not isinstance(f, (int, float)) else make_const(f, tv.dtype)
    if isinstance(t, (int, float)) and not isinstance(f, (int, float)):
        tv = make_const(t, fv.dtype)
    return Call(op="if_then_else", args=(convert(cond), tv, fv), dtype=tv.dtype)


def max(a: Any, b: Any) -> PrimExpr:
    return binary(Max, a, b)


def min(a: Any, b: Any) -> PrimExpr:
    return binary(Min, a, b)


def _conditions(conds: tuple[Any, ...]) -> list[PrimExpr]:
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    return [convert(c) for c in conds]


def all(*conds: Any) -> PrimExpr:
    """The conjunction of conditions (`te.all`)."""
    items = _conditions(conds)
    if not items:
        return make_const(True, "bool")
    return reduce(lambda x, y: And(a=x, b=y), items)


def any(*conds: Any) -> PrimExpr:
    """The disjunction of conditions (`te.any`)."""
    items = _conditions(conds)
    if not items:
        return make_const(False, "bool")
    return reduce(lambda x, y: Or(a=x, b=y), items)


def max_value(dtype: str) -> PrimExpr:
    if is_float(dtype):
        return make_const(float(finfo(dtype).max), dtype)
    if dtype == "bool":
        return make_const(True, dtype)
    return make_const(int(iinfo(dtype).max), dtype)


def min_value(dtype: str) -> PrimExpr:
    if is_float(dtype):
        return make_const(float(finfo(dtype).min), dtype)
    if dtype == "bool":
        return make_const(False, dtype)
    return make_const(int(iinfo(dtype).min), dtype)
