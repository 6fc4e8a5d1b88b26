"""ToANormalForm: bind every computed value to a variable (TVM's
`relay.transform.ToANormalForm`).

Each call, tuple, projection, constant, `if` and nested function becomes
`let %xN = ...;` in the innermost scope that covers all its uses (function
bodies and `if` branches are scopes; a value used in both branches is bound
before the `if`, as TVM's dependency-graph scoping does). Existing lets keep
their variables. Primitive functions are bound whole, not converted inside.

Everything is iterative (a post-order list, a scope sweep, an emission sweep), so
a 100,000-node chain converts without deep recursion. Each new `let` and variable
carries the span of the value it binds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from engine.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.structural import structural_equal
from engine.relay.expr_functor import post_order
from engine.relay.transform._rewrite import copy_type
from engine.transform import Pass, PassContext, module_pass, register_pass

ATOMS = (Var, GlobalVar, Op)


@dataclass(eq=False)
class Scope:
    """A function body or an `if` branch: the bindings emitted into it, in order."""

    parent: Scope | None
    depth: int = 0
    bindings: list[tuple[Var, Expr]] = field(default_factory=list)

    def child(self) -> Scope:
        return Scope(self, self.depth + 1)


def lca(a: Scope, b: Scope) -> Scope:
    while a.depth > b.depth:
        a = a.parent  # type: ignore[assignment]
    while b.depth > a.depth:
        b = b.parent  # type: ignore[assignment]
    while a is not b:
        a, b = a.parent, b.parent  # type: ignore[assignment]
    return a


def _deps(node: Expr, let_value: dict[Var, Expr]) -> Sequence[Expr]:
    """What must be emitted before `node` (a let variable depends on its value)."""
    if isinstance(node, Var):
        value = let_value.get(node)
        return (value,) if value is not None else ()
    if isinstance(node, Let):
        return (node.value, node.body)  # its var is bound here, not emitted before
    if isinstance(node, Function):
        return () if node.is_primitive() else (node.body,)  # params are bound here
    return children(node)


class ANFConverter:
    """Converts one function body."""

    def __init__(self) -> None:
        self.let_value: dict[Var, Expr] = {}
        self.preassigned: dict[Expr, Var] = {}
        self.scope: dict[Expr, Scope] = {}
        self.inner: dict[tuple[Expr, int], Scope] = {}  # (if/function, child index) -> scope
        self.atom: dict[Expr, Expr] = {}
        self.fresh = 0

    def post_order(self, root: Expr) -> list[Expr]:
        return post_order(root, self._enter)

    def _enter(self, node: Expr) -> Sequence[Expr]:
        """Record what a let binds as it is entered, then give its dependencies."""
        if isinstance(node, Let):
            self.let_value[node.var] = node.value
            if not isinstance(node.value, ATOMS) and node.value not in self.preassigned:
                self.preassigned[node.value] = node.var
                self.atom[node.var] = node.var
        return _deps(node, self.let_value)

    def assign_scopes(self, order: list[Expr], root: Expr, top: Scope) -> None:
        self.scope[root] = top
        for node in reversed(order):
            here = self.scope.get(node)
            if here is None or isinstance(node, Var):
                continue
            for index, dep in enumerate(_deps(node, self.let_value)):
                use = self._use_scope(node, index, here)
                old = self.scope.get(dep)
                self.scope[dep] = use if old is None else lca(old, use)

    def _use_scope(self, node: Expr, index: int, here: Scope) -> Scope:
        if isinstance(node, If) and index > 0 or isinstance(node, Function):
            key = (node, index)
            if key not in self.inner:
                self.inner[key] = here.child()
            return self.inner[key]
        return here

    def emit(self, order: list[Expr]) -> None:
        for node in order:
            if isinstance(node, Var):
                if node not in self.atom:
                    value = self.let_value.get(node)
                    self.atom[node] = self.atom[value] if value is not None else node
            elif isinstance(node, ATOMS):
                self.atom[node] = node
            elif isinstance(node, Let):
                self.atom[node] = self.atom[node.body]
            else:
                self._bind(node)

    def _bind(self, node: Expr) -> None:
        value = copy_type(self._rebuild(node), node)
        var = self.preassigned.get(node)
        if var is None:
            self.fresh += 1
            var = Var(f"x{self.fresh}", span=node.span)
            if node.has_type:
                var.set_checked_type(node.checked_type)
        self.scope[node].bindings.append((var, value))
        self.atom[node] = var

    def _rebuild(self, node: Expr) -> Expr:
        a = self.atom
        if isinstance(node, Call):
            return _changed(node, op=a[node.op], args=tuple(a[x] for x in node.args))
        if isinstance(node, Tuple):
            return _changed(node, fields=tuple(a[x] for x in node.fields))
        if isinstance(node, TupleGetItem):
            return _changed(node, tuple_value=a[node.tuple_value])
        if isinstance(node, If):
            return _changed(node, cond=a[node.cond],
                            true_branch=self.materialize(self.inner[(node, 1)], node.true_branch),
                            false_branch=self.materialize(self.inner[(node, 2)],
                                                          node.false_branch))
        if isinstance(node, Function) and not node.is_primitive():
            return _changed(node, body=self.materialize(self.inner[(node, 0)], node.body))
        return node  # constants and primitive functions are bound as they are

    def materialize(self, scope: Scope, result: Expr) -> Expr:
        body = self.atom[result]
        for var, value in reversed(scope.bindings):
            body = Let(var, value, body, span=value.span)
        return body


def _changed(node: Expr, **fields: Any) -> Expr:
    same = all(getattr(node, k) is v or (isinstance(v, tuple) and _same(getattr(node, k), v))
               for k, v in fields.items())
    return node if same else replace(node, **fields)


def _same(a: tuple[Expr, ...], b: tuple[Expr, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def to_a_normal_form(expr: Expr) -> Expr:
    """A function's body (or an expression) in A-normal form."""
    if isinstance(expr, Function):
        if expr.is_primitive():
            return expr
        body = to_a_normal_form(expr.body)
        if body is expr.body or structural_equal(body, expr.body, map_free_vars=True):
            return expr  # already in A-normal form: keep the same object
        return replace(expr, body=body)
    if isinstance(expr, (*ATOMS, Constant)):
        return expr
    conv = ANFConverter()
    order = conv.post_order(expr)
    top = Scope(None)
    conv.assign_scopes(order, expr, top)
    conv.emit(order)
    return conv.materialize(top, expr)


def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
    for gv, func in mod.items():
        if isinstance(func, Function):
            new = to_a_normal_form(func)
            if new is not func:
                mod[gv] = new  # type: ignore[assignment]
    return mod


@register_pass
def ToANormalForm() -> Pass:  # TVM's name
    """Turn graph-form dataflow into let-bound A-normal form."""
    return module_pass(_transform, opt_level=1)


def ToANormalFormExpr(expr: Expr) -> Expr:  # TVM's name
    return to_a_normal_form(expr)


__all__ = ["ANFConverter", "ToANormalForm", "ToANormalFormExpr", "to_a_normal_form"]
