"""What FoldScaleAxis's forward and backward halves share: messages, broadcast matching,
positivity and the channel axes of conv2d / dense (TVM's fold_scale_axis.cc helpers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.ir.expr import Call, Constant, Expr
from engine.ir.span import SpanLike
from engine.ir.type import Dim
from engine.relay.expr_functor import post_order_visit
from engine.relay.transform._rewrite import (
    expand_to_axis,
    fill_span,
    merged_span,
    op_name,
    tensor_type,
)

PASS_THROUGH_POSITIVE = frozenset({"expand_dims", "squeeze", "reshape"})
"""Shape-only ops through which a constant's positivity is checked (as TVM does)."""


NOT_A_SCALE = "the operand does not broadcast as a scale"


@dataclass(frozen=True, slots=True)
class Message:
    """Which axes of a value a scale may move along, and whether it must be positive."""

    axes: tuple[int, ...]
    require_positive: bool = False


def intersect(lhs: Message | None, rhs: Message | None) -> Message | None:
    """Both consumers' requirements at once (None when they share no axis)."""
    if lhs is None or rhs is None:
        return None
    axes = tuple(a for a in lhs.axes if a in rhs.axes)
    if not axes:
        return None
    return Message(axes, lhs.require_positive or rhs.require_positive)


def shape_of(expr: Expr) -> tuple[Dim, ...] | None:
    ty = tensor_type(expr)
    return None if ty is None else ty.shape


def match_broadcast(lhs: Sequence[Dim], rhs: Sequence[Dim], axes: Sequence[int]) -> bool:
    """Whether `rhs` broadcast to `lhs` only varies along `axes` (TVM's
    MatchBroadcastToLeftAxes without a value)."""
    if len(lhs) < len(rhs):
        return False
    if not rhs:
        return bool(axes)
    base = len(lhs) - len(rhs)
    for i, dim in enumerate(lhs):
        if i in axes:
            if i < base or rhs[i - base] != dim:
                return False
        elif i >= base and rhs[i - base] != 1:
            return False
    return True


def channel_scale(value: Expr, lhs: Sequence[Dim], rhs: Sequence[Dim], axes: Sequence[int],
                  span: SpanLike) -> Expr:
    """`value` (shaped `rhs`, matching `lhs` along `axes`) as a tensor over `axes` only:
    squeezed, or for a scalar expanded and repeated to the axes' sizes. The new
    expressions carry `span`."""
    import engine.relay as relay

    if not rhs:
        out: Expr = relay.expand_dims(value, 0, len(axes))
        for i, axis in enumerate(axes):
            out = relay.repeat(out, int(lhs[axis]), i)  # type: ignore[arg-type]
        return fill_span(out, span, [value])
    base = len(lhs) - len(rhs)
    squeeze = [i - base for i in range(base, len(lhs)) if i not in axes]
    if not squeeze:
        return value
    return fill_span(relay.squeeze(value, axis=squeeze), span, [value])


def expand_scale(scale: Expr, ndim: int, axes: Sequence[int]) -> Expr:
    """A per-axis scale (over `axes`, in order) made broadcastable to an `ndim`-d tensor."""
    return expand_to_axis(scale, ndim, axes[-1]) if axes else scale


def is_float_scale(expr: Expr) -> bool:
    """A float operand: only a float multiply is a scale to fold. After an integer conv an
    integer multiply is a fixed-point rescale step (a 2**30-sized significand) that the
    weights' dtype cannot absorb."""
    ty = tensor_type(expr)
    return ty is not None and str(ty.dtype).startswith(("float", "bfloat"))


def is_all_positive(expr: Expr) -> bool:
    """A constant (possibly under expand_dims/squeeze/reshape) whose values are all > 0."""
    while op_name(expr) in PASS_THROUGH_POSITIVE:
        expr = expr.args[0]  # type: ignore[attr-defined]
    if not isinstance(expr, Constant):
        return False
    data = expr.data.numpy()
    return data.dtype.kind in "iuf" and bool(np.all(data > 0))


def fold_refusal(lhs: Sequence[Dim] | None, rhs: Sequence[Dim] | None, other: Expr,
                 message: Message) -> str | None:
    """Why the operand `other` (shape `rhs`) of a multiply of a value of shape `lhs` is not
    a scale to fold along `message.axes`, or None when it is."""
    if lhs is None or rhs is None or not match_broadcast(lhs, rhs, message.axes):
        return f"{NOT_A_SCALE} along axes {list(message.axes)}"
    if not is_float_scale(other):
        return "the operand is not a float (an integer multiply is a rescale step)"
    if message.require_positive and not is_all_positive(other):
        return "the scale must cross a relu, but it is not a constant of positive values"
    return None


def not_a_scale(refusal: str) -> bool:
    """Whether a refusal says the operand is no scale at all (the least telling reason,
    when a multiply's other side gave a better one)."""
    return refusal.startswith(NOT_A_SCALE)


def ref_counts(body: Expr) -> Counter[Expr]:
    """How many parents refer to each expression (the root counts as referred once)."""
    from engine.ir.expr import children

    counts: Counter[Expr] = Counter({body: 1})

    def visit(node: Expr) -> None:
        for kid in children(node):
            counts[kid] += 1

    post_order_visit(body, visit)
    return counts


# --- layouts of the ops a scale folds into ------------------------------------------------

def _plain(layout: str) -> bool:
    return layout.isalpha() and layout.isupper()


def conv_layouts(call: Call) -> tuple[str, str, str] | None:
    """(data, kernel, out) layouts of a conv2d with unblocked layouts, else None."""
    attrs = call.attrs
    data, kernel = str(attrs.data_layout), str(attrs.kernel_layout)
    out = str(attrs.get("out_layout") or data)
    if not (_plain(data) and _plain(kernel) and _plain(out)):
        return None
    return data, kernel, out


def is_depthwise(call: Call, kernel_layout: str) -> bool:
    """TVM's IsDepthwiseConv2D: as many groups as output channels, one input per group."""
    groups = int(call.attrs.groups)
    wshape = shape_of(call.args[1])
    if groups == 1 or wshape is None:
        return False
    return (wshape[kernel_layout.index("O")] == groups
            and wshape[kernel_layout.index("I")] == 1)


def foldable_conv(call: Call) -> tuple[str, str, str] | None:
    """The layouts of a conv2d a channel scale can fold into: full or depthwise."""
    layouts = conv_layouts(call)
    if layouts is None:
        return None
    if int(call.attrs.groups) != 1 and not is_depthwise(call, layouts[1]):
        return None
    return layouts


def scaled_weight(weight: Expr, scale: Expr, ndim: int, axis: int, span: SpanLike) -> Expr:
    """`weight * scale` expanded along `axis`, every new expression carrying `span`."""
    import engine.relay as relay

    new = relay.multiply(weight, expand_to_axis(scale, ndim, axis))
    return fill_span(new, span, [weight, scale])


def spans_of(*nodes: Expr) -> SpanLike:
    """Many-to-one: the merged spans of the expressions a fold replaces."""
    return merged_span(nodes)


__all__ = [
    "Message", "channel_scale", "conv_layouts", "expand_scale", "foldable_conv", "intersect",
    "is_all_positive", "is_depthwise", "match_broadcast", "ref_counts", "scaled_weight",
    "shape_of", "spans_of",
]
