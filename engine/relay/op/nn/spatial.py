"""nn.pad, nn.depth_to_space, nn.space_to_depth, nn.upsampling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.expr import const
from engine.relay.op._typing import ANY, check_arity, is_any, tensor_arg, type_str
from engine.relay.op.nn._layout import dims, from_canonical, to_canonical
from engine.relay.op.op import INJECTIVE, TypeRelationError, define_op, make_call


def _pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    pads = attrs.pad_width
    if len(pads) != data.ndim:
        raise TypeRelationError("pad_width needs one (before, after) pair per axis", arg=0,
                                expected=f"{data.ndim} pairs", actual=type_str(data))
    shape = [ANY if is_any(d) else int(d) + int(b) + int(a) for d, (b, a) in zip(data.shape, pads)]
    return TensorType(shape, data.dtype)


def _pad_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, value = xs
    mode = attrs.get("pad_mode", "constant")
    pads = [tuple(p) for p in attrs.pad_width]
    if mode == "constant":
        return np.pad(data, pads, constant_values=value.astype(data.dtype))
    return np.pad(data, pads, mode="reflect" if mode == "reflect" else "edge")


define_op("nn.pad", ("data", "pad_val"), _pad_rel, INJECTIVE, _pad_compute,
          attrs_type_key="relay.attrs.PadAttrs")


def pad(data: Expr, pad_width: Any, pad_value: Any = 0, pad_mode: str = "constant") -> Call:
    """Pad with `pad_width` = ((before, after), ...) per axis; pad_value may be an Expr."""
    value = pad_value if isinstance(pad_value, Expr) else const(pad_value)
    widths = tuple((int(b), int(a)) for b, a in pad_width)
    return make_call("nn.pad", (data, value), {"pad_width": widths, "pad_mode": pad_mode},
                     "relay.attrs.PadAttrs")


# --- depth_to_space / space_to_depth ---------------------------------------------------------
def _d2s_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    n, c, h, w = dims(data, attrs.layout, "NCHW", 0)
    b = int(attrs.block_size)
    if not is_any(c) and int(c) % (b * b):
        raise TypeRelationError(f"channels must divide by block_size^2 = {b * b}", arg=0,
                                expected=f"channels divisible by {b * b}", actual=type_str(data))
    new = {"N": n, "C": ANY if is_any(c) else int(c) // (b * b),
           "H": ANY if is_any(h) else int(h) * b, "W": ANY if is_any(w) else int(w) * b}
    return TensorType([new[ch] for ch in attrs.layout], data.dtype)


def _d2s_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = to_canonical(xs[0], attrs.layout, "NCHW")
    n, c, h, w = x.shape
    b = int(attrs.block_size)
    if attrs.get("mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    out = y.reshape(n, c // (b * b), h * b, w * b)
    return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.layout))


define_op("nn.depth_to_space", ("data",), _d2s_rel, INJECTIVE, _d2s_compute,
          attrs_type_key="relay.attrs.SubPixelAttrs")


def depth_to_space(data: Expr, block_size: int, layout: str = "NCHW", mode: str = "DCR") -> Call:
    return make_call("nn.depth_to_space", (data,), {"block_size": int(block_size),
                                                    "layout": layout, "mode": mode},
                     "relay.attrs.SubPixelAttrs")


def _s2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    n, c, h, w = dims(data, attrs.layout, "NCHW", 0)
    b = int(attrs.block_size)
    for d in (h, w):
        if not is_any(d) and int(d) % b:
            raise TypeRelationError(f"height and width must divide by block_size {b}", arg=0,
                                    expected=f"spatial dims divisible by {b}",
                                    actual=type_str(data))
    new = {"N": n, "C": ANY if is_any(c) else int(c) * b * b,
           "H": ANY if is_any(h) else int(h) // b, "W": ANY if is_any(w) else int(w) // b}
    return TensorType([new[ch] for ch in attrs.layout], data.dtype)


def _s2d_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = to_canonical(xs[0], attrs.layout, "NCHW")
    n, c, h, w = x.shape
    b = int(attrs.block_size)
    y = x.reshape(n, c, h // b, b, w // b, b)
    if attrs.get("mode", "DCR") == "DCR":  # channel = (row, column, c), as TVM's
        y = y.transpose(0, 3, 5, 1, 2, 4)
    else:  # CRD: channel = (c, row, column)
        y = y.transpose(0, 1, 3, 5, 2, 4)
    out = y.reshape(n, c * b * b, h // b, w // b)
    return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.layout))


define_op("nn.space_to_depth", ("data",), _s2d_rel, INJECTIVE, _s2d_compute,
          attrs_type_key="relay.attrs.SubPixelAttrs")


def space_to_depth(data: Expr, block_size: int, layout: str = "NCHW", mode: str = "DCR") -> Call:
    """`mode` orders the output channels as depth_to_space reads them (DCR or CRD)."""
    return make_call("nn.space_to_depth", (data,), {"block_size": int(block_size),
                                                    "layout": layout, "mode": mode},
                     "relay.attrs.SubPixelAttrs")


# --- upsampling ----------------------------------------------------------------------------
def _scaled(d: Any, scale: float) -> Any:
    return ANY if is_any(d) else int(round(int(d) * scale))


def _upsampling_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    n, c, h, w = dims(data, attrs.layout, "NCHW", 0)
    new = {"N": n, "C": c, "H": _scaled(h, attrs.scale_h), "W": _scaled(w, attrs.scale_w)}
    return TensorType([new[ch] for ch in attrs.layout], data.dtype)


def _upsampling_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    from engine.relay.op.image.resize import resize_nchw

    x = to_canonical(xs[0], attrs.layout, "NCHW")
    size = (_scaled(x.shape[2], attrs.scale_h), _scaled(x.shape[3], attrs.scale_w))
    method = attrs.method if attrs.method != "bilinear" else "linear"
    ctm = "align_corners" if attrs.align_corners else "asymmetric"
    if method == "linear" and not attrs.align_corners:
        ctm = "half_pixel"
    out = resize_nchw(x, size, method, ctm, "floor" if method == "nearest_neighbor" else "")
    return np.ascontiguousarray(from_canonical(out, "NCHW", attrs.layout))


define_op("nn.upsampling", ("data",), _upsampling_rel, INJECTIVE, _upsampling_compute,
          attrs_type_key="relay.attrs.UpSamplingAttrs")


def upsampling(data: Expr, scale_h: float = 1, scale_w: float = 1, layout: str = "NCHW",
               method: str = "nearest_neighbor", align_corners: bool = False) -> Call:
    return make_call("nn.upsampling", (data,), {
        "scale_h": float(scale_h), "scale_w": float(scale_w), "layout": layout,
        "method": method, "align_corners": bool(align_corners)}, "relay.attrs.UpSamplingAttrs")


__all__ = ["depth_to_space", "pad", "space_to_depth", "upsampling"]
