"""The schedule primitives, one function each, registered in `PRIMITIVES`.

Each takes `(schedule, stage, *args)` with live objects and mutates the
schedule; `Schedule._apply` records the call first, and replaying a record
calls the same functions, so a snapshot is rebuilt by exactly the code that
built the original.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.te.errors import ScheduleError
from engine.te.stage import AttachType, Fuse, IterVarAttr, ScheduleView, Split, Stage
from engine.te.tensor import ComputeOp, IterVar, IterVarType, Operation, Range, Tensor
from engine.tir import expr as E
from engine.tir.functor import rewrite, substitute
from engine.tir.stmt import ForKind


def _leaf_position(stage: Stage, iv: IterVar) -> int:
    for pos, leaf in enumerate(stage.leaf_iter_vars):
        if leaf is iv:
            return pos
    leaves = ", ".join(v.name for v in stage.leaf_iter_vars)
    name = iv.name if isinstance(iv, IterVar) else repr(iv)
    raise ScheduleError(f"{name} is not a leaf iter var of stage {stage.name} (leaves: {leaves})")


def _positive(value: Any, what: str) -> E.PrimExpr:
    expr = E.convert(value)
    if isinstance(expr, E.IntImm) and expr.value <= 0:
        raise ScheduleError(f"split {what} must be positive, got {expr.value}")
    if not E.is_int(expr.dtype):
        raise ScheduleError(f"split {what} must be an integer, got {expr}")
    return expr


def split(sch: ScheduleView, stage: Stage, parent: IterVar, factor: Any = None,
          nparts: Any = None) -> tuple[IterVar, IterVar]:
    if (factor is None) == (nparts is None):
        raise ScheduleError("split takes exactly one of factor= or nparts=")
    pos = _leaf_position(stage, parent)
    name, dtype = parent.var.name, parent.var.dtype
    outer = IterVar(None, E.Var(f"{name}.outer", dtype=dtype), parent.iter_type)
    inner = IterVar(None, E.Var(f"{name}.inner", dtype=dtype), parent.iter_type)
    rel = Split(parent, outer, inner,
                None if factor is None else _positive(factor, "factor"),
                None if nparts is None else _positive(nparts, "nparts"))
    stage.relations.append(rel)
    stage.leaf_iter_vars[pos:pos + 1] = [outer, inner]
    stage.all_iter_vars.extend([outer, inner])
    return outer, inner


def _fuse_pair(stage: Stage, outer: IterVar, inner: IterVar) -> IterVar:
    pos_outer, pos_inner = _leaf_position(stage, outer), _leaf_position(stage, inner)
    if pos_inner != pos_outer + 1:
        raise ScheduleError(f"fuse: {outer.name} and {inner.name} are not adjacent leaves "
                            f"(outer first) of stage {stage.name}")
    if outer.is_reduce != inner.is_reduce:
        raise ScheduleError(f"fuse: cannot fuse data-parallel and reduction axes "
                            f"({outer.name}, {inner.name})")
    fused = IterVar(None, E.Var(f"{outer.name}.{inner.name}.fused", dtype=outer.var.dtype),
                    outer.iter_type)
    stage.relations.append(Fuse(outer, inner, fused))
    stage.leaf_iter_vars[pos_outer:pos_outer + 2] = [fused]
    stage.all_iter_vars.append(fused)
    return fused


def fuse(sch: ScheduleView, stage: Stage, *args: IterVar) -> IterVar:
    if not args:
        raise ScheduleError("fuse needs at least one iter var")
    fused = args[0]
    _leaf_position(stage, fused)
    for nxt in args[1:]:
        fused = _fuse_pair(stage, fused, nxt)
    return fused


def reorder(sch: ScheduleView, stage: Stage, *args: IterVar) -> None:
    if len({id(a) for a in args}) != len(args):
        raise ScheduleError("reorder: an iter var is listed twice")
    positions = sorted(_leaf_position(stage, iv) for iv in args)
    for pos, iv in zip(positions, args):
        stage.leaf_iter_vars[pos] = iv


def _annotate(stage: Stage, iv: IterVar, **changes: Any) -> None:
    _leaf_position(stage, iv)
    old = stage.iter_var_attrs.get(iv, IterVarAttr())
    stage.iter_var_attrs[iv] = replace(old, **changes)


def _loop_kind(kind: ForKind) -> Callable[..., None]:
    def apply(sch: ScheduleView, stage: Stage, iv: IterVar) -> None:
        _annotate(stage, iv, kind=kind, thread=None)
    return apply


def bind(sch: ScheduleView, stage: Stage, iv: IterVar, thread: IterVar) -> None:
    if not isinstance(thread, IterVar) or thread.iter_type != IterVarType.ThreadIndex:
        raise ScheduleError(f"bind needs a te.thread_axis, got {thread!r}")
    if iv.is_reduce:
        raise ScheduleError(f"bind: {iv.name} is a reduction axis")
    _annotate(stage, iv, kind=ForKind.THREAD_BINDING, thread=thread)


def pragma(sch: ScheduleView, stage: Stage, iv: IterVar, pragma_type: str,
           pragma_value: Any = None) -> None:
    old = stage.iter_var_attrs.get(iv, IterVarAttr())
    _annotate(stage, iv, pragmas=old.pragmas + ((str(pragma_type), pragma_value),))


def compute_at(sch: ScheduleView, stage: Stage, parent: Stage, scope: IterVar) -> None:
    if not isinstance(parent, Stage) or parent.schedule is not sch:
        raise ScheduleError("compute_at: the parent must be a stage of the same schedule")
    if parent is stage:
        raise ScheduleError(f"compute_at: stage {stage.name} cannot be attached to itself")
    if stage.is_output or stage.is_placeholder:
        raise ScheduleError(f"compute_at: stage {stage.name} is an output or a placeholder")
    if not any(iv is scope for iv in parent.all_iter_vars):
        raise ScheduleError(f"compute_at: {scope!r} is not an iter var of stage {parent.name}")
    stage.attach_type = AttachType.SCOPE
    stage.attach_stage, stage.attach_ivar = parent, scope


def compute_inline(sch: ScheduleView, stage: Stage) -> None:
    op = stage.op
    if not isinstance(op, ComputeOp) or op.reduce_axis:
        raise ScheduleError(f"compute_inline: stage {stage.name} is not an injective compute "
                            "(a reduction or a placeholder cannot be inlined)")
    if stage.is_output:
        raise ScheduleError(f"compute_inline: stage {stage.name} is an output")
    stage.attach_type = AttachType.INLINE
    stage.attach_stage = stage.attach_ivar = None


def compute_root(sch: ScheduleView, stage: Stage) -> None:
    stage.attach_type = AttachType.ROOT
    stage.attach_stage = stage.attach_ivar = None


def set_scope(sch: ScheduleView, stage: Stage, scope: str) -> None:
    stage.scope = str(scope)


# --- caches -------------------------------------------------------------------------------

def _replace_reads(op: ComputeOp, old: Tensor, new: Tensor) -> ComputeOp:
    def swap(node: E.PrimExpr) -> E.PrimExpr | None:
        if isinstance(node, E.ProducerLoad) and node.producer is old:
            return E.ProducerLoad(producer=new, indices=tuple(rewrite(i, swap)
                                                               for i in node.indices))
        return None
    return op.with_body(tuple(rewrite(b, swap) for b in op.body))


def _reader_stages(sch: ScheduleView, readers: Any) -> list[Stage]:
    items = readers if isinstance(readers, (list, tuple)) else [readers]
    out = []
    for item in items:
        stage = sch[item]
        if not isinstance(stage.op, ComputeOp):
            raise ScheduleError(f"cache_read: reader {stage.name} is not a compute stage")
        out.append(stage)
    return out


def _copy_of(tensor: Tensor, name: str) -> Tensor:
    axes = tuple(IterVar(Range(E.IntImm(value=0), d), E.Var(f"ax{k}"), IterVarType.DataPar)
                 for k, d in enumerate(tensor.shape))
    op = ComputeOp(name, axis=axes, body=(tensor.load([iv.var for iv in axes]),))
    return op.output(0)


def cache_read(sch: ScheduleView, stage: Stage | None, tensor: Tensor, scope: str,
               readers: Any) -> Tensor:
    source = sch[tensor]
    reader_stages = _reader_stages(sch, readers)
    cache = _copy_of(tensor, f"{tensor.op.name}.{scope}")
    for reader in reader_stages:
        assert isinstance(reader.op, ComputeOp)  # checked by _reader_stages
        new_op = _replace_reads(reader.op, tensor, cache)
        if not any(t is cache for t in new_op.input_tensors):
            raise ScheduleError(f"cache_read: stage {reader.name} does not read {tensor.name}")
        sch.replace_stage_op(reader, new_op)
    sch.insert_stage(Stage(sch, cache.op, scope), after=source)
    return cache


def cache_write(sch: ScheduleView, stage: Stage | None, tensor: Tensor,
                scope: str) -> Tensor:
    target = sch[tensor]
    op = target.op
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"cache_write: {tensor.name} is not computed by a compute op")
    if target.relations or target.iter_var_attrs:
        raise ScheduleError(f"cache_write on {tensor.name} must come before split/fuse/reorder "
                            "or loop annotations on its stage")
    axes = tuple(IterVar(iv.dom, E.Var(f"{iv.name}.c", dtype=iv.var.dtype), iv.iter_type)
                 for iv in op.axis)
    vmap = {old.var: new.var for old, new in zip(op.axis, axes)}
    body = tuple(substitute(b, vmap) for b in op.body)
    cache_op = ComputeOp(f"{op.name}.{scope}", tag=op.tag, attrs=op.attrs, axis=axes,
                         reduce_axis=op.reduce_axis, body=body)
    cache = cache_op.output(0)
    copy = ComputeOp(op.name, tag=op.tag, attrs=op.attrs, axis=op.axis,
                     body=(cache.load([iv.var for iv in op.axis]),))
    sch.replace_stage_op(target, copy, reset=True)
    sch.insert_stage(Stage(sch, cache_op, scope), before=target)
    return cache


PRIMITIVES: dict[str, Callable[..., Any]] = {
    "split": split,
    "fuse": fuse,
    "reorder": reorder,
    "vectorize": _loop_kind(ForKind.VECTORIZED),
    "parallel": _loop_kind(ForKind.PARALLEL),
    "unroll": _loop_kind(ForKind.UNROLLED),
    "bind": bind,
    "pragma": pragma,
    "compute_at": compute_at,
    "compute_inline": compute_inline,
    "compute_root": compute_root,
    "set_scope": set_scope,
    "cache_read": cache_read,
    "cache_write": cache_write,
}


def op_of(item: Any) -> Operation:
    """The operation of a Tensor, Operation or Stage."""
    if isinstance(item, Tensor):
        return item.op
    if isinstance(item, Stage):
        return item.origin_op
    if isinstance(item, Operation):
        return item
    raise ScheduleError(f"expected a tensor, operation or stage, got {item!r}")
