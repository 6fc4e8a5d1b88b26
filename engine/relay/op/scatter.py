"""Scatters and einsum: scatter_elements, scatter_nd (TVM's `relay.scatter_elements`,
`relay.scatter_nd`, whose indices put the index tuple first: (M, Y0, ..., Yk)) and
`relay.einsum`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr, Tuple
from engine.ir.type import TensorType, TupleType, Type
from engine.relay.op._typing import (
    check_arity,
    check_dim,
    check_ndim,
    normalize_axis,
    tensor_arg,
    type_str,
)
from engine.relay.op.op import INJECTIVE, OPAQUE, TypeRelationError, define_op, make_call

SCATTER_ELEMENTS_KEY = "relay.attrs.ScatterElementsAttrs"
SCATTER_ND_KEY = "relay.attrs.ScatterNDAttrs"
EINSUM_KEY = "relay.attrs.EinsumAttrs"
REDUCERS: dict[str, Any] = {"update": None, "add": np.add, "mul": np.multiply,
                            "min": np.minimum, "max": np.maximum}


def _check_mode(mode: str) -> str:
    if mode not in REDUCERS:
        raise ValueError(f"reduction must be one of {tuple(REDUCERS)}, got {mode!r}")
    return mode


def _check_integer(ty: TensorType, index: int) -> None:
    if not ty.dtype.startswith(("int", "uint")):
        raise TypeRelationError("must hold integer indices", arg=index,
                                expected="an int tensor", actual=type_str(ty))


def _scatter(out: np.ndarray, where: tuple[np.ndarray, ...], updates: np.ndarray,
             mode: str) -> np.ndarray:
    """Apply `updates` at `where` in order (duplicates reduce, as the ONNX reference)."""
    reducer = REDUCERS[mode]
    if reducer is None:
        out[where] = updates
    else:
        reducer.at(out, where, updates)
    return out


# --- scatter_elements ----------------------------------------------------------------------
def _scatter_elements_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    data, indices, updates = (tensor_arg(arg_types, i) for i in range(3))
    normalize_axis(int(attrs.axis), data.ndim, 0, data)
    check_ndim(indices, 1, data.ndim)
    _check_integer(indices, 1)
    for i, (u, d) in enumerate(zip(updates.shape, indices.shape)):
        check_dim(u, d, 2, f"dim {i}", updates)
    return TensorType(data.shape, data.dtype)


def _scatter_elements_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, indices, updates = xs
    axis = normalize_axis(int(attrs.axis), data.ndim)
    idx = np.where(indices < 0, indices + data.shape[axis], indices).astype(np.int64)
    where: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
    where[axis] = idx
    return _scatter(data.copy(), tuple(where), updates, str(attrs.reduction))


define_op("scatter_elements", ("data", "indices", "updates"), _scatter_elements_rel, OPAQUE,
          _scatter_elements_compute, attrs_type_key=SCATTER_ELEMENTS_KEY)


def scatter_elements(data: Expr, indices: Expr, updates: Expr, axis: int = 0,
                     reduction: str = "update") -> Call:
    """out = data; out[... indices[i, j, ...] (on `axis`) ...] = updates[i, j, ...] (or
    add / mul / min / max into it)."""
    return make_call("scatter_elements", (data, indices, updates),
                     {"axis": int(axis), "reduction": _check_mode(reduction)},
                     SCATTER_ELEMENTS_KEY)


# --- scatter_nd ------------------------------------------------------------------------------
def _scatter_nd_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """data (X0..Xn), indices (M, Y0..Yk), updates (Y0..Yk, XM..Xn)."""
    check_arity(arg_types, 3)
    data, indices, updates = (tensor_arg(arg_types, i) for i in range(3))
    _check_integer(indices, 1)
    if indices.ndim < 1 or not isinstance(indices.shape[0], int) or indices.shape[0] > data.ndim:
        raise TypeRelationError("dim 0 must be the (static) index length, at most data's rank",
                                arg=1, expected=f"(M <= {data.ndim}, ...)",
                                actual=type_str(indices))
    want = (*indices.shape[1:], *data.shape[int(indices.shape[0]):])
    check_ndim(updates, 2, len(want))
    for i, (u, w) in enumerate(zip(updates.shape, want)):
        check_dim(u, w, 2, f"dim {i}", updates)
    return TensorType(data.shape, data.dtype)


def _scatter_nd_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, indices, updates = xs
    m = indices.shape[0]
    flat = indices.reshape(m, -1).astype(np.int64)
    where = tuple(np.where(row < 0, row + data.shape[k], row) for k, row in enumerate(flat))
    rows = updates.reshape((flat.shape[1], *data.shape[m:]))
    out = data.copy()
    if attrs.mode == "update":
        for j in range(flat.shape[1]):  # in order: a later duplicate wins
            out[tuple(w[j] for w in where)] = rows[j]
        return out
    return _scatter(out, where, rows, str(attrs.mode))


define_op("scatter_nd", ("data", "indices", "updates"), _scatter_nd_rel, OPAQUE,
          _scatter_nd_compute, attrs_type_key=SCATTER_ND_KEY)


def scatter_nd(data: Expr, indices: Expr, updates: Expr, mode: str = "update") -> Call:
    """out = data; out[indices[:, y0, ..., yk]] = updates[y0, ..., yk] (or add / mul / min /
    max into it); TVM's layout, the index tuple on axis 0 of `indices`."""
    return make_call("scatter_nd", (data, indices, updates), {"mode": _check_mode(mode)},
                     SCATTER_ND_KEY)


# --- einsum ----------------------------------------------------------------------------------
def _einsum_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    tup = arg_types[0]
    if not isinstance(tup, TupleType) or not all(isinstance(f, TensorType) for f in tup.fields):
        raise TypeRelationError("must be a tuple of tensors", arg=0, expected="(Tensor, ...)",
                                actual=type_str(tup))
    fields = [f for f in tup.fields if isinstance(f, TensorType)]
    shapes = [tuple(d for d in f.shape if isinstance(d, int)) for f in fields]
    if any(len(s) != f.ndim for s, f in zip(shapes, fields)):
        raise TypeRelationError("needs static shapes", arg=0, expected="static dims",
                                actual=type_str(tup))
    try:
        dummies = [np.broadcast_to(np.float32(0), s) for s in shapes]
        out = np.einsum(str(attrs.equation), *dummies)
    except ValueError as err:
        raise TypeRelationError(f"equation {attrs.equation!r} does not fit: {err}",
                                arg=0) from None
    return TensorType(np.shape(out), fields[0].dtype)


def _einsum_compute(xs: list[Any], attrs: Attrs) -> np.ndarray:
    """numpy's einsum; types it lacks (bfloat16) are computed in float32."""
    dtype = xs[0][0].dtype
    work = [x if x.dtype.kind in "biufc" else x.astype(np.float32) for x in xs[0]]
    return np.asarray(np.einsum(str(attrs.equation), *work)).astype(dtype)


define_op("einsum", ("data",), _einsum_rel, INJECTIVE, _einsum_compute,
          attrs_type_key=EINSUM_KEY)


def einsum(data: Sequence[Expr] | Expr, equation: str) -> Call:
    """Einstein summation over a tuple of tensors (numpy's equation syntax)."""
    tup = data if isinstance(data, Expr) else Tuple(tuple(data))
    return make_call("einsum", (tup,), {"equation": str(equation)}, EINSUM_KEY)


__all__ = ["einsum", "scatter_elements", "scatter_nd"]
