"""Small helpers shared by the ONNX converters: padding, axes, dtypes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import helper

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
