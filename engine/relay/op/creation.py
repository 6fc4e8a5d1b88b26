"""Tensor creation: zeros, ones, full, *_like, arange (TVM's `relay.zeros`, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Constant, Expr
from engine.ir.type import TensorType, Type
from engine.relay.expr import const
from engine.relay.op._typing import ANY, check_arity, tensor_arg, type_str
from engine.relay.op.op import ELEMWISE, OPAQUE, TypeRelationError, define_op, make_call

INIT_KEY = "relay.attrs.InitOpAttrs"


def _shape_attr(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, Constant):
        shape = shape.data.numpy().tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _init_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 0)
    return TensorType(attrs.shape, attrs.dtype)


def _full_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    fill = tensor_arg(arg_types, 0)
    if fill.ndim != 0:
        raise TypeRelationError("fill_value must be a scalar", arg=0, expected="a 0-D tensor",
                                actual=type_str(fill))
    return TensorType(attrs.shape, attrs.dtype or fill.dtype)


def _like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    return tensor_arg(arg_types, 0)


def _full_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, fill = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    if fill.ndim != 0:
        raise TypeRelationError("fill_value must be a scalar", arg=1, expected="a 0-D tensor",
                                actual=type_str(fill))
    return data


define_op("zeros", (), _init_rel, ELEMWISE,
          lambda xs, attrs: np.zeros(attrs.shape, attrs.dtype), attrs_type_key=INIT_KEY)
define_op("ones", (), _init_rel, ELEMWISE,
          lambda xs, attrs: np.ones(attrs.shape, attrs.dtype), attrs_type_key=INIT_KEY)
define_op("full", ("fill_value",), _full_rel, ELEMWISE,
          lambda xs, attrs: np.full(attrs.shape, xs[0], attrs.dtype or xs[0].dtype),
          attrs_type_key=INIT_KEY)
define_op("zeros_like", ("data",), _like_rel, ELEMWISE, lambda xs, attrs: np.zeros_like(xs[0]))
define_op("ones_like", ("data",), _like_rel, ELEMWISE, lambda xs, attrs: np.ones_like(xs[0]))
define_op("full_like", ("data", "fill_value"), _full_like_rel, ELEMWISE,
          lambda xs, attrs: np.full_like(xs[0], xs[1]))


def zeros(shape: Any, dtype: str = "float32") -> Call:
    return make_call("zeros", (), {"shape": _shape_attr(shape), "dtype": dtype}, INIT_KEY)


def ones(shape: Any, dtype: str = "float32") -> Call:
    return make_call("ones", (), {"shape": _shape_attr(shape), "dtype": dtype}, INIT_KEY)


def full(fill_value: Any, shape: Any = (), dtype: str = "") -> Call:
    fill = fill_value if isinstance(fill_value, Expr) else const(fill_value, dtype or None)
    return make_call("full", (fill,), {"shape": _shape_attr(shape), "dtype": dtype}, INIT_KEY)


def zeros_like(data: Expr) -> Call:
    return make_call("zeros_like", (data,))


def ones_like(data: Expr) -> Call:
    return make_call("ones_like", (data,))


def full_like(data: Expr, fill_value: Any) -> Call:
    fill = fill_value if isinstance(fill_value, Expr) else const(fill_value)
    return make_call("full_like", (data, fill))


# --- arange --------------------------------------------------------------------------------
# As TVM: start/stop/step are call arguments (expressions); when they are constants their
# values are also kept in the attrs, so the type relation knows the length statically.
ARANGE_KEY = "relay.attrs.ArangeAttrs"
_BOUNDS = ("start", "stop", "step")


def _arange_count(start: float, stop: float, step: float) -> int:
    if step == 0:
        raise TypeRelationError("arange step is zero", arg=2, expected="a non-zero step",
                                actual="0")
    return max(0, int(np.ceil((stop - start) / step)))


def _arange_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    for index in range(3):
        ty = tensor_arg(arg_types, index)
        if ty.ndim > 1 or (ty.ndim == 1 and ty.shape[0] != 1):
            raise TypeRelationError(f"{_BOUNDS[index]} must be a scalar", arg=index,
                                    expected="a scalar", actual=type_str(ty))
    start, stop, step = (attrs.get(name) for name in _BOUNDS)
    if start is None or stop is None or step is None:
        return TensorType((ANY,), attrs.dtype)
    return TensorType((_arange_count(start, stop, step),), attrs.dtype)


def _arange_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    start, stop, step = (np.asarray(x).reshape(-1)[0].item() for x in xs)
    return np.arange(start, stop, step).astype(attrs.dtype)


define_op("arange", _BOUNDS, _arange_rel, OPAQUE, _arange_compute, attrs_type_key=ARANGE_KEY)


def _bound(value: Any, dtype: str) -> Expr:
    return value if isinstance(value, Expr) else const(np.asarray(value).item(), dtype)


def _static(value: Expr) -> float | int | None:
    if not isinstance(value, Constant) or value.data.numpy().size != 1:
        return None
    return value.data.numpy().reshape(-1)[0].item()


def arange(start: Any, stop: Any = None, step: Any = None, dtype: str = "float32") -> Call:
    """`relay.arange(start, stop=None, step=None, dtype)`: bounds are expressions (numbers
    become constants); with constant bounds the length is static."""
    if stop is None:
        start, stop = 0, start
    bounds = [_bound(v, dtype) for v in (start, stop, 1 if step is None else step)]
    attrs: dict[str, Any] = {name: _static(b) for name, b in zip(_BOUNDS, bounds)}
    attrs["dtype"] = dtype
    return make_call("arange", bounds, attrs, ARANGE_KEY)


__all__ = ["arange", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like"]
