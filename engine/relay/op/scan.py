"""Scans and selection: cumsum, cumprod (TVM's `relay.cumsum`, `relay.cumprod`) and topk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, TupleType, Type
from engine.relay.op._typing import check_arity, normalize_axis, product, tensor_arg
from engine.relay.op.indexing import TupleWrapper
from engine.relay.op.op import OPAQUE, define_op, make_call

SCAN_KEY = "relay.attrs.ScanopAttrs"
TOPK_KEY = "relay.attrs.TopKAttrs"


def _scan_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    dtype = attrs.get("dtype") or data.dtype
    if attrs.get("axis") is None:
        return TensorType((product(data.shape),), dtype)
    normalize_axis(int(attrs.axis), data.ndim, 0, data)
    return TensorType(data.shape, dtype)


def _scan_compute(kind: str) -> Any:
    accumulate = getattr(np, kind)
    identity = 0 if kind == "cumsum" else 1

    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = xs[0]
        dtype = attrs.get("dtype") or x.dtype
        axis = attrs.get("axis")
        if axis is None:
            x, axis = x.reshape(-1), 0
        out = accumulate(x, axis=int(axis), dtype=dtype)
        if attrs.get("exclusive"):
            out = np.moveaxis(out, int(axis), 0)
            shifted = np.full_like(out, identity)
            shifted[1:] = out[:-1]
            out = np.moveaxis(shifted, 0, int(axis))
        return np.ascontiguousarray(out, dtype=dtype)
    return compute


define_op("cumsum", ("data",), _scan_rel, OPAQUE, _scan_compute("cumsum"),
          attrs_type_key=SCAN_KEY)
define_op("cumprod", ("data",), _scan_rel, OPAQUE, _scan_compute("cumprod"),
          attrs_type_key=SCAN_KEY)


def _scan_attrs(axis: int | None, dtype: str | None, exclusive: bool | None) -> dict[str, Any]:
    return {"axis": None if axis is None else int(axis), "dtype": dtype or "",
            "exclusive": bool(exclusive)}


def cumsum(data: Expr, axis: int | None = None, dtype: str | None = None,
           exclusive: bool | None = None) -> Call:
    """Cumulative sum along `axis` (flattened when None); `exclusive` starts from 0."""
    return make_call("cumsum", (data,), _scan_attrs(axis, dtype, exclusive), SCAN_KEY)


def cumprod(data: Expr, axis: int | None = None, dtype: str | None = None,
            exclusive: bool | None = None) -> Call:
    """Cumulative product along `axis` (flattened when None); `exclusive` starts from 1."""
    return make_call("cumprod", (data,), _scan_attrs(axis, dtype, exclusive), SCAN_KEY)


# --- topk --------------------------------------------------------------------------------
def _topk_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    axis = normalize_axis(int(attrs.axis), data.ndim, 0, data)
    k = int(attrs.k)
    shape = list(data.shape)
    if k >= 1:
        shape[axis] = k
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, attrs.dtype)
    ret = attrs.ret_type
    if ret == "values":
        return values
    if ret == "indices":
        return indices
    return TupleType((values, indices))


def _topk_compute(xs: list[np.ndarray], attrs: Attrs) -> Any:
    x = xs[0]
    axis = normalize_axis(int(attrs.axis), x.ndim)
    k = int(attrs.k) if int(attrs.k) >= 1 else x.shape[axis]
    key = x if attrs.is_ascend else -x.astype(np.float64)
    order = np.argsort(key, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, indices, axis=axis)
    indices = indices.astype(attrs.dtype)
    if attrs.ret_type == "values":
        return values
    if attrs.ret_type == "indices":
        return indices
    return (values, indices)


define_op("topk", ("data",), _topk_rel, OPAQUE, _topk_compute, attrs_type_key=TOPK_KEY)


def topk(data: Expr, k: int = 1, axis: int = -1, ret_type: str = "both",
         is_ascend: bool = False, dtype: str = "int32") -> TupleWrapper | Call:
    """The k largest (or smallest, `is_ascend`) elements along `axis`, as TVM's relay.topk:
    `ret_type` "both" gives a (values, indices) TupleWrapper."""
    if ret_type not in ("both", "values", "indices"):
        raise ValueError(f"ret_type must be 'both', 'values' or 'indices', got {ret_type!r}")
    call = make_call("topk", (data,), {"k": int(k), "axis": int(axis), "ret_type": ret_type,
                                       "is_ascend": bool(is_ascend), "dtype": dtype}, TOPK_KEY)
    return TupleWrapper(call, 2) if ret_type == "both" else call


__all__ = ["cumprod", "cumsum", "topk"]
