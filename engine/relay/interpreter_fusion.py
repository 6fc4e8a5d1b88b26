"""Clamps the interpreter fuses into the op before them.

A clip or relu right after batch_norm is one more pass over a whole activation. An op
registered with `FNumpyClamped` (`compute(args, attrs, (lo, hi), donated)`: its value
with field 0, or the value itself, clamped to [lo, hi]; `donated` says the first argument
may be overwritten) applies the clamp in the same pass. `find_fusions` picks the pairs
out of an evaluation plan: a clamp whose input is such an op's value (or its field 0)
that nothing else uses. The interpreter then evaluates the op with the clamp's bounds and
lets the clamp pass its (already clamped) input through; every other node runs as before,
so results are the same as unfused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr, TupleGetItem
from engine.ir.op import Op

Bounds = tuple[float, float]

CLAMP_BOUNDS: dict[str, Callable[[Attrs], Bounds]] = {
    "clip": lambda attrs: (float(attrs.a_min), float(attrs.a_max)),
    "nn.relu": lambda attrs: (0.0, math.inf),
}
"""The clamps, by op name, and their [lo, hi] bounds from their attrs."""


@dataclass(frozen=True)
class Fusions:
    """`bounds`: the clamp each fused producer applies; `passed`: the clamps fused into
    their producer (each passes its input through)."""

    bounds: Mapping[Expr, Bounds] = field(default_factory=dict)
    passed: frozenset[Expr] = frozenset()


def _clamp_op(node: Expr) -> str | None:
    if isinstance(node, Call) and isinstance(node.op, Op) and len(node.args) == 1 \
            and node.op.name in CLAMP_BOUNDS:
        return node.op.name
    return None


def _fusable_producer(clamp: Call, uses: Mapping[Expr, int], planned: Collection[Expr]
                      ) -> Call | None:
    """The op whose value (or field 0) is the clamp's input and has no other use."""
    arg = clamp.args[0]
    producer = arg.tuple_value if isinstance(arg, TupleGetItem) and arg.index == 0 else arg
    if producer is not arg and uses.get(arg) != 1:
        return None
    if not (isinstance(producer, Call) and isinstance(producer.op, Op)) \
            or producer.op.get_attr("FNumpyClamped") is None:
        return None
    return producer if uses.get(producer) == 1 and producer in planned else None


def find_fusions(order: Sequence[Expr], uses: Mapping[Expr, int], roots: Collection[Expr]
                 ) -> Fusions:
    """The clamp fusions in a plan (`order`, with each node's use count); a root is never
    fused away (its caller reads it)."""
    planned = set(order)
    bounds: dict[Expr, Bounds] = {}
    passed: set[Expr] = set()
    for node in order:
        name = _clamp_op(node)
        if name is None or node in roots:
            continue
        producer = _fusable_producer(node, uses, planned)  # type: ignore[arg-type]
        if producer is not None:
            bounds[producer] = CLAMP_BOUNDS[name](node.attrs)  # type: ignore[attr-defined]
            passed.add(node)
    return Fusions(bounds, frozenset(passed))


__all__ = ["CLAMP_BOUNDS", "Bounds", "Fusions", "find_fusions"]
