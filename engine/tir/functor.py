"""Generic rewriting of PrimExpr trees (TVM's `tir.stmt_functor.substitute` and friends)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.tir import expr as E

Rewrite = Callable[[E.PrimExpr], E.PrimExpr | None]


def rewrite(e: E.PrimExpr, fn: Rewrite) -> E.PrimExpr:
    """Pre-order rewrite: where `fn(node)` returns an expression it replaces the node,
    elsewhere the children are rewritten (shared subtrees are rewritten once)."""
    memo: dict[int, E.PrimExpr] = {}

    def visit(node: E.PrimExpr) -> E.PrimExpr:
        done = memo.get(id(node))
        if done is not None:
            return done
        out = fn(node)
        if out is None:
            out = E.map_children(node, visit)
        memo[id(node)] = out
        return out

    return visit(e)


def substitute(e: E.PrimExpr, vmap: Mapping[E.Var, E.PrimExpr]) -> E.PrimExpr:
    """`e` with each Var in `vmap` replaced by its value."""
    if not vmap:
        return e
    return rewrite(e, lambda node: vmap.get(node) if isinstance(node, E.Var) else None)
