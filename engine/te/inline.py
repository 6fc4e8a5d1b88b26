"""Inline the bodies of `compute_inline`d stages into a consumer's expression, in one walk.

Substituting a producer's already-inlined body at every level costs the size of that
body per level: a fused chain of n elementwise stages took O(n^2) (a 250-op kernel
lowered in a quarter of a second per schedule step). Here each read of an inlined
producer instead walks the producer's own compute body once, under an environment that
binds its axis variables to the (rewritten) read indices, so the cost is the size of
the result. The walk is iterative: chains of any depth are fine.

    inline_body(op.body[0], is_inline, axis_of)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.tir import expr as E

Env = dict[E.Var, E.PrimExpr]

_VISIT, _BUILD, _BIND = 0, 1, 2


class _Walk:
    """The state of one inlining walk: results memoized per (node, environment)."""

    def __init__(self, producer_body: Callable[[Any], tuple[E.PrimExpr, list[E.Var]] | None]
                 ) -> None:
        self.producer_body = producer_body
        self.envs: list[Env] = [{}]
        self.memo: dict[tuple[int, int], E.PrimExpr] = {}
        self.pending: dict[tuple[int, int], int] = {}  # inlined read -> its body's env

    def run(self, root: E.PrimExpr) -> E.PrimExpr:
        stack: list[tuple[int, E.PrimExpr, int]] = [(_VISIT, root, 0)]
        while stack:
            step, node, env = stack.pop()
            if step == _VISIT:
                self._visit(stack, node, env)
            elif step == _BUILD:
                self._build(node, env)
            else:
                self._bind(stack, node, env)
        return self.memo[(id(root), 0)]

    def _visit(self, stack: list[tuple[int, E.PrimExpr, int]], node: E.PrimExpr,
               env: int) -> None:
        key = (id(node), env)
        if key in self.memo:
            return
        if isinstance(node, E.Var):
            self.memo[key] = self.envs[env].get(node, node)
            return
        inlined = isinstance(node, E.ProducerLoad) and self.producer_body(node.producer)
        stack.append((_BIND if inlined else _BUILD, node, env))
        stack.extend((_VISIT, child, env) for child in E.iter_children(node)
                     if (id(child), env) not in self.memo)

    def _build(self, node: E.PrimExpr, env: int) -> None:
        self.memo[(id(node), env)] = E.map_children(node, lambda c: self.memo[(id(c), env)])

    def _bind(self, stack: list[tuple[int, E.PrimExpr, int]], node: E.PrimExpr,
              env: int) -> None:
        """An inlined read: once its indices are done, walk the producer's body with its
        axes bound to them; once that walk is done, the read is its result."""
        assert isinstance(node, E.ProducerLoad)
        found = self.producer_body(node.producer)
        assert found is not None
        body, axes = found
        key = (id(node), env)
        inner = self.pending.get(key)
        if inner is not None:
            self.memo[key] = self.memo[(id(body), inner)]
            return
        self.envs.append(dict(zip(axes, (self.memo[(id(i), env)] for i in node.indices))))
        self.pending[key] = len(self.envs) - 1
        stack.append((_BIND, node, env))
        stack.append((_VISIT, body, len(self.envs) - 1))


def inline_body(body: E.PrimExpr,
                producer_body: Callable[[Any], tuple[E.PrimExpr, list[E.Var]] | None]
                ) -> E.PrimExpr:
    """`body` with every read of an inlined producer replaced by the producer's compute
    expression at the read indices, recursively. `producer_body(tensor)` gives an inlined
    producer's (compute body, axis vars), or None for a tensor that stays a read."""
    return _Walk(producer_body).run(body)
