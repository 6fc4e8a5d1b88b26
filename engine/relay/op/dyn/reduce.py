"""Dynamic ops (TVM's `relay.dyn`): an operand that static ops take as an attribute is a
tensor computed at run time. Their type relations carry what they cannot know as `Any`
(`?`) dims; their numpy kernels read the operand's value.

`relay.dyn.sum(data, axes, keepdims=True)`: a reduction whose axes are a 1-D tensor (the
number of axes is its static length, so the output rank is known; which dims are reduced is
not). Same for `mean`, `max`, `min`, `prod`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call
from engine.relay.op.reduce import REDUCERS

DYN_REDUCE_KEY = "relay.attrs.DynReduceAttrs"
DYN_REDUCERS = ("sum", "mean", "max", "min", "prod")


def _dyn_reduce_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, axes = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    if axes.ndim != 1 or isinstance(axes.shape[0], AnyDim):
        raise TypeRelationError("axes must be a 1-D tensor of static length (it decides the "
                                "output rank)", arg=1, actual=str(axes.shape))
    count = int(axes.shape[0])
    keep = bool(attrs.get("keepdims", True))
    if count == 0:
        if attrs.get("noop_with_empty_axes", False):
            return data
        return TensorType((1,) * data.ndim if keep else (), data.dtype)
    if keep:
        return TensorType(tuple(1 if d == 1 else AnyDim() for d in data.shape), data.dtype)
    if count > data.ndim:
        raise TypeRelationError(f"{count} axes for a {data.ndim}-D tensor", arg=1)
    return TensorType((AnyDim(),) * (data.ndim - count), data.dtype)


def _initial(name: str, dtype: np.dtype) -> dict[str, Any]:
    """max/min over an empty set: the dtype's lowest/highest value (ONNX's rule)."""
    if name not in ("max", "min"):
        return {}
    if dtype == np.bool_:
        return {"initial": name == "min"}
    if np.issubdtype(dtype, np.floating):
        return {"initial": -np.inf if name == "max" else np.inf}
    info = np.iinfo(dtype)
    return {"initial": info.min if name == "max" else info.max}


def _dyn_reducer(name: str) -> Callable[[list[np.ndarray], Attrs], Any]:
    fn = REDUCERS[name]

    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        data, axes_value = xs
        axes = tuple(sorted({int(a) % (data.ndim or 1) for a in axes_value.reshape(-1)}))
        if not axes:
            if attrs.get("noop_with_empty_axes", False):
                return data
            axes = tuple(range(data.ndim))
        extra = _initial(name, data.dtype) if data.size == 0 else {}
        out = np.asarray(fn(data, axis=axes, keepdims=bool(attrs.get("keepdims", True)),
                            **extra))
        return out.astype(data.dtype, copy=False)
    return compute


for _name in DYN_REDUCERS:
    define_op(f"dyn.{_name}", ("data", "axes"), _dyn_reduce_rel, OPAQUE,
              _dyn_reducer(_name), attrs_type_key=DYN_REDUCE_KEY)


def reduce(name: str, data: Expr, axes: Expr, keepdims: bool = True,
           noop_with_empty_axes: bool = False) -> Call:
    """`dyn.<name>(data, axes)` for `name` in sum, mean, max, min, prod."""
    if name not in DYN_REDUCERS:
        raise ValueError(f"no dynamic reduction {name!r}; one of {DYN_REDUCERS}")
    return make_call(f"dyn.{name}", (data, axes), {
        "keepdims": bool(keepdims), "noop_with_empty_axes": bool(noop_with_empty_axes)},
        DYN_REDUCE_KEY)


def _ctor(name: str) -> Callable[..., Call]:
    def ctor(data: Expr, axes: Expr, keepdims: bool = True,
             noop_with_empty_axes: bool = False) -> Call:
        return reduce(name, data, axes, keepdims, noop_with_empty_axes)
    ctor.__name__ = name
    return ctor


sum = _ctor("sum")
mean = _ctor("mean")
max = _ctor("max")
min = _ctor("min")
prod = _ctor("prod")

__all__ = ["max", "mean", "min", "prod", "reduce", "sum"]
