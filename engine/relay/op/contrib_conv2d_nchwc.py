"""nn.contrib_conv2d_NCHWc: conv2d on channel-blocked data, the layout AlterOpLayout picks for
CPU targets with SIMD (TVM's `relay.nn.contrib_conv2d_nchwc`).

Data `NCHW{i}c`, kernel `OIHW{i}i{o}o`, output `NCHW{o}c`: the channel axes are
split into blocks of `i` / `o` lanes. The type relation and the numpy compute
unblock to NCHW / OIHW, run conv2d there and block the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.op import Op, register_op_attr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.layout_infer import conv_layout, primal
from engine.relay.op.nn._layout import pad_tuple2d, pair, pair_or_none
from engine.relay.op.op import OUT_ELEMWISE_FUSABLE, define_op, make_call

NCHWC_KEY = "relay.attrs.Conv2DAttrs"
NAME = "nn.contrib_conv2d_NCHWc"


def _transform_attrs(src: str, dst: str) -> Attrs:
    return Attrs({"src_layout": src, "dst_layout": dst},
                 type_key="relay.attrs.LayoutTransformAttrs")


def _relayout_type(ty: TensorType, src: str, dst: str) -> Type:
    rel = Op.get("layout_transform").get_attr("FTVMTypeRelation")
    return rel([ty], _transform_attrs(src, dst))


def _relayout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if src == dst:
        return x
    compute = Op.get("layout_transform").get_attr("FNumpyCompute")
    return np.asarray(compute([x], _transform_attrs(src, dst)))


def _plain_attrs(attrs: Attrs) -> Attrs:
    """The attrs of the same convolution on NCHW data with an OIHW kernel."""
    return attrs.replace(data_layout="NCHW", kernel_layout="OIHW", out_layout="")


def _out_layout(attrs: Attrs) -> str:
    return str(attrs.get("out_layout") or attrs.data_layout)


def _nchwc_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, weight = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    plain_data = _relayout_type(data, attrs.data_layout, primal(attrs.data_layout))
    plain_weight = _relayout_type(weight, attrs.kernel_layout, primal(attrs.kernel_layout))
    conv_rel = Op.get("nn.conv2d").get_attr("FTVMTypeRelation")
    out = conv_rel([plain_data, plain_weight], _plain_attrs(attrs))
    return _relayout_type(out, "NCHW", _out_layout(attrs))


def _nchwc_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = _relayout(xs[0], attrs.data_layout, "NCHW")
    weight = _relayout(xs[1], attrs.kernel_layout, "OIHW")
    conv = Op.get("nn.conv2d").get_attr("FNumpyCompute")
    out = conv([data, weight], _plain_attrs(attrs))
    return np.ascontiguousarray(_relayout(np.asarray(out), "NCHW", _out_layout(attrs)))


define_op(NAME, ("data", "weight"), _nchwc_rel, OUT_ELEMWISE_FUSABLE, _nchwc_compute,
          attrs_type_key=NCHWC_KEY)
register_op_attr(NAME, "FInferCorrectLayout", conv_layout, level=5)


def contrib_conv2d_nchwc(data: Expr, kernel: Expr, strides: Any = (1, 1), padding: Any = (0, 0),
                         dilation: Any = (1, 1), groups: int = 1, channels: int | None = None,
                         kernel_size: Any = None, data_layout: str = "NCHW8c",
                         kernel_layout: str = "OIHW8i8o", out_layout: str = "",
                         out_dtype: str = "") -> Call:
    """conv2d on channel-blocked data (TVM's relay.nn.contrib_conv2d_nchwc)."""
    return make_call(NAME, (data, kernel), {
        "strides": pair(strides), "padding": pad_tuple2d(padding), "dilation": pair(dilation),
        "groups": int(groups), "channels": None if channels is None else int(channels),
        "kernel_size": pair_or_none(kernel_size), "data_layout": data_layout,
        "kernel_layout": kernel_layout, "out_layout": out_layout, "out_dtype": out_dtype,
    }, NCHWC_KEY)


__all__ = ["contrib_conv2d_nchwc"]
