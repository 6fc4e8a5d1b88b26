"""Helpers shared by the rewriting passes: typed access, span propagation, call rewriters.

Span rules (the span-filling RFC, through `SIBuilder`):

- one-to-many (one call unpacked into several): `fill_span(new, span, inputs)` gives
  every new expression between `new` and `inputs` the span of what it replaced;
- many-to-one (several calls merged into one): `merged_span(nodes)` is the
  `SequentialSpan` of the replaced nodes, which the survivor carries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from engine.ir.expr import Call, Constant, Expr, Function, Var, children
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.span import SpanLike
from engine.ir.type import TensorType, Type
from engine.relay.expr_functor import ExprMutator
from engine.relay.si_builder import SIBuilder
from engine.relay.type_infer import infer_type
from engine.runtime.ndarray import NDArray
from engine.transform.remarks import APPLIED, remark
from engine.transform.rewrites import allow_rewrite

# --- types ------------------------------------------------------------------------------------


def type_of(expr: Expr) -> Type | None:
    """The checked type if InferType set it, else a Var's annotation, else None."""
    if expr.has_type:
        return expr.checked_type
    if isinstance(expr, Var):
        return expr.type_annotation
    if isinstance(expr, Constant):
        return TensorType(expr.data.shape, expr.data.dtype)
    return None


def tensor_type(expr: Expr) -> TensorType | None:
    ty = type_of(expr)
    return ty if isinstance(ty, TensorType) else None


def static_shape(expr: Expr) -> tuple[int, ...] | None:
    """The shape of a tensor-typed expression when every dimension is known."""
    ty = tensor_type(expr)
    if ty is None or not ty.is_static:
        return None
    return ty.concrete_shape


def copy_type(new: Expr, old: Expr) -> Expr:
    """Give `new` the checked type of `old` (a rewrite that keeps the value's type).

    Only when every child of `new` is typed: InferType skips typed nodes, so a typed
    node above an untyped child would leave that child untyped for good."""
    if new is not old and old.has_type and not new.has_type \
            and all(kid.has_type for kid in children(new)):
        new.set_checked_type(old.checked_type)
    return new


def ensure_typed(func: Function, mod: IRModule | None) -> Function:
    """Run type inference on `func` if any part of it is untyped (types are set in place,
    so the function object stays the same)."""
    infer_type(func, mod)
    return func


# --- spans ------------------------------------------------------------------------------------


def merged_span(nodes: Iterable[Expr]) -> SpanLike:
    """Many-to-one: the spans of every replaced node, merged (survivor carries them all)."""
    return SIBuilder([node.span for node in nodes]).CreateSpan()


def fill_span(new: Expr, span: SpanLike, inputs: Iterable[Expr] = ()) -> Expr:
    """One-to-many: every new expression from `new` down to `inputs` gets `span`.

    Expressions that already carry a known span (reused subexpressions) keep theirs.
    """
    return SIBuilder(span).RecursivelyFillSpan(new, list(inputs), overwrite=False)


def with_span(node: Expr, span: SpanLike) -> Expr:
    """`node` with `span` (the same object when it already has it), type kept."""
    if not span or node.span == span or isinstance(node, (Var, Op)):
        return node
    return copy_type(replace(node, span=span), node)


# --- calls ------------------------------------------------------------------------------------


def op_name(expr: Expr) -> str | None:
    """The operator name of a call to a primitive op, else None."""
    if isinstance(expr, Call) and isinstance(expr.op, Op):
        return expr.op.name
    return None


def is_op(expr: Expr, *names: str) -> bool:
    return op_name(expr) in names


def scalar_value(expr: Expr) -> float | None:
    """The value of a constant with a single element (any rank), else None."""
    if not isinstance(expr, Constant):
        return None
    if expr.data.size != 1:
        return None
    data = expr.data.numpy()
    if data.dtype.kind not in "biuf":
        return None
    return float(data.reshape(()))


def const_scalar(value: float, dtype: str) -> Constant:
    return Constant(NDArray(np.array(value, dtype=dtype)))


def expand_to_axis(bias: Expr, ndim: int, axis: int) -> Expr:
    """TVM's ExpandBiasToMatchAxis for one axis: `bias` (C,) broadcastable at `axis` of an
    `ndim`-d tensor, by `expand_dims(bias, 1, ndim - axis - 1)` when needed."""
    import engine.relay as relay

    pad = ndim - axis - 1
    return relay.expand_dims(bias, axis=1, num_newaxis=pad) if pad > 0 else bias


def normalize_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


Rewrite = Callable[[Call, Call], Expr | None]
"""`rewrite(pre, post)`: `pre` is the original call (typed), `post` the call with rewritten
arguments. Returns the replacement, or None to keep `post`."""


class CallRewriter(ExprMutator):
    """A mutator that dispatches calls to per-op rewrites from a table.

    Subclasses set `rewrites: dict[op name, Rewrite]`; calls to other ops (and every
    other node) are rebuilt only when a child changed.
    """

    rewrites: dict[str, Rewrite | Sequence[Rewrite]] = {}
    keep_type = True  # a result takes the replaced call's type (False: it is re-inferred)

    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__()
        self.mod = mod
        self.count = 0

    def rules_for(self, call: Call) -> Sequence[Rewrite]:
        """The rewrites to try on `call` (by default: the table entry of its op)."""
        name = op_name(call)
        rules = self.rewrites.get(name, ()) if name is not None else ()
        return (rules,) if callable(rules) else rules

    def visit_call(self, call: Call) -> Expr:
        post = super().visit_call(call)
        if not isinstance(post, Call):
            return post
        for rule in self.rules_for(call):
            result = rule(call, post)
            if result is not None and allow_rewrite(call):
                self.count += 1
                remark(APPLIED, rule.__name__, f"{rule.__name__} rewrote {op_name(call)}", call)
                return copy_type(result, call) if self.keep_type else result
        return post

    def visit_function(self, fn: Function) -> Expr:
        if fn.is_primitive():
            return fn
        return super().visit_function(fn)


def rewrite_function(rewriter: CallRewriter, func: Function) -> Function:
    """Apply a rewriter to a function body (the same function when nothing changed)."""
    body = rewriter.visit(func.body)
    if body is func.body:
        return func
    return replace(func, body=body)


def attr(call: Call, key: str, default: Any = None) -> Any:
    return call.attrs.get(key, default)
