"""Ops whose output shape depends on the values of their input (TVM's `relay.argwhere`,
`relay.unique`): their type relations carry that length as a `?` dim. Their numpy kernels
serve the interpreter and FoldConstant; the graph build needs static shapes, so a call left
for it is refused by LowerTE, naming the op (TVM runs such models on its VM).

- `argwhere(condition)`: the (?, rank) indices of the non-zero elements, row-major order
- `unique(data, axis, is_sorted)`: the distinct values (or slices along `axis`), the index
  of each one's first occurrence, each element's index into them, and their counts
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, TupleType, Type
from engine.relay.op._typing import check_arity, normalize_axis, product, tensor_arg
from engine.relay.op.indexing import TupleWrapper
from engine.relay.op.op import OPAQUE, define_op, make_call

ANY = AnyDim()
UNIQUE_KEY = "relay.attrs.UniqueAttrs"


# --- argwhere ---------------------------------------------------------------------------------
def _argwhere_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    return TensorType((ANY, tensor_arg(arg_types, 0).ndim), attrs.get("dtype") or "int32")


def _argwhere_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    return np.argwhere(xs[0]).astype(attrs.get("dtype") or "int32")


define_op("argwhere", ("condition",), _argwhere_rel, OPAQUE, _argwhere_compute,
          attrs_type_key="relay.attrs.ArgWhereAttrs")


def argwhere(condition: Expr, dtype: str = "int32") -> Call:
    """The (count, rank) coordinates of the non-zero elements of `condition`, in row-major
    order; count is known only at run time."""
    return make_call("argwhere", (condition,), {"dtype": dtype}, "relay.attrs.ArgWhereAttrs")


# --- unique -----------------------------------------------------------------------------------
def _unique_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    index = attrs.get("dtype") or "int64"
    if attrs.get("axis") is None:
        values = TensorType((ANY,), data.dtype)
        inverse = TensorType((product(data.shape),), index)
    else:
        axis = normalize_axis(int(attrs.axis), data.ndim, 0, data)
        shape = list(data.shape)
        shape[axis] = ANY
        values = TensorType(shape, data.dtype)
        inverse = TensorType((data.shape[axis],), index)
    counted = TensorType((ANY,), index)
    return TupleType((values, counted, inverse, counted))


def _unique_compute(xs: list[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    data = xs[0]
    axis = attrs.get("axis")
    flat = data.reshape(-1) if axis is None else data
    values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                               return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs.get("is_sorted", True):
        order = np.argsort(first, kind="stable")  # by first occurrence
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values = np.take(values, order, axis=0 if axis is None else int(axis))
        first, counts, inverse = first[order], counts[order], rank[inverse]
    index = attrs.get("dtype") or "int64"
    return (values, first.astype(index), inverse.astype(index), counts.astype(index))


define_op("unique", ("data",), _unique_rel, OPAQUE, _unique_compute, attrs_type_key=UNIQUE_KEY)


def unique(data: Expr, axis: int | None = None, is_sorted: bool = True,
           dtype: str = "int64") -> Any:
    """(values, first indices, inverse indices, counts) of the distinct elements of `data`
    (flattened), or of its distinct slices along `axis`; sorted ascending, or in order of
    first occurrence when not `is_sorted` (ONNX Unique's outputs)."""
    call = make_call("unique", (data,), {"axis": None if axis is None else int(axis),
                                         "is_sorted": bool(is_sorted), "dtype": dtype},
                     UNIQUE_KEY)
    return TupleWrapper(call, 4)


__all__ = ["argwhere", "unique"]
