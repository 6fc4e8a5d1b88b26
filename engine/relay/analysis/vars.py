"""Free, bound and all variables of an expression; substitution of variables."""

from __future__ import annotations

from dataclasses import replace

from engine.ir.expr import Expr, Function, Let, Var
from engine.relay.expr_functor import ExprMutator, post_order_visit


def _collect(expr: Expr) -> tuple[list[Var], set[Var]]:
    """All vars in first-seen order (post-order), and the set of bound ones."""
    seen: dict[Var, None] = {}
    bound: set[Var] = set()

    def visit(node: Expr) -> None:
        if isinstance(node, Var):
            seen.setdefault(node, None)
        elif isinstance(node, Function):
            bound.update(node.params)
        elif isinstance(node, Let):
            bound.add(node.var)

    post_order_visit(expr, visit)
    return list(seen), bound


def free_vars(expr: Expr) -> list[Var]:
    """Variables used but not bound in `expr`, in order of first use."""
    every, bound = _collect(expr)
    return [v for v in every if v not in bound]


def bound_vars(expr: Expr) -> list[Var]:
    every, bound = _collect(expr)
    order = [v for v in every if v in bound]
    return order + [v for v in bound if v not in set(order)]


def all_vars(expr: Expr) -> list[Var]:
    every, bound = _collect(expr)
    return every + [v for v in bound if v not in set(every)]


def count_nodes(expr: Expr) -> int:
    total = 0

    def visit(_: Expr) -> None:
        nonlocal total
        total += 1

    post_order_visit(expr, visit)
    return total


class _Binder(ExprMutator):
    def __init__(self, binds: dict[Var, Expr]) -> None:
        super().__init__()
        self.binds = binds

    def visit_var(self, var: Var) -> Expr:
        return self.binds.get(var, var)


def bind_vars(expr: Expr, binds: dict[Var, Expr]) -> Expr:
    """Replace each var in `binds` by its expression. On a Function, parameters that are
    bound disappear from the parameter list (TVM's `relay.bind`)."""
    if isinstance(expr, Function):
        params = tuple(p for p in expr.params if p not in binds)
        body = _Binder(binds).visit(expr.body)
        if body is expr.body and len(params) == len(expr.params):
            return expr
        return replace(expr, params=params, body=body)
    return _Binder(binds).visit(expr)
