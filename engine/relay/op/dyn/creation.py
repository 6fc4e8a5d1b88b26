"""Dynamic tensor creation: `dyn.full(fill_value, shape)`, `dyn.zeros(shape)`,
`dyn.ones(shape)` (TVM's), with `shape` a 1-D tensor known at run time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg, type_str
from engine.relay.op.dyn._common import int_values, static_length
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

INIT_KEY = "relay.attrs.InitOpAttrs"


def _init_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    return TensorType((AnyDim(),) * static_length(arg_types, 0, "shape"), attrs.dtype)


def _full_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    fill = tensor_arg(arg_types, 0)
    if fill.ndim != 0:
        raise TypeRelationError("fill_value must be a scalar", arg=0, expected="a 0-D tensor",
                                actual=type_str(fill))
    rank = static_length(arg_types, 1, "shape")
    return TensorType((AnyDim(),) * rank, attrs.get("dtype") or fill.dtype)


define_op("dyn.zeros", ("shape",), _init_rel, OPAQUE,
          lambda xs, attrs: np.zeros(int_values(xs[0]), attrs.dtype), attrs_type_key=INIT_KEY)
define_op("dyn.ones", ("shape",), _init_rel, OPAQUE,
          lambda xs, attrs: np.ones(int_values(xs[0]), attrs.dtype), attrs_type_key=INIT_KEY)
define_op("dyn.full", ("fill_value", "shape"), _full_rel, OPAQUE,
          lambda xs, attrs: np.full(int_values(xs[1]), xs[0], attrs.get("dtype") or xs[0].dtype),
          attrs_type_key=INIT_KEY)


def zeros(shape: Expr, dtype: str = "float32") -> Call:
    return make_call("dyn.zeros", (shape,), {"dtype": dtype}, INIT_KEY)


def ones(shape: Expr, dtype: str = "float32") -> Call:
    return make_call("dyn.ones", (shape,), {"dtype": dtype}, INIT_KEY)


def full(fill_value: Expr, shape: Expr, dtype: str = "") -> Call:
    """A tensor of the run-time shape `shape` filled with the scalar `fill_value`."""
    return make_call("dyn.full", (fill_value, shape), {"dtype": dtype}, INIT_KEY)


__all__ = ["full", "ones", "zeros"]
