"""`dyn.signal.dft(data, axis, dft_length)`: the DFT of `data` (complex numbers as a trailing
dim of 2, a real signal as 1) along the run-time `axis`, of the run-time length
`dft_length` (0: the default length), with the attrs `inverse` and `onesided`. The static
form is the composition `engine.relay.op.signal.dft`, which `DynamicToStatic` substitutes
once both operands are constants; this kernel multiplies by the same matrix."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg, type_str
from engine.relay.op.dyn._common import check_scalar, scalar
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call
from engine.relay.op.signal import default_length, dft_bins, dft_matrix

DFT_KEY = "relay.attrs.DFTAttrs"


def _dft_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    data = tensor_arg(arg_types, 0)
    if data.ndim < 2 or data.shape[-1] not in (1, 2):
        raise TypeRelationError("needs a signal axis and a last dim of 1 (real) or 2 "
                                "(complex)", arg=0, expected="(..., n, 1 or 2)",
                                actual=type_str(data))
    check_scalar(arg_types, 1, "axis")
    check_scalar(arg_types, 2, "dft_length")
    channels = 1 if attrs.inverse and attrs.onesided else 2
    return TensorType((*(AnyDim(),) * (data.ndim - 1), channels), data.dtype)


def _dft_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = xs[0]
    axis = scalar(xs[1]) % data.ndim
    if axis == data.ndim - 1:
        raise ValueError("the transform axis must not be the last (complex) dim")
    inverse, onesided = bool(attrs.inverse), bool(attrs.onesided)
    length = scalar(xs[2]) or default_length(data.shape[axis], inverse, onesided)
    matrix = dft_matrix(data.shape[axis], data.shape[-1], length, inverse, onesided, "float64")
    moved = np.moveaxis(data, axis, -2)
    flat = moved.reshape(*moved.shape[:-2], -1).astype(np.float64) @ matrix.T
    out = flat.reshape(*moved.shape[:-2], *dft_bins(length, inverse, onesided))
    return np.moveaxis(out, -2, axis).astype(data.dtype)


define_op("dyn.signal.dft", ("data", "axis", "dft_length"), _dft_rel, OPAQUE, _dft_compute,
          attrs_type_key=DFT_KEY)


def dft(data: Expr, axis: Expr, dft_length: Expr, inverse: bool = False,
        onesided: bool = False) -> Call:
    """The DFT along the run-time `axis` with the run-time length `dft_length` (0: the
    input's length, or 2 (n - 1) for a one-sided inverse)."""
    return make_call("dyn.signal.dft", (data, axis, dft_length),
                     {"inverse": bool(inverse), "onesided": bool(onesided)}, DFT_KEY)


__all__ = ["dft"]
