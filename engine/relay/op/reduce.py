"""Reductions: sum, mean, max, min, prod, variance, argmax... (TVM's `relay.op.reduce`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, normalize_axes, tensor_arg
from engine.relay.op.op import COMM_REDUCE, OUT_ELEMWISE_FUSABLE, define_op, make_call

REDUCE_KEY = "relay.attrs.ReduceAttrs"
ARG_REDUCE_KEY = "relay.attrs.ArgReduceAttrs"
VARIANCE_KEY = "relay.attrs.VarianceAttrs"


def reduce_axes(attrs: Attrs, ndim: int, ty: Type | None = None) -> tuple[int, ...]:
    """The axes reduced over, after `exclude` and negative axes are resolved."""
    axis = attrs.get("axis")
    axes = normalize_axes(axis, ndim, ty)
    if attrs.get("exclude", False):
        axes = tuple(i for i in range(ndim) if i not in axes)
    return tuple(sorted(set(axes)))


def _reduced_shape(data: TensorType, attrs: Attrs) -> tuple[Any, ...]:
    axes = reduce_axes(attrs, data.ndim, data)
    if attrs.get("keepdims", False):
        return tuple(1 if i in axes else d for i, d in enumerate(data.shape))
    return tuple(d for i, d in enumerate(data.shape) if i not in axes)


def reduce_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0)
    return TensorType(_reduced_shape(data, attrs), data.dtype)


def _arg_reduce_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    return TensorType(_reduced_shape(data, attrs), "int32")


def _bool_reduce_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    return TensorType(_reduced_shape(tensor_arg(arg_types, 0), attrs), "bool")


def _reducer(fn: Callable[..., np.ndarray]) -> Callable[[list[np.ndarray], Attrs], np.ndarray]:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = xs[0]
        axes = reduce_axes(attrs, x.ndim)
        out = fn(x, axis=axes, keepdims=bool(attrs.get("keepdims", False)))
        out = np.asarray(out)
        return out.astype(x.dtype, copy=False) if out.dtype != x.dtype else out
    return compute


REDUCERS: dict[str, Callable[..., np.ndarray]] = {
    "sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
}

for _name, _fn in REDUCERS.items():
    define_op(_name, ("data",), reduce_rel, COMM_REDUCE, _reducer(_fn), attrs_type_key=REDUCE_KEY)

define_op("all", ("data",), _bool_reduce_rel, COMM_REDUCE, _reducer(np.all),
          attrs_type_key=REDUCE_KEY)
define_op("any", ("data",), _bool_reduce_rel, COMM_REDUCE, _reducer(np.any),
          attrs_type_key=REDUCE_KEY)


def _arg_reduce(fn: Callable[..., np.ndarray]) -> Callable[[list[np.ndarray], Attrs], np.ndarray]:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = xs[0]
        axes = reduce_axes(attrs, x.ndim)
        keep = bool(attrs.get("keepdims", False))
        if attrs.get("select_last_index", False):
            flipped = np.flip(x, axis=axes)
            idx = _flat_arg(fn, flipped, axes, keep)
            sizes = int(np.prod([x.shape[a] for a in axes]))
            return (sizes - 1 - idx).astype("int32")
        return _flat_arg(fn, x, axes, keep).astype("int32")
    return compute


def _flat_arg(fn: Callable[..., np.ndarray], x: np.ndarray, axes: tuple[int, ...],
              keep: bool) -> np.ndarray:
    """Arg-reduce over several axes: move them last, flatten them, reduce once."""
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, rest + list(axes))
    flat = moved.reshape([x.shape[i] for i in rest] + [-1])
    idx = np.asarray(fn(flat, axis=-1))
    if keep:
        idx = idx.reshape([1 if i in axes else x.shape[i] for i in range(x.ndim)])
    return idx


define_op("argmax", ("data",), _arg_reduce_rel, COMM_REDUCE, _arg_reduce(np.argmax),
          attrs_type_key=ARG_REDUCE_KEY)
define_op("argmin", ("data",), _arg_reduce_rel, COMM_REDUCE, _arg_reduce(np.argmin),
          attrs_type_key=ARG_REDUCE_KEY)


def _variance_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    tensor_arg(arg_types, 1)
    return reduce_rel(arg_types[:1], attrs)


def _variance_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, mean = xs
    axes = reduce_axes(attrs, data.ndim)
    count = int(np.prod([data.shape[a] for a in axes])) if axes else 1
    dev = data - mean
    total = np.sum(dev * dev, axis=axes, keepdims=bool(attrs.get("keepdims", False)))
    denom = count - 1 if attrs.get("unbiased", False) else count
    return np.asarray(total / (denom if denom > 0 else 1)).astype(data.dtype)


define_op("variance", ("data", "mean"), _variance_rel, OUT_ELEMWISE_FUSABLE, _variance_compute,
          attrs_type_key=VARIANCE_KEY)


def _axis_attr(axis: Any) -> Any:
    if axis is None:
        return None
    return (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(int(a) for a in axis)


def _reduce_ctor(name: str) -> Callable[..., Call]:
    def ctor(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Call:
        return make_call(name, (data,), {"axis": _axis_attr(axis), "keepdims": bool(keepdims),
                                         "exclude": bool(exclude)}, REDUCE_KEY)
    ctor.__name__ = name
    return ctor


sum = _reduce_ctor("sum")  # TVM's name
mean = _reduce_ctor("mean")
max = _reduce_ctor("max")
min = _reduce_ctor("min")
prod = _reduce_ctor("prod")
all = _reduce_ctor("all")
any = _reduce_ctor("any")


def _arg_ctor(name: str) -> Callable[..., Call]:
    def ctor(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False,
             select_last_index: bool = False) -> Call:
        return make_call(name, (data,), {
            "axis": _axis_attr(axis), "keepdims": bool(keepdims), "exclude": bool(exclude),
            "select_last_index": bool(select_last_index)}, ARG_REDUCE_KEY)
    ctor.__name__ = name
    return ctor


argmax = _arg_ctor("argmax")
argmin = _arg_ctor("argmin")


def variance(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False,
             unbiased: bool = False, with_mean: Expr | None = None) -> Call:
    m = mean(data, axis, True, exclude) if with_mean is None else with_mean
    return make_call("variance", (data, m), {
        "axis": _axis_attr(axis), "keepdims": bool(keepdims), "exclude": bool(exclude),
        "unbiased": bool(unbiased)}, VARIANCE_KEY)


def std(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False,
        unbiased: bool = False) -> Call:
    from engine.relay.op.tensor import sqrt

    return sqrt(variance(data, axis, keepdims, exclude, unbiased))


__all__ = ["all", "any", "argmax", "argmin", "max", "mean", "min", "prod", "std", "sum",
           "variance"]
