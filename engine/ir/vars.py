"""Free, bound and all variables of an expression."""

from __future__ import annotations

from engine.ir.expr import Expr, Function, Let, Var
from engine.ir.traversal import post_order


def _collect(expr: Expr) -> tuple[list[Var], set[Var]]:
    """All vars in first-seen order (post-order), and the set of bound ones."""
    seen: dict[Var, None] = {}
    bound: set[Var] = set()
    for node in post_order(expr):
        if isinstance(node, Var):
            seen.setdefault(node, None)
        elif isinstance(node, Function):
            bound.update(node.params)
        elif isinstance(node, Let):
            bound.add(node.var)
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
