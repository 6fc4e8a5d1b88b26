"""`vision.roi_align` (TVM's, NCHW): pool each region of interest to a fixed grid by
averaging (or taking the largest of) bilinear samples, as Mask R-CNN's RoIAlign and ONNX
RoiAlign. Rois are (R, 5): batch index, then x1, y1, x2, y2 in input coordinates (scaled
by `spatial_scale`); `aligned` shifts them by half a pixel (ONNX's half_pixel mode), else a
region is at least one pixel wide (output_half_pixel)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, check_ndim, tensor_arg
from engine.relay.op.op import OPAQUE, define_op, make_call

ROI_ALIGN_KEY = "relay.attrs.ROIAlignAttrs"
MODES = ("avg", "max")


def _roi_align_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """data (N, C, H, W), rois (R, 5) -> (R, C, *pooled_size)."""
    check_arity(arg_types, 2)
    data, rois = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_ndim(data, 0, 4)
    check_ndim(rois, 1, 2)
    check_dim(rois.shape[1], 5, 1, "dim 1 (batch index, x1, y1, x2, y2)", rois)
    height, width = (int(v) for v in attrs.pooled_size)
    return TensorType((rois.shape[0], data.shape[1], height, width), data.dtype)


def _axis_samples(start: float, extent: float, bins: int, grid: int, size: int
                  ) -> tuple[np.ndarray, ...]:
    """Along one axis, per (bin, sample): low and high neighbours, their weights, and
    whether the sample lies inside the map (a sample more than a pixel out counts zero)."""
    pos = start + (np.arange(bins)[:, None] + (np.arange(grid)[None, :] + 0.5) / grid) * (
        extent / bins)
    inside = (pos >= -1.0) & (pos <= size)
    pos = np.clip(pos, 0.0, None)
    low = np.minimum(np.floor(pos).astype(np.int64), size - 1)
    high = np.minimum(low + 1, size - 1)
    pos = np.where(low >= size - 1, low, pos)
    frac = pos - low
    return low, high, (1.0 - frac) * inside, frac * inside


def _pool_roi(feature: np.ndarray, roi: np.ndarray, attrs: Attrs) -> np.ndarray:
    """(C, H, W) feature map, one roi (x1, y1, x2, y2) -> (C, PH, PW)."""
    ph, pw = (int(v) for v in attrs.pooled_size)
    offset = 0.5 if attrs.aligned else 0.0
    x1, y1, x2, y2 = (float(v) * float(attrs.spatial_scale) - offset for v in roi)
    rh, rw = y2 - y1, x2 - x1
    if not attrs.aligned:
        rh, rw = max(rh, 1.0), max(rw, 1.0)
    ratio = int(attrs.sample_ratio)
    gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
    gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
    channels, height, width = feature.shape
    if gh <= 0 or gw <= 0:
        return np.zeros((channels, ph, pw), feature.dtype)
    ylo, yhi, wy_lo, wy_hi = (a[:, :, None, None] for a in _axis_samples(y1, rh, ph, gh, height))
    xlo, xhi, wx_lo, wx_hi = (a[None, None] for a in _axis_samples(x1, rw, pw, gw, width))
    terms = [w * feature[:, yi, xi] for w, yi, xi in (
        (wy_lo * wx_lo, ylo, xlo), (wy_lo * wx_hi, ylo, xhi),
        (wy_hi * wx_lo, yhi, xlo), (wy_hi * wx_hi, yhi, xhi))]  # each (C, PH, GH, PW, GW)
    if attrs.mode == "max":
        return np.max(np.maximum.reduce(terms), axis=(2, 4))
    return np.sum(terms, axis=(0, 3, 5)) / max(gh * gw, 1)


def _roi_align_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, rois = xs
    out = [_pool_roi(data[int(roi[0])], roi[1:], attrs) for roi in rois]
    ph, pw = (int(v) for v in attrs.pooled_size)
    return np.asarray(out, dtype=data.dtype).reshape(len(rois), data.shape[1], ph, pw)


define_op("vision.roi_align", ("data", "rois"), _roi_align_rel, OPAQUE, _roi_align_compute,
          attrs_type_key=ROI_ALIGN_KEY)


def roi_align(data: Expr, rois: Expr, pooled_size: Sequence[int], spatial_scale: float,
              sample_ratio: int = -1, layout: str = "NCHW", mode: str = "avg",
              aligned: bool = False) -> Call:
    """Pool each roi of `rois` (R, 5) over `data` (NCHW) to `pooled_size`; `sample_ratio`
    samples per bin and axis (<= 0: as many as the bin is pixels, rounded up)."""
    if layout != "NCHW":
        raise ValueError(f"roi_align supports the NCHW layout, got {layout!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return make_call("vision.roi_align", (data, rois), {
        "pooled_size": tuple(int(v) for v in pooled_size), "spatial_scale": float(spatial_scale),
        "sample_ratio": int(sample_ratio), "layout": layout, "mode": mode,
        "aligned": bool(aligned)}, ROI_ALIGN_KEY)


__all__ = ["roi_align"]
