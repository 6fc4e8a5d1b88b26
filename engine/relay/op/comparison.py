"""Comparison ops: broadcasting, boolean result (TVM's `relay.equal`, `relay.less`, ...)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.binary import broadcast_bool_rel
from engine.relay.op.op import BROADCAST, ELEMWISE, define_op, make_call

COMPARISONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}


def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
             ) -> Callable[[list[np.ndarray], Attrs], np.ndarray]:
    return lambda xs, attrs: np.asarray(fn(xs[0], xs[1]))


for _name, _fn in COMPARISONS.items():
    define_op(_name, ("lhs", "rhs"), broadcast_bool_rel, BROADCAST, _compare(_fn))


def _bool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    return TensorType(tensor_arg(arg_types, 0).shape, "bool")


define_op("logical_not", ("data",), _bool_rel, ELEMWISE,
          lambda xs, attrs: np.logical_not(xs[0]))


def _ctor(name: str) -> Callable[[Expr, Expr], Call]:
    def ctor(lhs: Expr, rhs: Expr) -> Call:
        return make_call(name, (lhs, rhs))
    ctor.__name__ = name
    return ctor


equal = _ctor("equal")
not_equal = _ctor("not_equal")
less = _ctor("less")
less_equal = _ctor("less_equal")
greater = _ctor("greater")
greater_equal = _ctor("greater_equal")


def logical_not(data: Expr) -> Call:
    return make_call("logical_not", (data,))


__all__ = ["equal", "greater", "greater_equal", "less", "less_equal", "logical_not",
           "not_equal"]
