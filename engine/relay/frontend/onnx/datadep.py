"""ONNX ops whose output shape depends on the data: NonZero, Compress, Unique and
NonMaxSuppression, through `argwhere`, `unique` and `vision.all_class_non_max_suppression`
(their `?` dims; see `relay.op.data_dependent`). A constant operand is resolved at import."""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis


@converter("NonZero", since=9)
def nonzero(ctx: NodeContext) -> ConvertResult:
    """(rank, ?) int64 coordinates of the non-zero elements: argwhere, transposed."""
    return relay.transpose(relay.argwhere(ctx.input(0), dtype="int64"), [1, 0])


def _kept(ctx: NodeContext) -> Expr:
    """The indices where Compress's condition holds (a constant when it is known)."""
    known = ctx.value(1)
    if known is not None:
        return relay.const(np.flatnonzero(np.asarray(known).reshape(-1)).astype("int64"),
                           "int64")
    condition = relay.reshape(ctx.input(1), [-1])
    return relay.reshape(relay.argwhere(condition, dtype="int64"), [-1])


@converter("Compress", since=9)
def compress(ctx: NodeContext) -> ConvertResult:
    """The slices along `axis` (of the flattened input when there is none) whose condition
    is true: take at argwhere(condition)."""
    axis = ctx.attr("axis")
    if axis is None:
        return relay.take(relay.reshape(ctx.input(0), [-1]), _kept(ctx), axis=0)
    return relay.take(ctx.input(0), _kept(ctx), axis=norm_axis(int(axis), ctx.rank(0)))


@converter("Unique", since=11)
def unique(ctx: NodeContext) -> ConvertResult:
    axis = ctx.attr("axis")
    out = relay.unique(ctx.input(0), axis=None if axis is None else norm_axis(int(axis),
                                                                               ctx.rank(0)),
                       is_sorted=bool(ctx.attr("sorted", 1)), dtype="int64")
    return [out[i] for i in range(4)]


def _scalar_or(ctx: NodeContext, index: int, default: float, dtype: str) -> Expr:
    if ctx.has(index):
        return relay.cast(ctx.input(index), dtype)
    return relay.const(np.array(default, dtype), dtype)


@converter("NonMaxSuppression", since=10)
def non_max_suppression(ctx: NodeContext) -> ConvertResult:
    """Selected [batch, class, box] rows; without max_output_boxes_per_class nothing is
    selected, without score_threshold every box is a candidate."""
    limit = _scalar_or(ctx, 2, 0, "int64")
    iou = _scalar_or(ctx, 3, 0.0, "float32")
    score = _scalar_or(ctx, 4, -np.inf, "float32")
    return relay.vision.all_class_non_max_suppression(
        ctx.input(0), ctx.input(1), limit, iou, score,
        center_point_box=bool(ctx.attr("center_point_box", 0)))
