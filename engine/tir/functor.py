"""Generic rewriting of PrimExpr trees (TVM's `tir.stmt_functor.substitute` and friends)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.tir import expr as E

Rewrite = Callable[[E.PrimExpr], E.PrimExpr | None]


def rewrite(e: E.PrimExpr, fn: Rewrite) -> E.PrimExpr:
    """Pre-order rewrite: where `fn(node)` returns an expression it replaces the node,
    elsewhere the children are rewritten (shared subtrees are rewritten once).

    Iterative, so expressions of any depth (a concatenate of thousands of tensors is a
    Select chain that deep) are fine.
    """
    memo: dict[int, E.PrimExpr] = {}
    stack: list[tuple[E.PrimExpr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if expanded:
            memo[key] = E.map_children(node, lambda child: memo[id(child)])
            continue
        if key in memo:
            continue
        out = fn(node)
        if out is not None:
            memo[key] = out
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in E.iter_children(node) if id(child) not in memo)
    return memo[id(e)]


def substitute(e: E.PrimExpr, vmap: Mapping[E.Var, E.PrimExpr]) -> E.PrimExpr:
    """`e` with each Var in `vmap` replaced by its value."""
    if not vmap:
        return e
    return rewrite(e, lambda node: vmap.get(node) if isinstance(node, E.Var) else None)
