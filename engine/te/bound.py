"""Bound inference: which part of each stage's domain must be computed.

A stage at the root computes its whole domain. A stage attached with
`compute_at(C, iv)` computes, for each iteration of the loops down to `iv`,
the region its consumers read while the loops inside `iv` (and any loop not
enclosing the attach point) run over their ranges: the union of the read
indices as symbolic intervals. A region the analysis cannot bound, or whose
extent would vary with the loops, falls back to the whole domain (always
correct); a region that may leave the domain gets `likely` guards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.te.errors import LoweringError
from engine.te.inline import inline_body
from engine.te.loops import RootRange, StageLoops
from engine.te.schedule import Schedule
from engine.te.stage import AttachType, Split, Stage
from engine.te.tensor import ComputeOp, IterVar
from engine.tir import expr as E
from engine.tir.arith import Interval, Linear, eval_interval, simplify, to_linear, union
from engine.tir.functor import substitute


@dataclass
class LowerState:
    """What lowering knows about a schedule: inlined bodies, reads, loops, scopes."""

    sch: Schedule
    bodies: dict[int, E.PrimExpr] = field(default_factory=dict)
    reads: dict[int, list[tuple[Stage, tuple[E.PrimExpr, ...]]]] = field(default_factory=dict)
    loops: dict[int, StageLoops] = field(default_factory=dict)
    scope_vars: dict[int, list[E.Var]] = field(default_factory=dict)
    loop_extent: dict[E.Var, E.PrimExpr] = field(default_factory=dict)

    def stage_of(self, tensor: object) -> Stage:
        return self.sch[tensor]

    # --- inlining ------------------------------------------------------------------------
    def body(self, stage: Stage) -> E.PrimExpr:
        """The stage's expression with every inlined producer substituted in."""
        done = self.bodies.get(id(stage))
        if done is not None:
            return done
        result = inline_body(compute_op(stage).body[0], self._inlined)
        self.bodies[id(stage)] = result
        return result

    def _inlined(self, tensor: object) -> tuple[E.PrimExpr, list[E.Var]] | None:
        """(compute body, axis vars) of an inlined producer; None for one that is read."""
        producer = self.stage_of(tensor)
        if producer.attach_type != AttachType.INLINE:
            return None
        op = compute_op(producer)
        return op.body[0], [iv.var for iv in op.axis]

    def reads_of(self, stage: Stage) -> list[tuple[Stage, tuple[E.PrimExpr, ...]]]:
        """(producer stage, indices) of every tensor read in the stage's inlined body."""
        found = self.reads.get(id(stage))
        if found is not None:
            return found
        out: list[tuple[Stage, tuple[E.PrimExpr, ...]]] = []
        stack = [self.body(stage)]
        while stack:
            node = stack.pop()
            if isinstance(node, E.ProducerLoad):
                out.append((self.stage_of(node.producer), node.indices))
            stack.extend(E.iter_children(node))
        self.reads[id(stage)] = out
        return out

    def root_vars(self, stage: Stage) -> dict[E.Var, E.PrimExpr]:
        """Root iter var -> its value in terms of the stage's (main-nest) loop vars."""
        loops = self.loops[id(stage)]
        idx = loops.index_map({iv: iv.var for iv in stage.leaf_iter_vars})
        return {iv.var: value for iv, value in loops.root_values(idx).items()}


def compute_op(stage: Stage) -> ComputeOp:
    if not isinstance(stage.op, ComputeOp):
        raise LoweringError(f"stage {stage.name} is not a compute stage")
    return stage.op


def is_lowered(stage: Stage) -> bool:
    return not stage.is_placeholder and stage.attach_type != AttachType.INLINE


def _full_range(iv: IterVar) -> RootRange:
    if iv.dom is None:
        raise LoweringError(f"iter var {iv.name} has no domain")
    return RootRange(iv.dom.min, iv.dom.extent)


def attach_position(parent: Stage, iv: IterVar | None) -> int:
    """Leaf position of the loop a stage attached at `iv` goes into: `iv` itself, or, if
    `iv` was split or fused since, the innermost leaf derived from it (where it is fixed)."""
    derived = {id(iv)}
    for rel in parent.relations:
        sources = (rel.parent,) if isinstance(rel, Split) else (rel.outer, rel.inner)
        targets = (rel.outer, rel.inner) if isinstance(rel, Split) else (rel.fused,)
        if any(id(src) in derived for src in sources):
            derived.update(id(t) for t in targets)
    positions = [pos for pos, leaf in enumerate(parent.leaf_iter_vars) if id(leaf) in derived]
    if not positions:
        name = iv.name if iv is not None else "?"
        raise LoweringError(f"compute_at target {name} is not a loop of stage {parent.name}")
    return max(positions)


class BoundInference:
    def __init__(self, state: LowerState) -> None:
        self.state = state
        self._active: set[int] = set()

    def run(self) -> None:
        for stage in reversed(self.state.sch.stages):
            if is_lowered(stage):
                self.ensure(stage)

    def ensure(self, stage: Stage) -> None:
        if id(stage) in self.state.loops:
            return
        if id(stage) in self._active:
            raise LoweringError(f"compute_at forms a cycle through stage {stage.name}")
        self._active.add(id(stage))
        scope = self._scope(stage)
        self.state.scope_vars[id(stage)] = scope
        roots = self._root_ranges(stage, scope)
        loops = StageLoops(stage, roots)
        self.state.loops[id(stage)] = loops
        for leaf in stage.leaf_iter_vars:
            self.state.loop_extent[leaf.var] = loops.extent[leaf]
        self._active.discard(id(stage))

    def _scope(self, stage: Stage) -> list[E.Var]:
        if stage.attach_type != AttachType.SCOPE:
            return []
        parent = stage.attach_stage
        if parent is None or not is_lowered(parent):
            raise LoweringError(f"stage {stage.name} is attached to a stage that is not lowered")
        self.ensure(parent)
        pos = attach_position(parent, stage.attach_ivar)
        outer = self.state.scope_vars[id(parent)]
        return outer + [leaf.var for leaf in parent.leaf_iter_vars[:pos + 1]]

    def _root_ranges(self, stage: Stage, scope: list[E.Var]) -> dict[IterVar, RootRange]:
        op = stage.op
        assert isinstance(op, ComputeOp)
        ranges = {iv: _full_range(iv) for iv in op.reduce_axis}
        if stage.attach_type != AttachType.SCOPE:
            return {**{iv: _full_range(iv) for iv in op.axis}, **ranges}
        regions = self._regions(stage, set(scope))
        for dim, iv in enumerate(op.axis):
            region = None if regions is None else regions[dim]
            ranges[iv] = self._clamp(iv, region, set(scope))
        return {iv: ranges[iv] for iv in (*op.axis, *op.reduce_axis)}

    def _regions(self, stage: Stage, scope: set[E.Var]) -> list[Interval | None] | None:
        """Per dimension, the union of what consumers read with out-of-scope loops relaxed."""
        consumers = []
        for consumer in self.state.sch.stages:
            if not is_lowered(consumer) or consumer is stage:
                continue
            reads = [ix for producer, ix in self.state.reads_of(consumer) if producer is stage]
            if reads:
                self.ensure(consumer)
                self._check_enclosed(stage, consumer, scope)
                consumers.append((consumer, reads))
        relax: dict[E.Var, Interval] = {}
        for var, extent in self.state.loop_extent.items():
            if var not in scope:
                relax[var] = Interval(Linear(), to_linear(extent).add_const(-1))
        per_dim: list[list[Interval | None]] = [[] for _ in compute_op(stage).axis]
        for consumer, reads in consumers:
            vmap = self.state.root_vars(consumer)
            for indices in reads:
                for dim, index in enumerate(indices):
                    per_dim[dim].append(eval_interval(simplify(substitute(index, vmap)), relax))
        if not per_dim or not per_dim[0]:
            return None
        return [union(items) for items in per_dim]

    def _check_enclosed(self, stage: Stage, consumer: Stage, scope: set[E.Var]) -> None:
        """A consumer must run inside the loops the producer is computed in."""
        enclosing = set(self.state.scope_vars[id(consumer)])
        enclosing.update(leaf.var for leaf in consumer.leaf_iter_vars)
        if scope <= enclosing:
            return
        where = stage.attach_ivar.name if stage.attach_ivar is not None else "?"
        parent = stage.attach_stage.name if stage.attach_stage is not None else "?"
        raise LoweringError(f"stage {consumer.name} reads {stage.name}, which is computed inside "
                            f"loop {where} of stage {parent}; that loop does not enclose "
                            f"{consumer.name} (attach {consumer.name} there too, or compute "
                            f"{stage.name} at the root)")

    def _clamp(self, iv: IterVar, region: Interval | None, scope: set[E.Var]) -> RootRange:
        full = _full_range(iv)
        if region is None:
            return full
        extent = (region.hi - region.lo).add_const(1)
        loop_vars = set(self.state.loop_extent)
        if (region.lo.vars() | region.hi.vars()) & (loop_vars - scope) or extent.vars() & loop_vars:
            return full
        dom_min, dom_ext = E.const_value(full.min), E.const_value(full.extent)
        if extent.is_const and isinstance(dom_ext, int) and extent.const >= dom_ext:
            return full
        bounds = self._const_extents()
        low_range, high_range = region.lo.range(bounds), region.hi.range(bounds)
        low = None if low_range is None else low_range[0]
        high = None if high_range is None else high_range[1]
        check_lo = not (isinstance(dom_min, int) and low is not None and low >= dom_min)
        check_hi = not (isinstance(dom_min, int) and isinstance(dom_ext, int)
                        and high is not None and high < dom_min + dom_ext)
        return RootRange(region.lo.to_expr(), extent.to_expr(), check_lo, check_hi)

    def _const_extents(self) -> dict[E.Var, int]:
        return {v: e.value for v, e in self.state.loop_extent.items() if isinstance(e, E.IntImm)}


def infer_bounds(sch: Schedule) -> LowerState:
    state = LowerState(sch)
    BoundInference(state).run()
    return state
