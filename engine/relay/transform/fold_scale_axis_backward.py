"""BackwardFoldScaleAxis: fold `multiply(conv2d(x, w), s)` into `conv2d(x, w * s)`.

Two walks, as in TVM:

1. prepare (children first): each call that can absorb a per-channel scale on
   its output gets a `Message` (its channel axes): conv2d (full or depthwise,
   unblocked layouts) and dense on their output channel, add/subtract when a
   side has a message and the other side broadcasts along it. Only a value
   with a single consumer gets a message: scaling it must not change another
   user.
2. transform: a multiply by a scale that varies only along the message axes of
   its other operand pushes the scale down into it; a conv2d/dense given a
   scale multiplies its weight along the output-channel axis; add/subtract
   pass it to both sides (a side without a message is multiplied by it).

The conv that absorbs the scale carries its own and the multiply's spans, and
so do the new expressions that scale its weight (after FoldConstant: one
constant whose span names the conv and the batch norm it absorbed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from engine.ir.expr import Call, Expr, Function
from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.relay.expr_functor import ExprMutator, post_order_visit
from engine.relay.transform._rewrite import copy_type, fill_span, op_name
from engine.relay.transform.fold_scale_axis_util import (
    Message,
    channel_scale,
    expand_scale,
    fold_refusal,
    foldable_conv,
    match_broadcast,
    ref_counts,
    scaled_weight,
    shape_of,
    spans_of,
)
from engine.transform.remarks import APPLIED, MISSED, remark
from engine.transform.rewrites import allow_rewrite

Prep = Callable[[Call, list[Message | None]], Message | None]


# --- prepare: which outputs can absorb a scale ----------------------------------------------

def _conv_prep(call: Call, _: list[Message | None]) -> Message | None:
    layouts = foldable_conv(call)
    return None if layouts is None else Message((layouts[2].index("C"),))


def _dense_prep(call: Call, _: list[Message | None]) -> Message | None:
    shape = shape_of(call)
    return None if not shape else Message((len(shape) - 1,))


def _add_sub_prep(call: Call, msgs: list[Message | None]) -> Message | None:
    lhs, rhs = shape_of(call.args[0]), shape_of(call.args[1])
    if lhs is None or rhs is None:
        return None
    if msgs[0] is not None and match_broadcast(lhs, rhs, msgs[0].axes):
        return msgs[0]
    if msgs[1] is not None and match_broadcast(rhs, lhs, msgs[1].axes):
        return msgs[1]
    if msgs[0] is not None and msgs[1] is not None and msgs[0].axes == msgs[1].axes \
            and lhs == rhs:
        return msgs[0]
    return None


BACKWARD_PREP: dict[str, Prep] = {
    "nn.conv2d": _conv_prep,
    "nn.dense": _dense_prep,
    "add": _add_sub_prep,
    "subtract": _add_sub_prep,
}


def prepare(body: Expr) -> dict[Expr, Message]:
    """The message of every call whose single consumer may scale it."""
    counts = ref_counts(body)
    messages: dict[Expr, Message] = {}

    def visit(node: Expr) -> None:
        prep = BACKWARD_PREP.get(op_name(node) or "")
        if prep is None or counts[node] != 1:
            return
        assert isinstance(node, Call)
        message = prep(node, [messages.get(arg) for arg in node.args])
        if message is not None:
            messages[node] = message

    post_order_visit(body, visit)
    return messages


# --- transform ------------------------------------------------------------------------------

class BackwardFolder(ExprMutator):
    """Rewrites a body given the prepared messages; `folded` counts the scales folded."""

    def __init__(self, body: Expr) -> None:
        super().__init__()
        self.messages = prepare(body)
        self.folded = 0

    def visit_call(self, call: Call) -> Expr:
        rule = BACKWARD_TRANSFORM.get(op_name(call) or "")
        if rule is None:
            return self.normal(call)
        return copy_type(rule(self, call, None, None, UNKNOWN_SPAN), call)

    def visit_function(self, fn: Function) -> Expr:
        return fn if fn.is_primitive() else super().visit_function(fn)

    def normal(self, call: Call) -> Expr:
        return ExprMutator.visit_call(self, call)

    def transform(self, expr: Expr, message: Message | None, scale: Expr | None,
                  span: SpanLike) -> Expr:
        """`expr` rewritten to produce its value times `scale` (along `message.axes`)."""
        if message is None or scale is None:
            return self.visit(expr)
        assert isinstance(expr, Call)
        return copy_type(BACKWARD_TRANSFORM[op_name(expr) or ""](self, expr, message, scale,
                                                                   span), expr)


Transform = Callable[[BackwardFolder, Call, Message | None, Expr | None, SpanLike], Expr]


def _multiply_transform(folder: BackwardFolder, call: Call, message: Message | None,
                        scale: Expr | None, span: SpanLike) -> Expr:
    for side in (0, 1):
        value, other = call.args[side], call.args[1 - side]
        msg = folder.messages.get(value)
        if msg is None:
            continue
        lhs, rhs = shape_of(value), shape_of(other)
        refusal = fold_refusal(lhs, rhs, other, msg)
        if refusal is not None:
            remark(MISSED, "backward-fold", f"scale not folded: {refusal}", call)
            break
        if not allow_rewrite(call):
            break
        assert lhs is not None and rhs is not None
        folded_span = spans_of(call)
        folder.folded += 1
        remark(APPLIED, "backward-fold", f"multiply folded backward into the weights of "
               f"{op_name(value)}", call)
        factor = channel_scale(other, lhs, rhs, msg.axes, folded_span)
        return folder.transform(value, msg, factor, folded_span)
    return folder.normal(call)


def _conv_transform(folder: BackwardFolder, call: Call, message: Message | None,
                    scale: Expr | None, span: SpanLike) -> Expr:
    layouts = foldable_conv(call)
    if message is None or scale is None or layouts is None:
        return folder.normal(call)
    kernel = layouts[1]
    return _scale_weight(folder, call, scale, len(kernel), kernel.index("O"), span)


def _dense_transform(folder: BackwardFolder, call: Call, message: Message | None,
                     scale: Expr | None, span: SpanLike) -> Expr:
    if message is None or scale is None:
        return folder.normal(call)
    return _scale_weight(folder, call, scale, 2, 0, span)


def _scale_weight(folder: BackwardFolder, call: Call, scale: Expr, ndim: int, axis: int,
                  span: SpanLike) -> Expr:
    data, weight = folder.visit(call.args[0]), folder.visit(call.args[1])
    new_span = spans_of(call) if not span else _merge(call.span, span)
    weight = scaled_weight(weight, scale, ndim, axis, new_span)
    return replace(call, args=(data, weight), span=new_span)


def _add_sub_transform(folder: BackwardFolder, call: Call, message: Message | None,
                       scale: Expr | None, span: SpanLike) -> Expr:
    if message is None or scale is None:
        return folder.normal(call)
    import engine.relay as relay

    lhs_msg, rhs_msg = (folder.messages.get(a) for a in call.args)
    ndim = len(shape_of(call) or ())
    args: list[Expr] = []
    for arg, msg in zip(call.args, (lhs_msg, rhs_msg)):
        if msg is not None:
            args.append(folder.transform(arg, message, scale, span))
            continue
        new = relay.multiply(folder.visit(arg), expand_scale(scale, ndim, message.axes))
        args.append(fill_span(new, span, [folder.visit(arg), scale]))
    return replace(call, args=tuple(args))


def _merge(*spans: SpanLike) -> SpanLike:
    from engine.relay.si_builder import SIBuilder

    return SIBuilder(list(spans)).CreateSpan()


BACKWARD_TRANSFORM: dict[str, Transform] = {
    "multiply": _multiply_transform,
    "nn.conv2d": _conv_transform,
    "nn.dense": _dense_transform,
    "add": _add_sub_transform,
    "subtract": _add_sub_transform,
}


def backward_fold_scale_axis(func: Function) -> tuple[Function, int]:
    """`func` with output-channel scales folded into the weights before them."""
    folder = BackwardFolder(func.body)
    if not folder.messages:
        return func, 0
    body = folder.visit(func.body)
    return (func if body is func.body else replace(func, body=body)), folder.folded


__all__ = ["BACKWARD_PREP", "BACKWARD_TRANSFORM", "BackwardFolder", "backward_fold_scale_axis",
           "prepare"]
