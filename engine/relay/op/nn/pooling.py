"""2-D pooling: max/avg, global and adaptive (TVM's relay.nn.*_pool2d)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.dtype import lowest
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.nn._layout import (
    check_positive,
    dims,
    from_canonical,
    pad_tuple2d,
    pair,
    to_canonical,
)
from engine.relay.op.nn._nd import out_len
from engine.relay.op.op import OUT_ELEMWISE_FUSABLE, define_op, make_call

MAX_KEY = "relay.attrs.MaxPool2DAttrs"
AVG_KEY = "relay.attrs.AvgPool2DAttrs"
GLOBAL_KEY = "relay.attrs.GlobalPool2DAttrs"
ADAPTIVE_KEY = "relay.attrs.AdaptivePool2DAttrs"


def _out_shape(data: TensorType, layout: str, out_layout: str, oh: Any, ow: Any) -> TensorType:
    n, c = dims(data, layout, "NC", 0)
    by_letter = {"N": n, "C": c, "H": oh, "W": ow}
    return TensorType([by_letter[ch] for ch in (out_layout or layout)], data.dtype)


def _pool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    h, w = dims(data, attrs.layout, "HW", 0)
    top, left, bottom, right = attrs.padding
    ceil = bool(attrs.ceil_mode)
    kh, kw = attrs.pool_size
    oh = out_len(h, kh, attrs.strides[0], attrs.dilation[0], top, bottom, ceil)
    ow = out_len(w, kw, attrs.strides[1], attrs.dilation[1], left, right, ceil)
    check_positive([oh, ow], "output (pool window larger than padded input)", 0, data)
    return _out_shape(data, attrs.layout, attrs.get("out_layout", ""), oh, ow)


def _taps(xp: np.ndarray, attrs: Attrs, oh: int, ow: int) -> list[np.ndarray]:
    """One strided view of the padded input per pool-window tap."""
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    kh, kw = attrs.pool_size
    return [xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            for i in range(kh) for j in range(kw)]


def _geometry(x: np.ndarray, attrs: Attrs) -> tuple[int, int, tuple[int, int, int, int]]:
    """Output size and the padding, grown at the end for ceil_mode."""
    top, left, bottom, right = attrs.padding
    ceil = bool(attrs.ceil_mode)
    h, w = x.shape[2], x.shape[3]
    kh, kw = attrs.pool_size
    oh = out_len(h, kh, attrs.strides[0], attrs.dilation[0], top, bottom, ceil)
    ow = out_len(w, kw, attrs.strides[1], attrs.dilation[1], left, right, ceil)
    assert isinstance(oh, int) and isinstance(ow, int)
    need_h = (oh - 1) * attrs.strides[0] + attrs.dilation[0] * (kh - 1) + 1
    need_w = (ow - 1) * attrs.strides[1] + attrs.dilation[1] * (kw - 1) + 1
    bottom = max(bottom, need_h - h - top)
    right = max(right, need_w - w - left)
    return oh, ow, (top, left, bottom, right)


def _pad(x: np.ndarray, pads: tuple[int, int, int, int], value: float) -> np.ndarray:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _max_pool_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = to_canonical(xs[0], attrs.layout, "NCHW")
    oh, ow, pads = _geometry(x, attrs)
    low = lowest(x.dtype)
    taps = _taps(_pad(x, pads, low), attrs, oh, ow)
    out = taps[0].copy()
    for tap in taps[1:]:
        np.maximum(out, tap, out=out)
    return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.get("out_layout") or
                                               attrs.layout))


def _avg_pool_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = to_canonical(xs[0], attrs.layout, "NCHW")
    oh, ow, pads = _geometry(x, attrs)
    total = np.zeros(x.shape[:2] + (oh, ow), dtype=np.float64 if x.dtype.kind != "f" else x.dtype)
    for tap in _taps(_pad(x, pads, 0), attrs, oh, ow):
        total += tap
    mask = np.zeros((1, 1) + x.shape[2:], dtype=total.dtype) + 1
    top, left, bottom, right = attrs.padding
    if attrs.count_include_pad:
        mask = _pad(mask, (top, left, bottom, right), 1)
        mask = _pad(mask, (0, 0, pads[2] - bottom, pads[3] - right), 0)
    else:
        mask = _pad(mask, pads, 0)
    count = np.zeros((1, 1, oh, ow), dtype=total.dtype)
    for tap in _taps(mask, attrs, oh, ow):
        count += tap
    out = (total / np.maximum(count, 1)).astype(x.dtype, copy=False)
    return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.get("out_layout") or
                                               attrs.layout))


define_op("nn.max_pool2d", ("data",), _pool_rel, OUT_ELEMWISE_FUSABLE, _max_pool_compute,
          attrs_type_key=MAX_KEY)
define_op("nn.avg_pool2d", ("data",), _pool_rel, OUT_ELEMWISE_FUSABLE, _avg_pool_compute,
          attrs_type_key=AVG_KEY)


def _pool_attrs(pool_size: Any, strides: Any, dilation: Any, padding: Any, layout: str,
                out_layout: str, ceil_mode: bool) -> dict[str, Any]:
    return {"pool_size": pair(pool_size), "strides": pair(strides), "dilation": pair(dilation),
            "padding": pad_tuple2d(padding), "layout": layout, "out_layout": out_layout,
            "ceil_mode": bool(ceil_mode)}


def max_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1),
               dilation: Any = (1, 1), padding: Any = (0, 0), layout: str = "NCHW",
               out_layout: str = "", ceil_mode: bool = False) -> Call:
    return make_call("nn.max_pool2d", (data,), _pool_attrs(
        pool_size, strides, dilation, padding, layout, out_layout, ceil_mode), MAX_KEY)


def avg_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1),
               dilation: Any = (1, 1), padding: Any = (0, 0), layout: str = "NCHW",
               out_layout: str = "", ceil_mode: bool = False,
               count_include_pad: bool = False) -> Call:
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = bool(count_include_pad)
    return make_call("nn.avg_pool2d", (data,), attrs, AVG_KEY)


# --- global / adaptive -------------------------------------------------------------------
def _global_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    dims(data, attrs.layout, "HW", 0)
    return _out_shape(data, attrs.layout, attrs.get("out_layout", ""), 1, 1)


def _global_compute(reduce: str) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = xs[0]
        layout = attrs.layout
        axes = (layout.index("H"), layout.index("W"))
        out = getattr(np, reduce)(x, axis=axes, keepdims=True).astype(x.dtype, copy=False)
        return from_canonical(out, layout, attrs.get("out_layout") or layout)
    return compute


define_op("nn.global_avg_pool2d", ("data",), _global_rel, OUT_ELEMWISE_FUSABLE,
          _global_compute("mean"), attrs_type_key=GLOBAL_KEY)
define_op("nn.global_max_pool2d", ("data",), _global_rel, OUT_ELEMWISE_FUSABLE,
          _global_compute("max"), attrs_type_key=GLOBAL_KEY)


def global_avg_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    return make_call("nn.global_avg_pool2d", (data,), {"layout": layout,
                                                       "out_layout": out_layout}, GLOBAL_KEY)


def global_max_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    return make_call("nn.global_max_pool2d", (data,), {"layout": layout,
                                                       "out_layout": out_layout}, GLOBAL_KEY)


def _adaptive_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    h, w = dims(data, attrs.layout, "HW", 0)
    size = attrs.get("output_size") or (h, w)
    oh, ow = (size[0], size[0]) if len(size) == 1 else (size[0], size[1])
    return _out_shape(data, attrs.layout, attrs.get("out_layout", ""), oh, ow)


def _adaptive_compute(reduce: str) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = to_canonical(xs[0], attrs.layout, "NCHW")
        h, w = x.shape[2:]
        size = attrs.get("output_size") or (h, w)
        oh, ow = (size[0], size[0]) if len(size) == 1 else (size[0], size[1])
        fn = getattr(np, reduce)
        out = np.empty(x.shape[:2] + (oh, ow), dtype=x.dtype)
        for i in range(oh):
            h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
            for j in range(ow):
                w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
                out[:, :, i, j] = fn(x[:, :, h0:h1, w0:w1], axis=(2, 3))
        return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.get("out_layout") or
                                                   attrs.layout))
    return compute


define_op("nn.adaptive_avg_pool2d", ("data",), _adaptive_rel, OUT_ELEMWISE_FUSABLE,
          _adaptive_compute("mean"), attrs_type_key=ADAPTIVE_KEY)
define_op("nn.adaptive_max_pool2d", ("data",), _adaptive_rel, OUT_ELEMWISE_FUSABLE,
          _adaptive_compute("max"), attrs_type_key=ADAPTIVE_KEY)


def adaptive_avg_pool2d(data: Expr, output_size: Any = None, layout: str = "NCHW",
                        out_layout: str = "") -> Call:
    size = None if output_size is None else tuple(int(s) for s in np.atleast_1d(output_size))
    return make_call("nn.adaptive_avg_pool2d", (data,), {
        "output_size": size, "layout": layout, "out_layout": out_layout}, ADAPTIVE_KEY)


def adaptive_max_pool2d(data: Expr, output_size: Any = None, layout: str = "NCHW",
                        out_layout: str = "") -> Call:
    size = None if output_size is None else tuple(int(s) for s in np.atleast_1d(output_size))
    return make_call("nn.adaptive_max_pool2d", (data,), {
        "output_size": size, "layout": layout, "out_layout": out_layout}, ADAPTIVE_KEY)


__all__ = ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "global_avg_pool2d",
           "global_max_pool2d", "max_pool2d"]
