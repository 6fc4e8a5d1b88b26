"""Shared pieces of the 1-D/3-D conv and pool ops: layout letters, attr normalisation,
padding and strided window views over any number of spatial axes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from engine.ir.type import Dim

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
"""The spatial letters of an N-d layout (TVM: NCW, NCHW, NCDHW)."""


def canonical_data(nd: int) -> str:
    return "NC" + SPATIAL[nd]


def canonical_kernel(nd: int, transposed: bool = False) -> str:
    return ("IO" if transposed else "OI") + SPATIAL[nd]


def accumulator_dtype(*arrays: np.ndarray) -> np.dtype:
    """The dtype a multiply-add loop sums in: float32 for half-precision operands, as numpy's
    matmul, BLAS and onnxruntime's kernels sum them; otherwise the operands' result type."""
    dtype = np.result_type(*arrays)
    return np.dtype("float32") if dtype.kind == "f" and dtype.itemsize < 4 else dtype


def ntuple(value: Any, nd: int, what: str = "value") -> tuple[int, ...]:
    """`nd` ints from one int or a sequence of 1 or `nd` ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * nd
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * nd
    if len(values) != nd:
        raise ValueError(f"{what} must have 1 or {nd} values, got {value!r}")
    return values


def ntuple_or_none(value: Any, nd: int, what: str = "value") -> tuple[int, ...] | None:
    return None if value is None else ntuple(value, nd, what)


def pad_tuple_nd(padding: Any, nd: int) -> tuple[int, ...]:
    """`2 * nd` pads, all begins then all ends, from 1, `nd` or `2 * nd` values
    (TVM's get_pad_tuple1d / get_pad_tuple3d)."""
    if isinstance(padding, (int, np.integer)):
        padding = (int(padding),)
    pads = tuple(int(p) for p in padding)
    if len(pads) == 1:
        return pads * (2 * nd)
    if len(pads) == nd:
        return pads + pads
    if len(pads) == 2 * nd:
        return pads
    raise ValueError(f"padding must have 1, {nd} or {2 * nd} values, got {padding!r}")


def out_len(size: Dim, kernel: Dim, stride: int, dilation: int, before: int, after: int,
            ceil_mode: bool = False) -> Dim:
    """Output length of a window op along one axis (a dynamic dim stays dynamic). In
    ceil_mode a last window that would start in the end padding is dropped (as PyTorch and
    ONNX do): every window starts inside the input or its begin padding."""
    if not isinstance(size, int) or not isinstance(kernel, int):
        return size if not isinstance(size, int) else kernel
    span = size + before + after - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = (span + stride - 1) // stride + 1
    return out - 1 if (out - 1) * stride >= size + before else out


def pad_spatial(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    """Pad the spatial axes (2..) of an NC... array by begins-then-ends `pads`."""
    nd = x.ndim - 2
    if not any(pads):
        return x
    width = [(0, 0), (0, 0)] + [(int(pads[i]), int(pads[i + nd])) for i in range(nd)]
    return np.pad(x, width, constant_values=value)


def window_view(xp: np.ndarray, kernel: Sequence[int], out: Sequence[int],
                strides: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """A (N, C, *kernel, *out) view of a padded NC... array: no copy."""
    nd = len(kernel)
    lead, spatial = xp.strides[:2], xp.strides[2:]
    view_strides = (*lead, *(spatial[i] * dilation[i] for i in range(nd)),
                    *(spatial[i] * strides[i] for i in range(nd)))
    shape = (*xp.shape[:2], *kernel, *out)
    return as_strided(xp, shape=shape, strides=view_strides, writeable=False)


def taps(kernel: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every kernel position, row-major."""
    return itertools.product(*(range(k) for k in kernel))


def tap_slices(tap: Sequence[int], out: Sequence[int], strides: Sequence[int],
               dilation: Sequence[int]) -> tuple[slice, ...]:
    """The spatial slices of a padded input that one kernel tap reads for every output."""
    return tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                 for t, o, s, d in zip(tap, out, strides, dilation))


def prod(values: Sequence[int]) -> int:
    return math.prod(int(v) for v in values)
