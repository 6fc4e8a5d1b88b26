"""ForwardFoldScaleAxis: fold `conv2d(relu(x * s), w)` into `conv2d(relu(x), w * s)`.

Two walks, as in TVM:

1. prepare (consumers first): conv2d / dense ask their data for a scale on the
   input-channel axis; relu / leaky_relu pass the request on, requiring a
   positive scale; add / subtract pass it to the side that has the full shape.
   A value with several consumers gets the intersection of their requests.
2. rewrite (producers first): a multiply whose request is met (the other
   operand varies only along the requested axes, and is a positive constant
   when required) becomes a *scaled value* `(x, s)`; relu and add carry it
   through (add divides its other operand by `s`); conv2d / dense absorb it
   into their weight along the input-channel axis (output for depthwise).

A scaled value that nothing absorbs is simply its original expression, so a
partial fold never changes the result. The conv that absorbs a scale carries
its own span and those of the multiply it replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from engine.ir.expr import Call, Expr, Function, children
from engine.ir.span import SpanLike
from engine.relay.expr_functor import ExprMutator, post_order_visit
from engine.relay.transform._rewrite import copy_type, fill_span, op_name
from engine.relay.transform.fold_scale_axis_util import (
    Message,
    channel_scale,
    expand_scale,
    fold_refusal,
    foldable_conv,
    intersect,
    match_broadcast,
    not_a_scale,
    scaled_weight,
    shape_of,
    spans_of,
)
from engine.transform.remarks import APPLIED, MISSED, remark
from engine.transform.rewrites import allow_rewrite


@dataclass(frozen=True, slots=True, eq=False)
class Scaled:
    """`value * scale` along `axes`, not yet multiplied out; `span`: the folded multiply's."""

    value: Expr
    axes: tuple[int, ...]
    scale: Expr
    span: SpanLike


Prep = Callable[[Call, Message | None], list[Message | None]]


# --- prepare: which values a consumer wants scaled ------------------------------------------

def _conv_prep(call: Call, out: Message | None) -> list[Message | None]:
    layouts = foldable_conv(call)
    return [None if layouts is None else Message((layouts[0].index("C"),)), None]


def _dense_prep(call: Call, out: Message | None) -> list[Message | None]:
    shape = shape_of(call.args[0])
    return [None if not shape else Message((len(shape) - 1,)), None]


def _relu_prep(call: Call, out: Message | None) -> list[Message | None]:
    return [None if out is None else Message(out.axes, True)]


def _add_sub_prep(call: Call, out: Message | None) -> list[Message | None]:
    lhs, rhs = shape_of(call.args[0]), shape_of(call.args[1])
    if out is None or lhs is None or rhs is None:
        return [None, None]
    if match_broadcast(lhs, rhs, out.axes):
        return [out, None]
    if match_broadcast(rhs, lhs, out.axes):
        return [None, out]
    return [None, None]


FORWARD_PREP: dict[str, Prep] = {
    "nn.conv2d": _conv_prep,
    "nn.dense": _dense_prep,
    "nn.relu": _relu_prep,
    "nn.leaky_relu": _relu_prep,
    "add": _add_sub_prep,
    "subtract": _add_sub_prep,
}

_UNSEEN = Message((), False)


def prepare(body: Expr) -> dict[Expr, Message]:
    """The request every consumer of a value agrees on, for each value that has one."""
    order: list[Expr] = []
    post_order_visit(body, order.append)
    requests: dict[Expr, Message | None] = {body: None}

    def update(node: Expr, message: Message | None) -> None:
        old = requests.get(node, _UNSEEN)
        requests[node] = message if old is _UNSEEN else intersect(old, message)

    for node in reversed(order):  # every consumer before its producers
        prep = FORWARD_PREP.get(op_name(node) or "")
        if prep is None:
            for kid in children(node):
                update(kid, None)
            continue
        assert isinstance(node, Call)
        for arg, message in zip(node.args, prep(node, requests.get(node))):
            update(arg, message)
    return {k: v for k, v in requests.items() if v is not None and v is not _UNSEEN}


# --- rewrite --------------------------------------------------------------------------------

class ForwardFolder(ExprMutator):
    """Rewrites a body given the prepared requests; `folded` counts scales absorbed."""

    def __init__(self, body: Expr) -> None:
        super().__init__()
        self.messages = prepare(body)
        self.scaled: dict[Expr, Scaled] = {}
        self.folded = 0

    def visit_function(self, fn: Function) -> Expr:
        return fn if fn.is_primitive() else super().visit_function(fn)

    def visit_call(self, call: Call) -> Expr:
        post = super().visit_call(call)
        rule = FORWARD_REWRITE.get(op_name(call) or "")
        if rule is None or not isinstance(post, Call):
            return post
        args = [self.scaled.get(a, a) for a in post.args]
        result = rule(self, call, post, args)
        if result is None or (not isinstance(result, Scaled) and not allow_rewrite(call)):
            return post
        if isinstance(result, Scaled):
            self.scaled[post] = result  # consumers may absorb it; others use `post`
            return post
        remark(APPLIED, "forward-fold", f"scale folded forward into the weights of "
               f"{op_name(call)}", call)
        return copy_type(result, call)


Rewrite = Callable[[ForwardFolder, Call, Call, list], "Expr | Scaled | None"]


def _multiply_rewrite(folder: ForwardFolder, call: Call, post: Call, args: list
                      ) -> Scaled | None:
    message = folder.messages.get(call)
    if message is None:
        return None
    refusals: list[str] = []
    for side in (0, 1):
        lhs, rhs = shape_of(call.args[side]), shape_of(call.args[1 - side])
        other = post.args[1 - side]
        refusal = fold_refusal(lhs, rhs, other, message)
        if refusal is not None:
            refusals.append(refusal)
            continue
        assert lhs is not None and rhs is not None
        span = spans_of(call)
        scale = channel_scale(other, lhs, rhs, message.axes, span)
        return Scaled(post.args[side], message.axes, scale, span)
    remark(MISSED, "forward-fold", f"scale not folded: {min(refusals, key=not_a_scale)}", call)
    return None


def _relu_rewrite(folder: ForwardFolder, call: Call, post: Call, args: list) -> Scaled | None:
    data = args[0]
    if not isinstance(data, Scaled):
        return None
    return Scaled(replace(post, args=(data.value, *post.args[1:])), data.axes, data.scale,
                  data.span)


def _add_sub_rewrite(folder: ForwardFolder, call: Call, post: Call, args: list
                     ) -> Scaled | None:
    import engine.relay as relay

    scaled_sides = [i for i, a in enumerate(args) if isinstance(a, Scaled)]
    if len(scaled_sides) != 1:
        return None
    side = scaled_sides[0]
    scaled: Scaled = args[side]
    ndim = len(shape_of(call.args[side]) or ())
    other = post.args[1 - side]
    divided = relay.divide(other, expand_scale(scaled.scale, ndim, scaled.axes))
    divided = fill_span(divided, spans_of(call) or scaled.span, [other, scaled.scale])
    new_args = (scaled.value, divided) if side == 0 else (divided, scaled.value)
    return Scaled(replace(post, args=new_args), scaled.axes, scaled.scale, scaled.span)


def _conv_rewrite(folder: ForwardFolder, call: Call, post: Call, args: list) -> Expr | None:
    data = args[0]
    layouts = foldable_conv(call)
    if not isinstance(data, Scaled) or layouts is None \
            or data.axes != (layouts[0].index("C"),):
        return None
    kernel = layouts[1]
    axis = kernel.index("O") if int(call.attrs.groups) != 1 else kernel.index("I")
    return _absorb(folder, post, data, len(kernel), axis)


def _dense_rewrite(folder: ForwardFolder, call: Call, post: Call, args: list) -> Expr | None:
    data, shape = args[0], shape_of(call.args[0])
    if not isinstance(data, Scaled) or not shape or data.axes != (len(shape) - 1,):
        return None
    return _absorb(folder, post, data, 2, 1)


def _absorb(folder: ForwardFolder, post: Call, data: Scaled, ndim: int, axis: int) -> Expr:
    from engine.relay.si_builder import SIBuilder

    span = SIBuilder([post.span, data.span]).CreateSpan()
    weight = scaled_weight(post.args[1], data.scale, ndim, axis, span)
    folder.folded += 1
    return replace(post, args=(data.value, weight), span=span)


FORWARD_REWRITE: dict[str, Rewrite] = {
    "multiply": _multiply_rewrite,
    "nn.relu": _relu_rewrite,
    "nn.leaky_relu": _relu_rewrite,
    "add": _add_sub_rewrite,
    "subtract": _add_sub_rewrite,
    "nn.conv2d": _conv_rewrite,
    "nn.dense": _dense_rewrite,
}


def forward_fold_scale_axis(func: Function) -> tuple[Function, int]:
    """`func` with input-channel scales folded into the weights after them."""
    folder = ForwardFolder(func.body)
    if not folder.messages:
        return func, 0
    body = folder.visit(func.body)
    if not folder.folded or body is func.body:
        return func, 0
    return replace(func, body=body), folder.folded


__all__ = ["FORWARD_PREP", "FORWARD_REWRITE", "ForwardFolder", "Scaled",
           "forward_fold_scale_axis", "prepare"]
