"""What the interpreter fuses: batch_norm, and a clamp after it, into the op before them.

Every elementwise op after a convolution is one more pass over a whole activation.
`find_fusions` picks two patterns out of an evaluation plan (values nothing else uses):

- a clip or relu whose input is the value, or field 0, of an op registered with
  `FNumpyClamped` (`compute(args, attrs, (lo, hi), donated)`: its value clamped to
  [lo, hi], in place when `donated`): the op applies the clamp in its own pass, and the
  clamp passes its input through;
- field 0 of an op registered with `FNumpyChannelAffine` (`affine(params, attrs)`: its
  per-channel map, from its arguments after the first, which must be leaves: batch_norm)
  whose data comes from an op registered with `FNumpyEpilogue` (`compute(args, attrs,
  affine)`: its value with the map applied, e.g. conv2d): the producer applies the map,
  and the clamp after it if any, to its output as it writes it; the batch_norm is never
  evaluated and its field 0 is the producer's value.

Every other node runs as before, and the results are those of the unfused ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from engine.ir.attrs import Attrs
from engine.ir.expr import DATAFLOW_KINDS, Call, Expr, TupleGetItem
from engine.ir.op import Op

Bounds = tuple[float, float]

CLAMP_BOUNDS: dict[str, Callable[[Attrs], Bounds]] = {
    "clip": lambda attrs: (float(attrs.a_min), float(attrs.a_max)),
    "nn.relu": lambda attrs: (0.0, math.inf),
}
"""The clamps, by op name, and their [lo, hi] bounds from their attrs."""


@dataclass(frozen=True)
class Epilogue:
    """The per-channel map of `affine` (a batch_norm call), then the clamp `bounds` if
    any, that a producer applies to its output."""

    affine: Call
    bounds: Bounds | None


@dataclass(frozen=True)
class Fusions:
    """`bounds`: the clamp each fused producer applies; `passed`: the clamps fused into
    their producer (each passes its input through); `epilogues`: the map each producer
    applies; `skipped`: the batch_norms they apply (never evaluated); `forwarded`: each
    such batch_norm's field 0, and the producer whose value it is."""

    bounds: Mapping[Expr, Bounds] = field(default_factory=dict)
    passed: frozenset[Expr] = frozenset()
    epilogues: Mapping[Expr, Epilogue] = field(default_factory=dict)
    skipped: frozenset[Expr] = frozenset()
    forwarded: Mapping[Expr, Expr] = field(default_factory=dict)


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


def _has(node: Expr, attr: str) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.get_attr(attr) is not None


def _epilogue_producer(field0: TupleGetItem, uses: Mapping[Expr, int],
                       planned: Collection[Expr]) -> Call | None:
    """The op that may apply the map of `field0`'s batch_norm: its data's producer, which
    nothing else uses, when the batch_norm's other arguments are leaves."""
    affine = field0.tuple_value
    if field0.index != 0 or not _has(affine, "FNumpyChannelAffine") or uses.get(affine) != 1:
        return None
    data, *params = affine.args  # type: ignore[attr-defined]
    if any(isinstance(p, DATAFLOW_KINDS) for p in params) or not _has(data, "FNumpyEpilogue"):
        return None
    return data if uses.get(data) == 1 and data in planned else None


def find_fusions(order: Sequence[Expr], uses: Mapping[Expr, int], roots: Collection[Expr]
                 ) -> Fusions:
    """The fusions in a plan (`order`, with each node's use count); a root is never fused
    away (its caller reads it)."""
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
    epilogues: dict[Expr, Epilogue] = {}
    forwarded: dict[Expr, Expr] = {}
    for node in order:
        if not isinstance(node, TupleGetItem) or node in roots:
            continue
        producer = _epilogue_producer(node, uses, planned)
        if producer is not None:
            affine: Call = node.tuple_value  # type: ignore[assignment]
            epilogues[producer] = Epilogue(affine, bounds.pop(affine, None))
            forwarded[node] = producer
    skipped = frozenset(e.affine for e in epilogues.values())
    return Fusions(bounds, frozenset(passed), epilogues, skipped, forwarded)


__all__ = ["CLAMP_BOUNDS", "Bounds", "Epilogue", "Fusions", "find_fusions"]
