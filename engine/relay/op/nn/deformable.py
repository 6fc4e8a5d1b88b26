"""nn.deformable_conv2d (TVM's, NCHW / OIHW) and nn.modulated_deformable_conv2d (DCNv2: each
sampled tap also scaled by a mask), as ONNX DeformConv computes them.

Each kernel tap (i, j) of output pixel (y, x) reads the input at
(y * stride + i * dilation - pad + dy, x * stride + j * dilation - pad + dx), where (dy, dx)
is that tap's learned offset, bilinearly interpolated with zeros outside the input.
`offset` is (N, deformable_groups * kh * kw * 2, out_h, out_w): per group and tap, dy then dx;
`mask` is (N, deformable_groups * kh * kw, out_h, out_w). Input channels split evenly over
the deformable groups; `groups` is the convolution's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, is_any, tensor_arg, type_str
from engine.relay.op.nn._layout import pad_tuple2d, pair
from engine.relay.op.nn._nd import out_len
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

DEFORM_KEY = "relay.attrs.DeformableConv2DAttrs"


def _deform_rel(arity: int) -> Any:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        check_arity(arg_types, arity)
        data, offset, weight = (tensor_arg(arg_types, i) for i in range(3))
        if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW":
            raise TypeRelationError("only the NCHW / OIHW layouts are supported", arg=0)
        n, _, h, w = data.shape
        o, _, kh, kw = weight.shape
        top, left, bottom, right = attrs.padding
        oh = out_len(h, kh, attrs.strides[0], attrs.dilation[0], top, bottom)
        ow = out_len(w, kw, attrs.strides[1], attrs.dilation[1], left, right)
        taps = None if is_any(kh) or is_any(kw) else int(kh) * int(kw)
        want = None if taps is None else 2 * taps * int(attrs.deformable_groups)
        if want is not None and not is_any(offset.shape[1]) and int(offset.shape[1]) != want:
            raise TypeRelationError("offset needs 2 values per kernel tap and deformable group",
                                    arg=1, expected=f"{want} offset channels",
                                    actual=type_str(offset))
        return TensorType([n, o, oh, ow], attrs.get("out_dtype") or data.dtype)
    return rel


def _bilinear_taps(plane: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """plane (N, C, H, W) sampled at (N, P) float positions, zeros outside: (N, C, P)."""
    n, c, h, w = plane.shape
    flat = plane.reshape(n, c, h * w)
    y0, x0 = np.floor(ys), np.floor(xs)
    out = np.zeros((n, c, ys.shape[1]), dtype=np.float64)
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            weight = (1 - np.abs(ys - yy)) * (1 - np.abs(xs - xx))
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            index = (np.clip(yy, 0, h - 1) * w + np.clip(xx, 0, w - 1)).astype(np.int64)
            picked = np.take_along_axis(flat, np.broadcast_to(index[:, None], (n, c,
                                                                              index.shape[1])),
                                        axis=2)
            out += picked * np.where(inside, weight, 0.0)[:, None]
    return out


def _sampled_columns(x: np.ndarray, offset: np.ndarray, mask: np.ndarray | None,
                     attrs: Attrs, kh: int, kw: int) -> np.ndarray:
    """(N, C, kh * kw, out_h * out_w): the input value each tap reads, times its mask."""
    n, c = x.shape[:2]
    oh, ow = offset.shape[2:]
    groups = int(attrs.deformable_groups)
    per_group = c // groups
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    top, left = attrs.padding[0], attrs.padding[1]
    base_y = (np.arange(oh) * sh - top)[:, None].repeat(ow, 1).reshape(-1)
    base_x = (np.arange(ow) * sw - left)[None, :].repeat(oh, 0).reshape(-1)
    offs = offset.reshape(n, groups, kh * kw, 2, oh * ow)
    cols = np.empty((n, c, kh * kw, oh * ow), dtype=np.float64)
    for g in range(groups):
        plane = x[:, g * per_group:(g + 1) * per_group]
        for t in range(kh * kw):
            i, j = divmod(t, kw)
            ys = base_y + i * dh + offs[:, g, t, 0]
            xs = base_x + j * dw + offs[:, g, t, 1]
            sampled = _bilinear_taps(plane, ys, xs)
            if mask is not None:
                sampled = sampled * mask.reshape(n, groups, kh * kw, oh * ow)[:, g, t, None]
            cols[:, g * per_group:(g + 1) * per_group, t] = sampled
    return cols


def _deform_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, offset, weight = xs[:3]
    mask = xs[3] if len(xs) > 3 else None
    o, ig, kh, kw = weight.shape
    n = x.shape[0]
    oh, ow = offset.shape[2:]
    groups = int(attrs.groups)
    cols = _sampled_columns(x, offset, mask, attrs, kh, kw)
    cols = cols.reshape(n, groups, ig * kh * kw, oh * ow)
    out = np.matmul(weight.reshape(groups, o // groups, ig * kh * kw).astype(np.float64), cols)
    return out.reshape(n, o, oh, ow).astype(attrs.get("out_dtype") or x.dtype)


define_op("nn.deformable_conv2d", ("data", "offset", "weight"), _deform_rel(3), OPAQUE,
          _deform_compute, attrs_type_key=DEFORM_KEY)
define_op("nn.modulated_deformable_conv2d", ("data", "offset", "weight", "mask"),
          _deform_rel(4), OPAQUE, _deform_compute, attrs_type_key=DEFORM_KEY)


def _attrs(strides: Any, padding: Any, dilation: Any, deformable_groups: int, groups: int,
           channels: int | None, kernel_size: Any, data_layout: str, kernel_layout: str,
           out_dtype: str) -> dict[str, Any]:
    return {"strides": pair(strides), "padding": pad_tuple2d(padding),
            "dilation": pair(dilation), "deformable_groups": int(deformable_groups),
            "groups": int(groups), "channels": channels,
            "kernel_size": None if kernel_size is None else pair(kernel_size),
            "data_layout": data_layout, "kernel_layout": kernel_layout, "out_layout": "",
            "out_dtype": out_dtype}


def deformable_conv2d(data: Expr, offset: Expr, weight: Expr, strides: Any = (1, 1),
                      padding: Any = (0, 0), dilation: Any = (1, 1), deformable_groups: int = 1,
                      groups: int = 1, channels: int | None = None, kernel_size: Any = None,
                      data_layout: str = "NCHW", kernel_layout: str = "OIHW",
                      out_dtype: str = "") -> Call:
    return make_call("nn.deformable_conv2d", (data, offset, weight), _attrs(
        strides, padding, dilation, deformable_groups, groups, channels, kernel_size,
        data_layout, kernel_layout, out_dtype), DEFORM_KEY)


def modulated_deformable_conv2d(data: Expr, offset: Expr, weight: Expr, mask: Expr,
                                strides: Any = (1, 1), padding: Any = (0, 0),
                                dilation: Any = (1, 1), deformable_groups: int = 1,
                                groups: int = 1, channels: int | None = None,
                                kernel_size: Any = None, data_layout: str = "NCHW",
                                kernel_layout: str = "OIHW", out_dtype: str = "") -> Call:
    """deformable_conv2d with each sampled tap scaled by `mask` (DCNv2)."""
    return make_call("nn.modulated_deformable_conv2d", (data, offset, weight, mask), _attrs(
        strides, padding, dilation, deformable_groups, groups, channels, kernel_size,
        data_layout, kernel_layout, out_dtype), DEFORM_KEY)


__all__ = ["deformable_conv2d", "modulated_deformable_conv2d"]
