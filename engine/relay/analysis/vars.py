"""Variables of an expression (free/bound/all live in the IR core) and their substitution."""

from __future__ import annotations

from dataclasses import replace

from engine.ir.expr import Expr, Function, Var
from engine.ir.traversal import post_order
from engine.ir.vars import all_vars, bound_vars, free_vars
from engine.relay.expr_functor import ExprMutator

__all__ = ["all_vars", "bind_vars", "bound_vars", "count_nodes", "free_vars"]


def count_nodes(expr: Expr) -> int:
    return len(post_order(expr))


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
