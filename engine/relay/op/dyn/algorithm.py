"""Dynamic indexing and scans: `dyn.topk(data, k)`, `dyn.one_hot(indices, on, off, depth)`,
`dyn.trilu(data, k)`, `dyn.cumsum(data, axis)` / `dyn.cumprod(data, axis)`: the count or
the axis is a tensor known at run time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, TupleType, Type
from engine.relay.op._typing import check_arity, normalize_axis, tensor_arg
from engine.relay.op.dyn._common import check_scalar, scalar
from engine.relay.op.indexing import TupleWrapper
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call
from engine.relay.op.scan import SCAN_KEY, TOPK_KEY

ANY = AnyDim()


# --- topk -----------------------------------------------------------------------------------
def _topk_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    check_scalar(arg_types, 1, "k")
    shape = list(data.shape)
    shape[normalize_axis(int(attrs.axis), data.ndim, 0, data)] = ANY
    values, indices = TensorType(shape, data.dtype), TensorType(shape, attrs.dtype)
    return {"values": values, "indices": indices}.get(attrs.ret_type,
                                                      TupleType((values, indices)))


def _topk_compute(xs: list[np.ndarray], attrs: Attrs) -> Any:
    x, k = xs
    axis = normalize_axis(int(attrs.axis), x.ndim)
    count = scalar(k) if scalar(k) >= 1 else x.shape[axis]
    key = x if attrs.is_ascend else -x.astype(np.float64)
    indices = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(count), axis=axis)
    values = np.take_along_axis(x, indices, axis=axis)
    indices = indices.astype(attrs.dtype)
    return {"values": values, "indices": indices}.get(attrs.ret_type, (values, indices))


define_op("dyn.topk", ("data", "k"), _topk_rel, OPAQUE, _topk_compute, attrs_type_key=TOPK_KEY)


def topk(data: Expr, k: Expr, axis: int = -1, ret_type: str = "both", is_ascend: bool = False,
         dtype: str = "int32") -> TupleWrapper | Call:
    """relay.topk with `k` a scalar tensor known at run time."""
    call = make_call("dyn.topk", (data, k), {"axis": int(axis), "ret_type": ret_type,
                                            "is_ascend": bool(is_ascend), "dtype": dtype},
                     TOPK_KEY)
    return TupleWrapper(call, 2) if ret_type == "both" else call


# --- one_hot --------------------------------------------------------------------------------
def _one_hot_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 4)
    indices = tensor_arg(arg_types, 0)
    check_scalar(arg_types, 3, "depth")
    axis = int(attrs.axis)
    pos = indices.ndim if axis == -1 else normalize_axis(axis, indices.ndim + 1, 0, indices)
    shape = list(indices.shape)
    shape.insert(pos, ANY)
    return TensorType(shape, attrs.dtype)


def _one_hot_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    indices, on, off, depth = xs
    out = np.where(indices[..., None] == np.arange(scalar(depth)), on, off).astype(attrs.dtype)
    axis = int(attrs.axis)
    return out if axis == -1 else np.moveaxis(out, -1, axis)


define_op("dyn.one_hot", ("indices", "on_value", "off_value", "depth"), _one_hot_rel, OPAQUE,
          _one_hot_compute, attrs_type_key="relay.attrs.OneHotAttrs")


def one_hot(indices: Expr, on_value: Expr, off_value: Expr, depth: Expr, axis: int,
            dtype: str) -> Call:
    """relay.one_hot with `depth` a scalar tensor known at run time."""
    return make_call("dyn.one_hot", (indices, on_value, off_value, depth),
                     {"axis": int(axis), "dtype": dtype}, "relay.attrs.OneHotAttrs")


# --- trilu ----------------------------------------------------------------------------------
def _trilu_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    if data.ndim < 2:
        raise TypeRelationError("needs a tensor of at least 2 dims", arg=0)
    check_scalar(arg_types, 1, "k")
    return data


def _trilu_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, k = xs
    return (np.triu if attrs.upper else np.tril)(data, scalar(k))


define_op("dyn.trilu", ("data", "k"), _trilu_rel, OPAQUE, _trilu_compute,
          attrs_type_key="relay.attrs.TriluAttrs")


def trilu(data: Expr, k: Expr, upper: bool = True) -> Call:
    """Keep the upper (or lower) triangle of the last two dims from diagonal `k` on."""
    return make_call("dyn.trilu", (data, k), {"upper": bool(upper)}, "relay.attrs.TriluAttrs")


# --- cumsum / cumprod -----------------------------------------------------------------------
def _scan_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    check_scalar(arg_types, 1, "axis")
    return TensorType(data.shape, attrs.get("dtype") or data.dtype)


def _scanner(ufunc: np.ufunc) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        data, axis_value = xs
        axis = normalize_axis(scalar(axis_value), data.ndim)
        dtype = attrs.get("dtype") or data.dtype
        x = np.flip(data, axis) if attrs.get("reverse") else data
        out = ufunc.accumulate(x, axis=axis, dtype=dtype)
        if attrs.get("exclusive"):
            first = np.full_like(np.take(out, [0], axis=axis), ufunc.identity)
            out = np.concatenate([first, np.delete(out, -1, axis=axis)], axis=axis)
        return np.flip(out, axis) if attrs.get("reverse") else out
    return compute


define_op("dyn.cumsum", ("data", "axis"), _scan_rel, OPAQUE, _scanner(np.add),
          attrs_type_key=SCAN_KEY)
define_op("dyn.cumprod", ("data", "axis"), _scan_rel, OPAQUE, _scanner(np.multiply),
          attrs_type_key=SCAN_KEY)


def _scan(name: str, data: Expr, axis: Expr, exclusive: bool, reverse: bool) -> Call:
    return make_call(f"dyn.{name}", (data, axis),
                     {"dtype": None, "exclusive": bool(exclusive), "reverse": bool(reverse)},
                     SCAN_KEY)


def cumsum(data: Expr, axis: Expr, exclusive: bool = False, reverse: bool = False) -> Call:
    """Cumulative sum along the run-time scalar `axis` (ONNX CumSum's `reverse` too)."""
    return _scan("cumsum", data, axis, exclusive, reverse)


def cumprod(data: Expr, axis: Expr, exclusive: bool = False, reverse: bool = False) -> Call:
    """Cumulative product along the run-time scalar `axis`."""
    return _scan("cumprod", data, axis, exclusive, reverse)


__all__ = ["cumprod", "cumsum", "one_hot", "topk", "trilu"]
