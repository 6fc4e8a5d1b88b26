"""image.grid_sample (TVM's `relay.image.grid_sample`): sample `data` at the normalised
points of `grid`, 2-D (NCHW) or 3-D (NCDHW), nearest / bilinear / bicubic, with zeros,
border or reflection padding. The kernel follows onnx's GridSample reference (which
follows PyTorch's `grid_sampler`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, check_ndim, tensor_arg
from engine.relay.op.op import INJECTIVE, define_op, make_call

GRID_KEY = "relay.attrs.GridSampleAttrs"
METHODS = ("nearest", "bilinear", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
CUBIC_ALPHA = -0.75


def _grid_sample_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """data (N, C, *spatial), grid (N, len(spatial), *out) -> (N, C, *out)."""
    check_arity(arg_types, 2)
    data, grid = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_ndim(data, 0, (4, 5))
    check_ndim(grid, 1, data.ndim)
    check_dim(grid.shape[0], data.shape[0], 1, "dim 0 (batch)", grid)
    check_dim(grid.shape[1], data.ndim - 2, 1, "dim 1 (coordinates)", grid)
    return TensorType((data.shape[0], data.shape[1], *grid.shape[2:]), data.dtype)


def _reflect(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """Reflect by the near border until inside [low, high]."""
    span = high - low

    def folded(dist: np.ndarray, near: float, far: float, sign: float) -> np.ndarray:
        n = np.trunc(dist / span)
        r = dist - n * span
        return np.where(n % 2 == 0, near + sign * r, far - sign * r)
    out = np.where(x < low, folded(low - x, low, high, 1.0), x)
    return np.where(x > high, folded(x - high, high, low, -1.0), out)


def _bounds(size: int, align_corners: bool) -> tuple[float, float]:
    return (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)


def _source(norm: np.ndarray, size: int, attrs: Attrs) -> np.ndarray:
    """Normalised [-1, 1] coordinates as source positions, snapped and padded."""
    align = bool(attrs.align_corners)
    x = (norm + 1) / 2 * (size - 1) if align else ((norm + 1) * size - 1) / 2
    if attrs.method == "nearest":
        x = np.rint(x)
    low, high = _bounds(size, align)
    if attrs.padding_mode == "border":
        return np.where((x < low) | (x > high), np.clip(x, 0, size - 1), x)
    if attrs.padding_mode == "reflection":
        return _reflect(x, low, high)
    return x


def _cubic(t: np.ndarray) -> list[np.ndarray]:
    a = CUBIC_ALPHA

    def near(d: np.ndarray) -> np.ndarray:
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(x: np.ndarray, method: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(index, weight) pairs along one axis."""
    if method == "nearest":
        return [(x.astype(np.int64), np.ones_like(x))]
    base = np.floor(x)
    t = x - base
    if method == "bilinear":
        return [(base.astype(np.int64), 1 - t), (base.astype(np.int64) + 1, t)]
    return [(base.astype(np.int64) + k - 1, w) for k, w in enumerate(_cubic(t))]


def _pixel_index(i: np.ndarray, size: int, attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
    """The index to read for tap `i` and whether it reads data (False: a zero pad)."""
    if attrs.padding_mode == "zeros":
        inside = (i >= 0) & (i < size)
        return np.clip(i, 0, size - 1), inside
    if attrs.padding_mode == "border":
        return np.clip(i, 0, size - 1), np.ones(i.shape, dtype=bool)
    low, high = _bounds(size, bool(attrs.align_corners))
    reflected = np.trunc(_reflect(i.astype(np.float64), low, high)).astype(np.int64)
    return np.clip(reflected, 0, size - 1), np.ones(i.shape, dtype=bool)


def _grid_sample_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, grid = xs
    spatial = data.shape[2:]
    nd = len(spatial)
    coords = [_source(grid[:, nd - 1 - axis].astype(np.float64), spatial[axis], attrs)
              for axis in range(nd)]
    per_axis = [_taps(x, str(attrs.method)) for x in coords]
    batch = np.arange(data.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))
    out = np.zeros((data.shape[0], *grid.shape[2:], data.shape[1]), dtype=np.float64)
    for combo in itertools.product(*per_axis):
        weight = np.ones(grid.shape[:1] + grid.shape[2:])
        index = []
        for axis, (i, w) in enumerate(combo):
            safe, inside = _pixel_index(i, spatial[axis], attrs)
            weight = weight * w * inside
            index.append(safe)
        where: tuple[Any, ...] = (batch, slice(None), *index)
        picked = data[where]  # (N, *out, C)
        out += picked * weight[..., None]
    return np.moveaxis(out, -1, 1).astype(data.dtype)


define_op("image.grid_sample", ("data", "grid"), _grid_sample_rel, INJECTIVE,
          _grid_sample_compute, attrs_type_key=GRID_KEY)


def grid_sample(data: Expr, grid: Expr, method: str = "bilinear", layout: str = "NCHW",
                padding_mode: str = "zeros", align_corners: bool = True) -> Call:
    """Sample `data` (NCHW or NCDHW) at `grid` (N, 2, H, W) or (N, 3, D, H, W), whose
    coordinate axis holds x (width) first, as TVM's grid_sample."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if padding_mode not in PADDINGS:
        raise ValueError(f"padding_mode must be one of {PADDINGS}, got {padding_mode!r}")
    if layout not in ("NCHW", "NCDHW"):
        raise ValueError(f"layout must be NCHW or NCDHW, got {layout!r}")
    return make_call("image.grid_sample", (data, grid), {
        "method": method, "layout": layout, "padding_mode": padding_mode,
        "align_corners": bool(align_corners)}, GRID_KEY)
