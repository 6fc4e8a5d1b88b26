"""image.resize2d: nearest, linear and cubic, separable per axis (TVM 0.10+ signature)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.nn._layout import dims, from_canonical, to_canonical
from engine.relay.op.op import INJECTIVE, define_op, make_call

RESIZE_KEY = "relay.attrs.Resize2DAttrs"


def source_coords(out_size: int, in_size: int, ctm: str, roi: tuple[float, float] = (0.0, 1.0),
                  scale: float | None = None) -> np.ndarray:
    """Input coordinate of each output index under a coordinate transformation mode.

    `scale` is the resize factor the modes that divide by it use (ONNX Resize given
    `scales`); by default it is out_size / in_size."""
    x = np.arange(out_size, dtype=np.float64)
    scale = out_size / in_size if not scale else float(scale)
    if ctm == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / (scale * in_size))
        return offset + (x + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_size > 1 else np.full_like(x, -0.5)
    if ctm == "align_corners":
        return x * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros_like(x)
    if ctm == "asymmetric":
        return x / scale
    if ctm == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if ctm == "tf_crop_and_resize":
        start, end = roi
        if out_size > 1:
            return start * (in_size - 1) + x * (end - start) * (in_size - 1) / (out_size - 1)
        return np.full_like(x, 0.5 * (start + end) * (in_size - 1))
    raise ValueError(f"resize2d: unknown coordinate_transformation_mode {ctm!r}")


def _nearest_index(coords: np.ndarray, rounding: str) -> np.ndarray:
    eps = 1e-5
    if rounding == "round":
        idx = np.sign(coords) * np.floor(np.abs(coords) + 0.5)
    elif rounding == "round_prefer_floor":
        idx = np.ceil(coords - 0.5)
    elif rounding == "round_prefer_ceil":
        idx = np.floor(coords + 0.5)
    elif rounding == "ceil":
        idx = np.ceil(coords - eps)
    else:
        idx = np.floor(coords + eps)
    return idx.astype(np.int64)


def _filter(method: str, alpha: float) -> tuple[Any, int]:
    """The interpolation kernel of `method` as a function of the distance in input pixels,
    and its support (weights vanish at distances >= support)."""
    if method == "linear":
        return (lambda t: np.clip(1.0 - np.abs(t), 0.0, 1.0)), 1

    def keys(t: np.ndarray) -> np.ndarray:  # Keys' cubic convolution kernel
        t = np.abs(t)
        near = ((alpha + 2) * t - (alpha + 3)) * t * t + 1
        far = ((alpha * t - 5 * alpha) * t + 8 * alpha) * t - 4 * alpha
        return np.where(t <= 1, near, np.where(t < 2, far, 0.0))
    return keys, 2


def axis_taps(out_size: int, in_size: int, method: str, ctm: str, rounding: str,
              cubic_alpha: float = -0.5, cubic_exclude: bool = False,
              roi: tuple[float, float] = (0.0, 1.0), scale: float | None = None,
              antialias: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indices (out, taps), weights (out, taps), in-bounds mask (out,)) along one axis.

    Linear and cubic weigh the input pixels within the kernel's support around the source
    coordinate; with `antialias` and a downscale (factor < 1) the kernel is stretched by
    1 / factor (a low-pass filter, as ONNX Resize's antialias) and the weights normalised.
    Taps past an edge read the edge pixel unless `cubic_exclude` (ONNX exclude_outside, for
    either method) drops them."""
    coords = source_coords(out_size, in_size, ctm, roi, scale)
    inside = (coords >= 0) & (coords <= in_size - 1) if ctm == "tf_crop_and_resize" else \
        np.ones(out_size, dtype=bool)
    if method == "nearest_neighbor":
        idx = np.clip(_nearest_index(coords, rounding), 0, in_size - 1)[:, None]
        return idx, np.ones_like(idx, dtype=np.float64), inside
    if method not in ("linear", "cubic"):
        raise ValueError(f"resize2d: unknown method {method!r}")
    kernel, support = _filter(method, cubic_alpha)
    factor = min(1.0, float(scale) if scale else out_size / in_size) if antialias else 1.0
    reach = int(np.ceil(support / factor))
    base = np.floor(coords).astype(np.int64)
    idx = base[:, None] + np.arange(1 - reach, reach + 1)
    weights = kernel((idx - coords[:, None]) * factor)
    if cubic_exclude:
        weights = np.where((idx >= 0) & (idx < in_size), weights, 0.0)
    if cubic_exclude or factor < 1.0:
        total = weights.sum(-1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, in_size - 1), weights, inside


def _resize_axis(x: np.ndarray, axis: int, taps: tuple[np.ndarray, np.ndarray, np.ndarray],
                 extrapolation: float) -> np.ndarray:
    idx, weights, inside = taps
    moved = np.moveaxis(x, axis, -1)
    gathered = moved[..., idx]  # (..., out, taps)
    out = np.einsum("...ot,ot->...o", gathered, weights.astype(x.dtype))
    if not inside.all():
        out = np.where(inside, out, np.asarray(extrapolation, out.dtype))
    return np.moveaxis(out, -1, axis)


def resize_nchw(x: np.ndarray, size: Sequence[int], method: str, ctm: str, rounding: str,
                cubic_alpha: float = -0.5, cubic_exclude: bool = False,
                roi: Sequence[float] = (0.0, 0.0, 1.0, 1.0),
                extrapolation: float = 0.0, scales: Sequence[float] | None = None,
                antialias: bool = False) -> np.ndarray:
    """Resize the H and W axes of an NCHW array (`scales`: the (H, W) factors the coordinate
    transformation uses, by default output / input size; `antialias`: see `axis_taps`)."""
    if not rounding and method == "nearest_neighbor":
        rounding = "round" if ctm == "align_corners" else "floor"
    out = x
    factors = tuple(scales) if scales else (None, None)
    for axis, (new, start, end, scale) in zip((2, 3), ((size[0], roi[0], roi[2], factors[0]),
                                                         (size[1], roi[1], roi[3], factors[1]))):
        taps = axis_taps(int(new), x.shape[axis], method, ctm, rounding, cubic_alpha,
                         cubic_exclude, (start, end), scale, antialias)
        out = _resize_axis(out, axis, taps, extrapolation)
    return out


def _resize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    n, c = dims(data, attrs.layout, "NC", 0)
    oh, ow = attrs.size
    new = {"N": n, "C": c, "H": oh, "W": ow}
    return TensorType([new[ch] for ch in attrs.layout], attrs.get("out_dtype") or data.dtype)


def _resize_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = to_canonical(xs[0], attrs.layout, "NCHW")
    roi = attrs.get("roi") or (0.0, 0.0, 1.0, 1.0)
    out = resize_nchw(x, attrs.size, attrs.method, attrs.coordinate_transformation_mode,
                      attrs.rounding_method, attrs.cubic_alpha, bool(attrs.cubic_exclude), roi,
                      attrs.extrapolation_value, attrs.get("scales"),
                      bool(attrs.get("antialias")))
    dtype = attrs.get("out_dtype") or xs[0].dtype
    if np.dtype(dtype).kind in "iu":
        out = np.round(out)
    return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.layout)).astype(dtype)


define_op("image.resize2d", ("data",), _resize_rel, INJECTIVE, _resize_compute,
          attrs_type_key=RESIZE_KEY)


def resize2d(data: Expr, size: Any, roi: Any = None, layout: str = "NCHW",
             method: str = "linear", coordinate_transformation_mode: str = "half_pixel",
             rounding_method: str = "", cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: str = "",
             scales: Sequence[float] | None = None, antialias: bool = False) -> Call:
    """Resize H and W to `size` (TVM's relay.image.resize2d); `scales` (H, W), when given,
    are the factors the coordinate transformation divides by (ONNX Resize's `scales`);
    `antialias` low-pass filters a linear or cubic downscale (ONNX Resize's antialias)."""
    attrs: dict[str, Any] = {
        "size": tuple(int(s) for s in size),
        "roi": None if roi is None else tuple(float(r) for r in roi),
        "layout": layout, "method": method,
        "coordinate_transformation_mode": coordinate_transformation_mode,
        "rounding_method": rounding_method, "cubic_alpha": float(cubic_alpha),
        "cubic_exclude": int(cubic_exclude), "extrapolation_value": float(extrapolation_value),
        "out_dtype": out_dtype}
    if scales:
        attrs["scales"] = tuple(float(v) for v in scales)
    if antialias:
        attrs["antialias"] = True
    return make_call("image.resize2d", (data,), attrs, RESIZE_KEY)


def onnx_plan(shape: Sequence[int], values: Any, kind: str, axes: Sequence[int] = (),
              policy: str = "stretch", roi: Any = (), hw: tuple[int, int] = (2, 3)
              ) -> tuple[tuple[int, int], tuple[float, float], tuple[float, float, float, float]]:
    """ONNX Resize's `scales` or `sizes` (`kind`), per entry of `axes` (default: every axis),
    with `keep_aspect_ratio_policy` and `roi` (starts then ends per axis) -> the (H, W) output
    size, the (H, W) scale factors and the (h0, w0, h1, w1) roi of image.resize2d."""
    rank = len(shape)
    axes = [int(a) % rank for a in axes] or list(range(rank))
    vals = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(vals) != len(axes):
        raise ValueError(f"resize: {kind} holds {len(vals)} values for {len(axes)} axes")
    ins = np.array([shape[a] for a in axes], dtype=np.float64)
    if kind == "scales":
        factors = vals
        sizes = (vals * ins).astype(np.int64)
    elif policy in ("not_larger", "not_smaller"):
        ratio = vals / ins
        one = ratio.min() if policy == "not_larger" else ratio.max()
        factors = np.full_like(ratio, one)
        sizes = (one * ins + 0.5).astype(np.int64)
    else:
        factors, sizes = vals / ins, vals.astype(np.int64)
    box = np.asarray(roi, dtype=np.float64).reshape(-1)
    starts, ends = (box[:len(axes)], box[len(axes):]) if len(box) == 2 * len(axes) else \
        (np.zeros(len(axes)), np.ones(len(axes)))
    out_size, out_scale, lo, hi = [0, 0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]
    for i, axis in enumerate(axes):
        if axis in hw:
            j = hw.index(axis)
            out_size[j], out_scale[j] = int(sizes[i]), float(factors[i])
            lo[j], hi[j] = float(starts[i]), float(ends[i])
        elif int(sizes[i]) != shape[axis]:
            raise ValueError(f"resize: only the H and W axes can be resized (axis {axis})")
    for j, axis in enumerate(hw):
        if axis not in axes:
            out_size[j] = int(shape[axis])
    return ((out_size[0], out_size[1]), (out_scale[0], out_scale[1]),
            (lo[0], lo[1], hi[0], hi[1]))


__all__ = ["onnx_plan", "resize2d"]
