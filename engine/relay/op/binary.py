"""Broadcasting binary ops (TVM's `relay.add`, `relay.multiply`, ...)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import broadcast_shapes, check_arity, tensor_arg, type_str
from engine.relay.op.op import BROADCAST, TypeRelationError, define_op, make_call, register_inplace

BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def broadcast_operands(arg_types: Sequence[Type]) -> tuple[TensorType, TensorType]:
    check_arity(arg_types, 2)
    lhs, rhs = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    if lhs.dtype != rhs.dtype:
        raise TypeRelationError("dtypes of the operands differ", arg=1,
                                expected=f"dtype {lhs.dtype}", actual=type_str(rhs))
    return lhs, rhs


def broadcast_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    lhs, rhs = broadcast_operands(arg_types)
    return TensorType(broadcast_shapes(lhs.shape, rhs.shape, arg_types), lhs.dtype)


def broadcast_bool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    lhs, rhs = broadcast_operands(arg_types)
    return TensorType(broadcast_shapes(lhs.shape, rhs.shape, arg_types), "bool")


def _is_int(x: np.ndarray) -> bool:
    return x.dtype.kind in "iu"


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _is_int(a):  # TVM's integer division truncates toward zero
        q = np.floor_divide(a, b)
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return (q + fix).astype(a.dtype)
    return np.divide(a, b)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b)


def _keep_dtype(fn: BinaryFn) -> Callable[[list[np.ndarray], Attrs], np.ndarray]:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        a, b = xs
        with np.errstate(over="ignore", under="ignore"):  # IEEE: overflow is +-inf, silently
            out = fn(a, b)
        if out.dtype != a.dtype and out.dtype != np.bool_:
            out = out.astype(a.dtype)
        return np.asarray(out)
    return compute


ARITHMETIC: dict[str, BinaryFn] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "floor_divide": np.floor_divide, "floor_mod": np.mod, "mod": _mod,
    "trunc_divide": _divide, "trunc_mod": _mod,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}

for _name, _fn in ARITHMETIC.items():
    define_op(_name, ("lhs", "rhs"), broadcast_rel, BROADCAST, _keep_dtype(_fn))


def _into_lhs(fn: np.ufunc) -> Callable[[list[np.ndarray], Attrs], np.ndarray | None]:
    """`fn(lhs, rhs)` written into `lhs` when the result has its shape and dtype."""
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray | None:
        a, b = xs
        if np.result_type(a, b) != a.dtype or np.broadcast_shapes(a.shape, b.shape) != a.shape:
            return None
        with np.errstate(over="ignore", under="ignore"):
            return fn(a, b, out=a)
    return compute


for _name in ("add", "subtract", "multiply", "maximum", "minimum"):
    register_inplace(_name, _into_lhs(ARITHMETIC[_name]))  # type: ignore[arg-type]


def _binary_ctor(name: str) -> Callable[[Expr, Expr], Call]:
    def ctor(lhs: Expr, rhs: Expr) -> Call:
        return make_call(name, (lhs, rhs))
    ctor.__name__ = name
    ctor.__doc__ = f"Broadcasting `{name}` (TVM's relay.{name})."
    return ctor


add = _binary_ctor("add")
subtract = _binary_ctor("subtract")
multiply = _binary_ctor("multiply")
divide = _binary_ctor("divide")
power = _binary_ctor("power")
maximum = _binary_ctor("maximum")
minimum = _binary_ctor("minimum")
floor_divide = _binary_ctor("floor_divide")
floor_mod = _binary_ctor("floor_mod")
mod = _binary_ctor("mod")
trunc_divide = _binary_ctor("trunc_divide")
trunc_mod = _binary_ctor("trunc_mod")
bitwise_and = _binary_ctor("bitwise_and")
bitwise_or = _binary_ctor("bitwise_or")
bitwise_xor = _binary_ctor("bitwise_xor")
left_shift = _binary_ctor("left_shift")
right_shift = _binary_ctor("right_shift")
logical_and = _binary_ctor("logical_and")
logical_or = _binary_ctor("logical_or")
logical_xor = _binary_ctor("logical_xor")

__all__ = [
    "add", "bitwise_and", "bitwise_or", "bitwise_xor", "divide", "floor_divide", "floor_mod",
    "left_shift", "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "mod",
    "multiply", "power", "right_shift", "subtract", "trunc_divide", "trunc_mod",
]
