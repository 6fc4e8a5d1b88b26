"""Elementwise unary ops: math functions, clip, cast, copy (TVM's `relay.op.tensor`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.dtype import bit_width
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg, type_str
from engine.relay.op.op import (
    ELEMWISE,
    OPAQUE,
    TypeRelationError,
    define_op,
    make_call,
    register_inplace,
)


def identity_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """Output has the type of the (single) input."""
    check_arity(arg_types, 1)
    return tensor_arg(arg_types, 0)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf with |error| < 1.2e-7 (Chebyshev fit of erfc, Numerical Recipes `erfcc`)."""
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(x.dtype)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (1.0 / np.sqrt(x)).astype(x.dtype)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # split by sign so exp never overflows
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype)


def _same_dtype(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    def apply(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = fn(x)  # IEEE results (log(0) = -inf, sqrt(-1) = nan), silently, as compiled
        return out.astype(x.dtype, copy=False) if out.dtype != x.dtype else out
    return apply


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": _rsqrt, "sigmoid": _sigmoid, "tanh": np.tanh, "erf": _erf,
    "negative": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
    "round": np.round, "trunc": np.trunc, "sign": np.sign, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "copy": np.copy, "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "bitwise_not": np.invert,
}
_BOOL_RESULT = {"isnan", "isinf", "isfinite"}


def _bool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    return TensorType(tensor_arg(arg_types, 0).shape, "bool")


def _register_unary(name: str, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    wrapped = fn if name in _BOOL_RESULT else _same_dtype(fn)
    rel = _bool_rel if name in _BOOL_RESULT else identity_rel
    define_op(name, ("data",), rel, ELEMWISE, lambda xs, attrs: wrapped(xs[0]))


for _name, _fn in UNARY.items():
    _register_unary(_name, _fn)


def _unary_ctor(name: str) -> Callable[[Expr], Call]:
    def ctor(data: Expr) -> Call:
        return make_call(name, (data,))
    ctor.__name__ = name
    ctor.__doc__ = f"Elementwise `{name}` (TVM's relay.{name})."
    return ctor


exp = _unary_ctor("exp")
log = _unary_ctor("log")
log2 = _unary_ctor("log2")
log10 = _unary_ctor("log10")
sqrt = _unary_ctor("sqrt")
rsqrt = _unary_ctor("rsqrt")
sigmoid = _unary_ctor("sigmoid")
tanh = _unary_ctor("tanh")
erf = _unary_ctor("erf")
negative = _unary_ctor("negative")
abs = _unary_ctor("abs")  # TVM's name
floor = _unary_ctor("floor")
ceil = _unary_ctor("ceil")
round = _unary_ctor("round")  # TVM's name
trunc = _unary_ctor("trunc")
sign = _unary_ctor("sign")
sin = _unary_ctor("sin")
cos = _unary_ctor("cos")
tan = _unary_ctor("tan")
asin = _unary_ctor("asin")
acos = _unary_ctor("acos")
atan = _unary_ctor("atan")
sinh = _unary_ctor("sinh")
cosh = _unary_ctor("cosh")
asinh = _unary_ctor("asinh")
acosh = _unary_ctor("acosh")
atanh = _unary_ctor("atanh")
copy = _unary_ctor("copy")
isnan = _unary_ctor("isnan")
isinf = _unary_ctor("isinf")
isfinite = _unary_ctor("isfinite")
bitwise_not = _unary_ctor("bitwise_not")


# --- clip ------------------------------------------------------------------------------
def _clip_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    return np.clip(x, attrs.a_min, attrs.a_max).astype(x.dtype, copy=False)


def _clip_inplace(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray | None:
    x = xs[0]
    if x.dtype.kind != "f":  # integer data: the bounds may not be representable
        return None
    return np.clip(x, attrs.a_min, attrs.a_max, out=x)


define_op("clip", ("data",), identity_rel, ELEMWISE, _clip_compute,
          attrs_type_key="relay.attrs.ClipAttrs")
register_inplace("clip", _clip_inplace)


def clip(a: Expr, a_min: float, a_max: float) -> Call:
    return make_call("clip", (a,), {"a_min": float(a_min), "a_max": float(a_max)},
                     "relay.attrs.ClipAttrs")


# --- cast ------------------------------------------------------------------------------
def _cast_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    return TensorType(tensor_arg(arg_types, 0).shape, attrs.dtype)


def _cast_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # inf/nan to an integer: undefined, as compiled code
        return xs[0].astype(attrs.dtype)


define_op("cast", ("data",), _cast_rel, ELEMWISE, _cast_compute,
          attrs_type_key="relay.attrs.CastAttrs")


def cast(data: Expr, dtype: str) -> Call:
    return make_call("cast", (data,), {"dtype": str(dtype)}, "relay.attrs.CastAttrs")


def _cast_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    return TensorType(tensor_arg(arg_types, 0).shape, tensor_arg(arg_types, 1).dtype)


define_op("cast_like", ("data", "dtype_like"), _cast_like_rel, ELEMWISE,
          lambda xs, attrs: xs[0].astype(xs[1].dtype))


def cast_like(data: Expr, dtype_like: Expr) -> Call:
    return make_call("cast_like", (data, dtype_like))


# --- reinterpret ------------------------------------------------------------------------
def _reinterpret_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    if bit_width(data.dtype) != bit_width(attrs.dtype):
        raise TypeRelationError(f"cannot be reinterpreted as {attrs.dtype}", arg=0,
                                expected=f"a {bit_width(attrs.dtype)}-bit dtype",
                                actual=type_str(data))
    return TensorType(data.shape, attrs.dtype)


def _reinterpret_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    """The same bits read as `dtype`. Sub-byte values sit one per byte in the low bits, so
    their bits are masked into a fresh byte; a bool is 0 or 1, whatever byte it came from."""
    x, dtype = np.asarray(xs[0], order="C"), np.dtype(attrs.dtype)
    if dtype == np.bool_:
        return x.view(np.uint8) != 0
    width = bit_width(dtype)
    if width < 8:
        return (x.view(np.uint8) & np.uint8((1 << width) - 1)).view(dtype)
    return x.view(dtype)


define_op("reinterpret", ("data",), _reinterpret_rel, OPAQUE, _reinterpret_compute,
          attrs_type_key="relay.attrs.CastAttrs")


def reinterpret(data: Expr, dtype: str) -> Call:
    """The bits of `data` read as `dtype` of the same bit width (TVM's relay.reinterpret)."""
    return make_call("reinterpret", (data,), {"dtype": str(dtype)}, "relay.attrs.CastAttrs")


__all__ = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_not", "cast", "cast_like",
    "ceil", "clip", "copy", "cos", "cosh", "erf", "exp", "floor", "isfinite", "isinf", "isnan",
    "log", "log10", "log2", "negative", "reinterpret", "round", "rsqrt", "sigmoid", "sign",
    "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
]
