"""Walking expressions: every node reachable from a root, children first, iteratively.

The edges are `engine.ir.expr.children` unless the caller narrows them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.ir.expr import Expr, children


def post_order(root: Expr,
               kids: Callable[[Expr], Sequence[Expr]] = children) -> list[Expr]:
    """Every node reachable from `root` through `kids`, children first, each once.

    Iterative, so any depth is fine. `kids` chooses the edges to follow (the default is
    every child; pass a narrower function to stay on dataflow edges or to skip the
    bodies of primitive functions). It is called once per node, when the node is entered.
    """
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((kid, False) for kid in reversed(kids(node)) if id(kid) not in seen)
    return order


def post_order_visit(expr: Expr, fvisit: Callable[[Expr], object]) -> None:
    """Call `fvisit` on every node reachable from `expr`, children first, once each."""
    for node in post_order(expr):
        fvisit(node)
