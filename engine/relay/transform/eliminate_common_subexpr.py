"""EliminateCommonSubexpr: merge identical calls and projections (TVM's
`relay.transform.EliminateCommonSubexpr(fskip=None)`).

Two calls are the same when they call the same op with equal attrs and the same
(already merged) arguments; scalar constants count as equal by value, and tuples
of the same fields are one tuple (so `concatenate((%a, %b))` twice is one call).
Stateful ops are never merged, nor calls for which `fskip(call)` is true. Two
projections are the same when they take the same index of the same tuple.

It runs in two steps: find the classes of duplicates (post-order, iterative), then
rebuild with one survivor per class. The survivor carries the spans of every member
(`SIBuilder` many-to-one), so merged layers stay visible in the explorer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace

from engine.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, children
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.relay.expr_functor import ExprMutator, post_order
from engine.relay.transform._rewrite import copy_type, merged_span
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, allow_rewrite, register_pass

Skip = Callable[[Expr], bool]


def _scalar_key(expr: Expr) -> Hashable | None:
    if not isinstance(expr, Constant):
        return None
    if expr.data.ndim != 0:
        return None
    data = expr.data.numpy()
    return ("scalar", str(data.dtype), data.tobytes())


class DuplicateFinder:
    """Maps each call / projection to the first structurally identical one."""

    def __init__(self, fskip: Skip | None) -> None:
        self.fskip = fskip
        self.rep: dict[Expr, Expr] = {}
        self.table: dict[Hashable, Expr] = {}
        self.members: dict[Expr, list[Expr]] = {}

    def canon(self, expr: Expr) -> Hashable:
        expr = self.rep.get(expr, expr)
        return _scalar_key(expr) or id(expr)

    def key(self, node: Expr) -> Hashable | None:
        if isinstance(node, TupleGetItem):
            return ("getitem", self.canon(node.tuple_value), node.index)
        if isinstance(node, Tuple):
            return ("tuple", tuple(self.canon(f) for f in node.fields))
        if not isinstance(node, Call):
            return None
        if isinstance(node.op, Op) and node.op.get_attr("TOpIsStateful"):
            return None
        if self.fskip is not None and self.fskip(node):
            return None
        return ("call", self.canon(node.op), tuple(self.canon(a) for a in node.args),
                node.attrs, tuple(map(str, node.type_args)))

    def visit(self, node: Expr) -> None:
        key = self.key(node)
        if key is None:
            return
        first = self.table.get(key)
        if first is None:
            self.table[key] = node
            return
        self.rep[node] = first
        self.members.setdefault(first, [first]).append(node)


def _kids_outside_primitives(node: Expr) -> Sequence[Expr]:
    """Children, except that the body of a Primitive (fused) function is not entered."""
    if isinstance(node, Function) and node.is_primitive():
        return ()
    return children(node)


class Merger(ExprMutator):
    """Rebuilds the graph with one survivor per class of duplicates."""

    def __init__(self, finder: DuplicateFinder) -> None:
        super().__init__()
        self.finder = finder

    def _dispatch(self, expr: Expr) -> Expr:
        first = self.finder.rep.get(expr)
        if first is not None and allow_rewrite(expr):
            return self.visit(first)
        new = super()._dispatch(expr)
        members = self.finder.members.get(expr)
        if members:
            span = merged_span(members)
            if span and new.span != span:
                new = copy_type(replace(new, span=span), expr)
        return new

    def visit_function(self, fn: Function) -> Expr:
        if fn.is_primitive():
            return fn
        return super().visit_function(fn)


def eliminate_common_subexpr(func: Function, fskip: Skip | None = None) -> Function:
    finder = DuplicateFinder(fskip)
    for node in post_order(func.body, _kids_outside_primitives):
        finder.visit(node)
    if not finder.rep:
        return func
    body = Merger(finder).visit(func.body)
    return func if body is func.body else replace(func, body=body)


@register_pass
def EliminateCommonSubexpr(fskip: Skip | None = None) -> Pass:  # TVM's name
    """Merge duplicate calls; `fskip(call) -> bool` exempts calls from merging."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return eliminate_common_subexpr(func, fskip)

    return function_pass(transform, opt_level=3,
                         required=["InferType"])


__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr"]
