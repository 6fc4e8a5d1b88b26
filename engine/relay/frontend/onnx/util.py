"""Small helpers shared by the ONNX converters: padding, axes, dtypes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import helper

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import NodeContext


def onnx_dtype(elem_type: int) -> str:
    """The numpy dtype name of an ONNX element type (`bool`, `float32`, `int64`, ...)."""
    return str(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)))


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def norm_axes(axes: Sequence[int], rank: int) -> list[int]:
    return [norm_axis(int(a), rank) for a in axes]


def spatial_pads(ctx: NodeContext, kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int]) -> list[int]:
    """ONNX pads `[x1_begin, x2_begin, ..., x1_end, x2_end, ...]`, resolving `auto_pad`."""
    nd = len(kernel)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        pads = list(ctx.attr("pads", [0] * (2 * nd)))
        if len(pads) != 2 * nd:
            raise ctx.fail(f"pads {pads} should hold {2 * nd} values")
        return [int(p) for p in pads]
    if auto_pad == "VALID":
        return [0] * (2 * nd)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.fail(f"unknown auto_pad {auto_pad!r}")
    spatial = ctx.static_shape(0)[2:]
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else big)
        ends.append(big if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def relay_padding(pads: Sequence[int]) -> tuple[int, ...]:
    """TVM's padding order is the same begins-then-ends order ONNX uses."""
    return tuple(int(p) for p in pads)


def wrap_negative(indices: Expr, sizes: Expr, dtype: str) -> Expr:
    """ONNX indices count from the end when negative: i < 0 -> i + size."""
    return relay.where(relay.less(indices, relay.const(0, dtype)), relay.add(indices, sizes),
                       indices)


def wrapped_indices(ctx: NodeContext, index: int, axes: Sequence[int]) -> Expr:
    """Input `index` (indices into input 0 along `axes`: one axis for Gather, the last index
    axis's positions for GatherND) with negative entries made positive: folded when the
    indices are known at import time, else computed (from shape_of for dynamic sizes)."""
    dims = [ctx.shape(0)[a] for a in axes]
    static = all(d is not None for d in dims)
    known = ctx.value(index)
    if known is not None and not (np.asarray(known) < 0).any():
        return ctx.input(index)
    dtype = ctx.dtype(index)
    sizes_np = np.asarray(dims if len(axes) > 1 else dims[0], dtype=dtype) if static else None
    if known is not None and sizes_np is not None:
        fixed = np.where(known < 0, known + sizes_np, known).astype(known.dtype)
        return relay.const(fixed, str(fixed.dtype))
    if sizes_np is not None:
        sizes = relay.const(sizes_np, dtype)
    else:
        picked = list(axes) if len(axes) > 1 else int(axes[0])
        sizes = relay.take(relay.shape_of(ctx.input(0), dtype=dtype),
                           relay.const(np.asarray(picked, "int64"), "int64"), axis=0)
    return wrap_negative(ctx.input(index), sizes, dtype)
