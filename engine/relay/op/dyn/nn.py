"""`dyn.nn.pad(data, pad_width, pad_value)` (TVM's): `pad_width` is an int tensor of shape
(rank, 2), (before, after) per axis, known at run time. Negative widths crop (ONNX Pad).

`dyn.nn.col2im(data, image_shape, block_shape)`: nn.col2im with the image and block shapes
known at run time (ONNX Col2Im's operands); the channel and spatial dims are `?`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.dyn._common import check_scalar, int_values, static_length
from engine.relay.op.nn.col2im import COL2IM_KEY, col2im_values
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

PAD_MODES = ("constant", "edge", "reflect", "wrap")


def _pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    data, widths = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    if tuple(widths.shape) != (data.ndim, 2):
        raise TypeRelationError("pad_width must have shape (rank, 2)", arg=1,
                                expected=f"({data.ndim}, 2)", actual=str(widths.shape))
    check_scalar(arg_types, 2, "pad_value")
    return TensorType((AnyDim(),) * data.ndim, data.dtype)


def _pad_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, widths, value = xs
    pads = np.asarray(widths, dtype=np.int64).reshape(data.ndim, 2)
    crop = tuple(slice(int(max(-b, 0)), data.shape[i] - int(max(-a, 0)))
                 for i, (b, a) in enumerate(pads))
    grow = [(int(max(b, 0)), int(max(a, 0))) for b, a in pads]
    mode = attrs.get("pad_mode", "constant")
    if mode == "constant":
        fill = np.asarray(value).reshape(-1)[0].astype(data.dtype)
        return np.pad(data[crop], grow, constant_values=fill)
    return np.pad(data[crop], grow, mode=mode)


define_op("dyn.nn.pad", ("data", "pad_width", "pad_val"), _pad_rel, OPAQUE, _pad_compute,
          attrs_type_key="relay.attrs.PadAttrs")


def pad(data: Expr, pad_width: Expr, pad_value: Expr, pad_mode: str = "constant") -> Call:
    """Pad (or, with negative widths, crop) by the run-time (rank, 2) tensor `pad_width`;
    `pad_mode` is constant, edge, reflect or wrap."""
    if pad_mode not in PAD_MODES:
        raise ValueError(f"pad_mode must be one of {PAD_MODES}, got {pad_mode!r}")
    return make_call("dyn.nn.pad", (data, pad_width, pad_value), {"pad_mode": pad_mode},
                     "relay.attrs.PadAttrs")


def _col2im_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    data = tensor_arg(arg_types, 0)
    nd = static_length(arg_types, 1, "image_shape")
    if static_length(arg_types, 2, "block_shape") != nd:
        raise TypeRelationError("block_shape needs one value per image dim", arg=2,
                                expected=str(nd), actual=str(arg_types[2]))
    return TensorType((data.shape[0], *(AnyDim(),) * (nd + 1)), data.dtype)


def _col2im_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, image, block = xs
    return col2im_values(data, int_values(image), int_values(block), attrs.dilations,
                         attrs.pads, attrs.strides)


define_op("dyn.nn.col2im", ("data", "image_shape", "block_shape"), _col2im_rel, OPAQUE,
          _col2im_compute, attrs_type_key=COL2IM_KEY)


def col2im(data: Expr, image_shape: Expr, block_shape: Expr, window: dict[str, Any]) -> Call:
    """nn.col2im with run-time `image_shape` and `block_shape`; `window` holds its
    dilations, pads and strides (`nn.col2im.col2im_attrs`)."""
    return make_call("dyn.nn.col2im", (data, image_shape, block_shape), dict(window),
                     COL2IM_KEY)


__all__ = ["col2im", "pad"]
