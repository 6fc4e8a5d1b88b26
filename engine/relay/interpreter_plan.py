"""The interpreter's evaluation plans: which dataflow nodes to evaluate, in which order, how
often each value is read (so it is dropped, or overwritten in place, at its last read),
and what is fused (`interpreter_fusion`). A plan that depends on its root alone is kept
per root, so a model evaluated again skips the walk over its graph."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.ir.expr import DATAFLOW_KINDS, Expr, operands
from engine.relay.expr_functor import post_order
from engine.relay.interpreter_fusion import Fusions, find_fusions

Env = Mapping[Expr, Any]


def _dataflow_operands(node: Expr) -> tuple[Expr, ...]:
    """The operands evaluated in the dataflow order (a callee is evaluated by the call)."""
    return tuple(kid for kid in operands(node) if isinstance(kid, DATAFLOW_KINDS))


def post_order_uses(roots: Sequence[Expr], env: Env) -> tuple[list[Expr], dict[Expr, int]]:
    """Dataflow nodes under `roots` (children first, each once; a node `env` already holds
    is a leaf) and how many consumers each has (a root counts as one more)."""
    roots = [root for root in roots if isinstance(root, DATAFLOW_KINDS)]
    order: list[Expr] = []
    seen: set[Expr] = set()

    def kids(node: Expr) -> Sequence[Expr]:
        return () if node in env or node in seen else _dataflow_operands(node)

    for root in roots:
        for node in post_order(root, kids):
            if node not in seen:
                seen.add(node)
                order.append(node)
    uses: dict[Expr, int] = dict.fromkeys(roots, 0)
    for node in roots:
        uses[node] += 1
    for node in order:
        for kid in () if node in env else _dataflow_operands(node):
            uses[kid] = uses.get(kid, 0) + 1
    return order, uses


@dataclass(frozen=True)
class Plan:
    """How to evaluate dataflow roots: nodes children first, each node's use count, and
    what is fused (`interpreter_fusion`)."""

    order: list[Expr]
    uses: dict[Expr, int]
    fusions: Fusions


PLANS: weakref.WeakKeyDictionary[Expr, Plan] = weakref.WeakKeyDictionary()
"""The plan of one root, less the root itself (so the key stays collectable), for
evaluations whose environment holds no dataflow value (then the plan depends on the root
alone): a model evaluated again skips the walk over its graph."""


def plan_for(roots: Sequence[Expr], env: Env) -> Plan:
    """The plan of `roots` under `env`, from `PLANS` when it may be."""
    if len(roots) != 1 or not isinstance(roots[0], DATAFLOW_KINDS) \
            or any(isinstance(key, DATAFLOW_KINDS) for key in env):
        order, uses = post_order_uses(roots, env)
        computed = [node for node in order if node not in env]
        return Plan(order, uses, find_fusions(computed, uses, roots))
    root = roots[0]
    cached = PLANS.get(root)
    if cached is None:
        order, uses = post_order_uses(roots, env)
        fusions = find_fusions(order, uses, roots)
        cached = Plan(order[:-1], {node: n for node, n in uses.items() if node is not root},
                      fusions)
        PLANS[root] = cached
    # a root's one use is its caller's
    return Plan([*cached.order, root], {**cached.uses, root: 1}, cached.fusions)


__all__ = ["PLANS", "Plan", "plan_for", "post_order_uses"]
