"""Linear algebra: `det` (the determinant of each square matrix of the last two dims)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, tensor_arg, type_str
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call


def _det_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """(*batch, M, M) -> (*batch)."""
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    if data.ndim < 2 or not data.dtype.startswith("float"):
        raise TypeRelationError("needs float square matrices in the last two dims", arg=0,
                                expected="a float (..., M, M) tensor", actual=type_str(data))
    check_dim(data.shape[-1], data.shape[-2], 0, "last dim (a square matrix)", data)
    return TensorType(data.shape[:-2], data.dtype)


def _det_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = xs[0]
    wide = data.astype(np.promote_types(data.dtype, np.float32))  # numpy has no half det
    return np.asarray(np.linalg.det(wide), dtype=data.dtype)


define_op("det", ("data",), _det_rel, OPAQUE, _det_compute)


def det(data: Expr) -> Call:
    """The determinant of each (M, M) matrix of the last two dims of `data`."""
    return make_call("det", (data,))


__all__ = ["det"]
