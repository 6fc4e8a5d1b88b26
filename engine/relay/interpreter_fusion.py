"""What the interpreter fuses: batch_norm, and a clamp after it, into the op before them.

Every elementwise op after a convolution is one more pass over a whole activation.
`find_fusions` picks two patterns out of an evaluation plan (values nothing else uses):

- a clip or relu whose input is the value, or field 0, of an op registered with
  `FNumpyClamped` (`compute(args, attrs, (lo, hi), donated)`: its value clamped to
  [lo, hi], in place when `donated`): the op applies the clamp in its own pass, and the
  clamp passes its input through;
- an op registered with `FNumpyChannelAffine` (`affine(params, attrs)`: its per-channel
  map, from its arguments other than the data, which must be leaves), or its field 0,
  when `FChannelAffineFusable(call, data_index, via_field0)` agrees (batch_norm through
  field 0; add of a per-channel constant, what FoldScaleAxis leaves of a batch_norm),
  whose data comes from an op registered with `FNumpyEpilogue` (`compute(args, attrs,
  affine)`: its value with the map applied, e.g. conv2d): the producer applies the map,
  and a clamp after it if any, to its output as it writes it; a batch_norm is then never
  evaluated, and the map's value is the producer's.

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
    """The per-channel map of `affine` (a batch_norm, or an add of a per-channel
    constant), whose data is its argument `data_index`, then the clamp `bounds` if any,
    that a producer applies to its output."""

    affine: Call
    data_index: int
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


def _epilogue_producer(node: Expr, uses: Mapping[Expr, int], planned: Collection[Expr]
                       ) -> tuple[Call, Call, int] | None:
    """(producer, map op, data index) when `node`'s value may be the producer's output
    with the map applied: `node` is a map op's value, or field 0 of one, the op says the
    call maps its data (`FChannelAffineFusable`), its other arguments are leaves, and the
    data's producer can apply the map and has no other use."""
    via_field0 = isinstance(node, TupleGetItem)
    if isinstance(node, TupleGetItem) and node.index != 0:
        return None
    affine = node.tuple_value if isinstance(node, TupleGetItem) else node
    if not (isinstance(affine, Call) and isinstance(affine.op, Op)) \
            or affine.op.get_attr("FNumpyChannelAffine") is None \
            or (via_field0 and uses.get(affine) != 1):
        return None
    fusable = affine.op.get_attr("FChannelAffineFusable")
    for index, data in enumerate(affine.args):
        params = [a for k, a in enumerate(affine.args) if k != index]
        if not (isinstance(data, Call) and _has(data, "FNumpyEpilogue")) \
                or uses.get(data) != 1 or data not in planned \
                or any(isinstance(p, DATAFLOW_KINDS) for p in params):
            continue
        if fusable is not None and fusable(affine, index, via_field0):
            return data, affine, index
    return None


def find_fusions(order: Sequence[Expr], uses: Mapping[Expr, int], roots: Collection[Expr]
                 ) -> Fusions:
    """The fusions in a plan (`order`, with each node's use count); a root is never fused
    away (its caller reads it). Maps first, then clamps: a clamp after a fused map joins
    it; one after a batch_norm left alone runs in batch_norm's pass."""
    planned = set(order)
    epilogues: dict[Expr, Epilogue] = {}
    forwarded: dict[Expr, Expr] = {}
    skipped: set[Expr] = set()
    for node in order:
        match = None if node in roots else _epilogue_producer(node, uses, planned)
        if match is not None:
            producer, affine, index = match
            epilogues[producer] = Epilogue(affine, index, None)
            forwarded[node] = producer
            if affine is not node:
                skipped.add(affine)
    bounds: dict[Expr, Bounds] = {}
    passed: set[Expr] = set()
    for node in order:
        name = _clamp_op(node)
        if name is None or node in roots:
            continue
        clamp = CLAMP_BOUNDS[name](node.attrs)  # type: ignore[attr-defined]
        arg = node.args[0]  # type: ignore[attr-defined]
        if arg in forwarded:
            if uses.get(arg) == 1 and epilogues[forwarded[arg]].bounds is None:
                epilogue = epilogues[forwarded[arg]]
                epilogues[forwarded[arg]] = Epilogue(epilogue.affine, epilogue.data_index, clamp)
                passed.add(node)
            continue
        clamped = _fusable_producer(node, uses, planned)  # type: ignore[arg-type]
        if clamped is not None:
            bounds[clamped] = clamp
            passed.add(node)
    return Fusions(bounds, frozenset(passed), epilogues, frozenset(skipped), forwarded)


__all__ = ["CLAMP_BOUNDS", "Bounds", "Epilogue", "Fusions", "find_fusions"]
