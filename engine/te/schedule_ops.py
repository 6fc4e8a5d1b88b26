"""Lowering a schedule to a loop nest (TVM's ScheduleOps + MakeLoopNest).

Each lowered stage becomes a nest of For loops over its leaf iter vars (in
leaf order, with the loop kinds its annotations ask for) around a store of
its expression; a reduction gets an init nest over its data-parallel loops
placed just before the first reduction loop, as TVM does. Stages attached
with compute_at are emitted (with their allocation) at the start of the body
of the loop they are attached to; root intermediates are allocated around the
whole body. Every statement carries the Origin (stage, iter var, role) and
span it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.te.bound import (
    LowerState,
    attach_position,
    compute_op,
    infer_bounds,
    is_lowered,
)
from engine.te.errors import LoweringError
from engine.te.schedule import Schedule
from engine.te.stage import AttachType, IterVarAttr, Stage
from engine.te.tensor import ComputeOp, IterVar, PlaceholderOp, Tensor
from engine.tir import expr as E
from engine.tir.arith import collect_vars, simplify
from engine.tir.functor import rewrite, substitute
from engine.tir.intrin import likely
from engine.tir.stmt import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    IfThenElse,
    Origin,
    PrimFunc,
    Stmt,
    seq,
)


@dataclass(frozen=True, slots=True)
class LoopSpec:
    iv: IterVar
    var: E.Var
    extent: E.PrimExpr
    attr: IterVarAttr
    role: str


class NestBuilder:
    def __init__(self, state: LowerState, args: Sequence[Tensor]) -> None:
        self.state = state
        self.sch: Schedule = state.sch
        self.params: list[Buffer] = []
        self.buffers: dict[int, Buffer] = {}
        self.offsets: dict[int, tuple[E.PrimExpr, ...]] = {}
        self.children: dict[tuple[int, int], list[Stage]] = {}
        self._bind_params(args)
        self._plan_buffers()

    # --- buffers -----------------------------------------------------------------------------
    def _bind_params(self, args: Sequence[Tensor]) -> None:
        unread: set[int] = set()
        for tensor in args:
            if not isinstance(tensor, Tensor):
                raise LoweringError(f"lower: args must be tensors, got {tensor!r}")
            buf = Buffer(tensor.name, tuple(tensor.shape), tensor.dtype, "global")
            if tensor not in self.sch and isinstance(tensor.op, PlaceholderOp):
                # an input nothing reads (a fused function's unused tuple field): still a
                # parameter of the function, as tvm.lower keeps it
                if id(tensor.op) in unread:
                    raise LoweringError(f"lower: tensor {tensor.name} is listed twice in args")
                unread.add(id(tensor.op))
                self.params.append(buf)
                continue
            stage = self.sch[tensor]
            if id(stage) in self.buffers:
                raise LoweringError(f"lower: tensor {tensor.name} is listed twice in args")
            self.buffers[id(stage)] = buf
            self.params.append(buf)

    def _plan_buffers(self) -> None:
        for stage in self.sch.stages:
            if not is_lowered(stage):
                continue
            if stage.attach_type == AttachType.SCOPE:
                parent = stage.attach_stage
                if parent is None:
                    raise LoweringError(f"stage {stage.name} is attached to no stage")
                leaf = parent.leaf_iter_vars[attach_position(parent, stage.attach_ivar)]
                key = (id(parent), id(leaf))
                self.children.setdefault(key, []).append(stage)
            if id(stage) in self.buffers:
                continue
            op = stage.op
            assert isinstance(op, ComputeOp)
            roots = self.state.loops[id(stage)].roots
            shape = tuple(roots[iv].extent for iv in op.axis)
            self.buffers[id(stage)] = Buffer(op.name, shape, op.output(0).dtype, stage.scope)
            if stage.attach_type == AttachType.SCOPE:
                self.offsets[id(stage)] = tuple(roots[iv].min for iv in op.axis)

    def is_param(self, stage: Stage) -> bool:
        buf = self.buffers.get(id(stage))
        return buf is not None and any(buf is p for p in self.params)

    def _load(self, node: E.PrimExpr) -> E.PrimExpr | None:
        if not isinstance(node, E.ProducerLoad):
            return None
        stage = self.sch[node.producer]
        buf = self.buffers.get(id(stage))
        if buf is None:
            raise LoweringError(f"tensor {node.producer.name} is read but is neither computed "
                                "by the schedule nor passed in args")
        indices = [rewrite(i, self._load) for i in node.indices]
        offsets = self.offsets.get(id(stage))
        if offsets is not None:
            indices = [E.Sub(a=i, b=o) for i, o in zip(indices, offsets)]
        return E.BufferLoad(buffer=buf, indices=tuple(simplify(i) for i in indices))

    def to_buffers(self, e: E.PrimExpr) -> E.PrimExpr:
        return simplify(rewrite(e, self._load))

    # --- nests ----------------------------------------------------------------------------
    def origin(self, stage: Stage, iv: IterVar | None, role: str) -> Origin:
        return Origin(stage.name, iv.name if iv is not None else "", role,
                      self.sch.stage_index(stage))

    def specs(self, stage: Stage, leaves: Sequence[IterVar], role: str,
              rename: dict[IterVar, E.Var] | None = None) -> list[LoopSpec]:
        loops = self.state.loops[id(stage)]
        out = []
        for iv in leaves:
            var = (rename or {}).get(iv, iv.var)
            attr = stage.iter_var_attrs.get(iv, IterVarAttr())
            out.append(LoopSpec(iv, var, loops.extent[iv], attr, role))
        return out

    def guard(self, stage: Stage, stmt: Stmt, conds: list[E.PrimExpr]) -> Stmt:
        if not conds:
            return stmt
        cond = conds[0]
        for more in conds[1:]:
            cond = E.And(a=cond, b=more)
        return IfThenElse(likely(cond), stmt, origin=self.origin(stage, None, "guard"),
                          span=stage.span)

    def nest(self, stage: Stage, specs: list[LoopSpec], inner: Stmt,
             guards: list[E.PrimExpr], attach: bool) -> Stmt:
        depth_of = {spec.var: k for k, spec in enumerate(specs)}
        by_depth: dict[int, list[E.PrimExpr]] = {}
        for cond in guards:
            depth = max((depth_of[v] for v in collect_vars(cond) if v in depth_of), default=-1)
            by_depth.setdefault(depth, []).append(cond)
        stmt = inner
        for k in reversed(range(len(specs))):
            spec = specs[k]
            stmt = self.guard(stage, stmt, by_depth.get(k, []))
            if attach:
                stmt = self.attach_children(stage, spec.iv, stmt)
            stmt = self._loop(stage, spec, stmt)
        return self.guard(stage, stmt, by_depth.get(-1, []))

    def _loop(self, stage: Stage, spec: LoopSpec, body: Stmt) -> Stmt:
        attr = spec.attr
        tag = attr.thread.thread_tag if attr.thread is not None else ""
        return For(spec.var, E.IntImm(value=0), spec.extent, attr.kind, body, thread_tag=tag,
                   annotations=attr.pragmas, origin=self.origin(stage, spec.iv, spec.role),
                   span=stage.span)

    def attach_children(self, stage: Stage, iv: IterVar, stmt: Stmt) -> Stmt:
        for child in reversed(self.children.get((id(stage), id(iv)), [])):
            stmt = self.with_allocation(child, seq([self.stage_stmt(child), stmt]))
        return stmt

    def with_allocation(self, stage: Stage, body: Stmt) -> Stmt:
        if self.is_param(stage):
            return body
        return Allocate(self.buffers[id(stage)], body, origin=self.origin(stage, None, "allocate"),
                        span=stage.span)

    # --- one stage --------------------------------------------------------------------------
    def store_indices(self, stage: Stage, idx: dict[IterVar, E.PrimExpr]) -> tuple[E.PrimExpr, ...]:
        loops = self.state.loops[id(stage)]
        local = id(stage) in self.offsets
        values = loops.root_values(idx)
        axes = compute_op(stage).axis
        return tuple(simplify(idx[iv] if local else values[iv]) for iv in axes)

    def stage_stmt(self, stage: Stage) -> Stmt:
        body = self.state.body(stage)
        if isinstance(body, E.Reduce):
            return self._reduction(stage, body)
        loops = self.state.loops[id(stage)]
        idx = loops.index_map({iv: iv.var for iv in stage.leaf_iter_vars})
        vmap = {iv.var: v for iv, v in loops.root_values(idx).items()}
        store = BufferStore(self.buffers[id(stage)], self.to_buffers(substitute(body, vmap)),
                            self.store_indices(stage, idx),
                            origin=self.origin(stage, None, "store"), span=stage.span)
        specs = self.specs(stage, stage.leaf_iter_vars, "loop")
        return self.nest(stage, specs, store, loops.guards(idx), attach=True)

    def _reduction(self, stage: Stage, red: E.Reduce) -> Stmt:
        loops = self.state.loops[id(stage)]
        leaves = stage.leaf_iter_vars
        begin = next((k for k, iv in enumerate(leaves) if iv.is_reduce), len(leaves))
        init_vars = {iv: E.Var(f"{iv.var.name}.init", dtype=iv.var.dtype)
                     for iv in leaves[begin:] if not iv.is_reduce}
        main_idx = loops.index_map({iv: iv.var for iv in leaves})
        init_idx = loops.index_map({**{iv: iv.var for iv in leaves[:begin]}, **init_vars})
        init = self._init_store(stage, red, init_idx)
        update = self._update_store(stage, red, main_idx)
        main_vars = {iv.var for iv in leaves[begin:]}
        init_set = set(init_vars.values())
        upd_guards = loops.guards(main_idx)
        init_nest = self.nest(stage, self.specs(stage, list(init_vars), "init", init_vars), init,
                              [g for g in loops.guards(init_idx) if collect_vars(g) & init_set],
                              attach=False)
        update_nest = self.nest(stage, self.specs(stage, leaves[begin:], "loop"), update,
                                [g for g in upd_guards if collect_vars(g) & main_vars],
                                attach=True)
        return self.nest(stage, self.specs(stage, leaves[:begin], "loop"),
                         seq([init_nest, update_nest]),
                         [g for g in upd_guards if not collect_vars(g) & main_vars], attach=True)

    def _init_store(self, stage: Stage, red: E.Reduce, idx: dict[IterVar, E.PrimExpr]) -> Stmt:
        loops = self.state.loops[id(stage)]
        vmap = {iv.var: v for iv, v in loops.root_values(idx).items()}
        k = red.value_index
        value = red.init[k] if red.init else red.combiner.identity_element[k]
        return BufferStore(self.buffers[id(stage)], self.to_buffers(substitute(value, vmap)),
                           self.store_indices(stage, idx),
                           origin=self.origin(stage, None, "init"), span=stage.span)

    def _update_store(self, stage: Stage, red: E.Reduce, idx: dict[IterVar, E.PrimExpr]) -> Stmt:
        loops = self.state.loops[id(stage)]
        vmap = {iv.var: v for iv, v in loops.root_values(idx).items()}
        buf = self.buffers[id(stage)]
        indices = self.store_indices(stage, idx)
        acc = E.BufferLoad(buffer=buf, indices=indices)
        sources = tuple(self.to_buffers(substitute(s, vmap)) for s in red.source)
        value = red.combiner.combine((acc,), sources)[red.value_index]
        store: Stmt = BufferStore(buf, value, indices, origin=self.origin(stage, None, "update"),
                                  span=stage.span)
        cond = self.to_buffers(substitute(red.condition, vmap))
        if not (isinstance(cond, E.IntImm) and cond.value):
            store = IfThenElse(cond, store, origin=self.origin(stage, None, "update"),
                               span=stage.span)
        return store

    # --- the function ------------------------------------------------------------------------
    def build(self, name: str) -> PrimFunc:
        roots = [s for s in self.sch.stages
                 if is_lowered(s) and s.attach_type == AttachType.ROOT]
        body = seq([self.stage_stmt(s) for s in roots])
        for stage in reversed(roots):
            body = self.with_allocation(stage, body)
        return PrimFunc(tuple(self.params), body, name, span=self.sch.spans)


def lower_schedule(sch: Schedule, args: Sequence[Tensor], name: str = "main") -> PrimFunc:
    """The loop nest of `sch` as a PrimFunc over buffers for `args` (inputs, then outputs)."""
    state = infer_bounds(sch)
    return NestBuilder(state, args).build(name)
