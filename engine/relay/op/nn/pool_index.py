"""nn.max_pool_argmax: where each max pool window's maximum sits, as a flat index into the
input (ONNX MaxPool's second output, PyTorch's max_pool with return_indices over N and C).

One op for 1-D to 3-D windows in the canonical layouts (NCW, NCHW, NCDHW). The index
counts over the whole input tensor, N and C included; padding is never chosen. With
`storage_order` 1 the spatial axes count column-major (the last spatial axis slowest),
as ONNX's storage_order; ties go to the first window tap in row-major order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.dtype import lowest
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.nn._layout import check_positive
from engine.relay.op.nn._nd import (
    SPATIAL,
    canonical_data,
    ntuple,
    pad_spatial,
    pad_tuple_nd,
    prod,
    window_view,
)
from engine.relay.op.nn.pool_nd import pool_geometry, pool_out_sizes
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

ARGMAX_KEY = "relay.attrs.MaxPoolArgmaxAttrs"


def _argmax_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    nd = len(attrs.pool_size)
    if data.ndim != nd + 2:
        raise TypeRelationError(f"a {nd}-D window needs a {nd + 2}-D input "
                                f"({canonical_data(nd)})", arg=0,
                                expected=f"a {nd + 2}-D tensor", actual=str(data))
    out = pool_out_sizes(data.shape[2:], attrs, nd)
    check_positive(out, "output (pool window larger than padded input)", 0, data)
    return TensorType([data.shape[0], data.shape[1], *out], "int64")


def _spatial_strides(size: Sequence[int], column_major: bool) -> list[int]:
    """What one step along each spatial axis adds to the flat index within a channel."""
    order = range(len(size)) if column_major else reversed(range(len(size)))
    steps, step = [0] * len(size), 1
    for a in order:
        steps[a], step = step, step * size[a]
    return steps


def _argmax_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    nd, size = len(attrs.pool_size), x.shape[2:]
    kernel, strides, dilation = attrs.pool_size, attrs.strides, attrs.dilation
    out, pads = pool_geometry(x, attrs, nd)
    low = lowest(x.dtype)
    view = window_view(pad_spatial(x, pads, low), kernel, out, strides, dilation)
    flat = view.reshape(*x.shape[:2], prod(kernel), *out)
    tap = np.unravel_index(np.argmax(flat, axis=2), tuple(kernel))  # first max wins
    grid = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    steps = _spatial_strides(size, bool(attrs.storage_order))
    index = np.zeros((*x.shape[:2], *out), dtype=np.int64)
    for a in range(nd):
        coord = grid[a] * strides[a] + tap[a] * dilation[a] - pads[a]
        index += coord.astype(np.int64) * steps[a]
    plane = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(*x.shape[:2],
                                                                         *[1] * nd)
    return index + plane * prod(size)


define_op("nn.max_pool_argmax", ("data",), _argmax_rel, OPAQUE, _argmax_compute,
          attrs_type_key=ARGMAX_KEY)


def max_pool_argmax(data: Expr, pool_size: Sequence[int], strides: Any = 1, dilation: Any = 1,
                    padding: Any = 0, ceil_mode: bool = False, storage_order: int = 0) -> Call:
    """The flat input index of each window's maximum (`data` in NCW, NCHW or NCDHW; the
    window rank is len(pool_size))."""
    nd = len(pool_size)
    if nd not in SPATIAL:
        raise ValueError(f"max_pool_argmax: 1-D to 3-D windows, got {nd}-D")
    return make_call("nn.max_pool_argmax", (data,), {
        "pool_size": ntuple(pool_size, nd, "pool_size"),
        "strides": ntuple(strides, nd, "strides"), "dilation": ntuple(dilation, nd, "dilation"),
        "padding": pad_tuple_nd(padding, nd), "ceil_mode": bool(ceil_mode),
        "storage_order": int(storage_order)}, ARGMAX_KEY)


__all__ = ["max_pool_argmax"]
