"""Schedules shared by the op strategies: inlining, injective and generic schedules.

x86 ("llvm"): injective stages are inlined into their consumers, the outer
loops of every remaining stage are fused and run in parallel, the innermost
data-parallel loop is split and vectorized. CUDA: every remaining stage has
its data-parallel loops fused and split over blockIdx.x / threadIdx.x.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import engine.te as te
from engine.relay.strategy.base import is_injective
from engine.te import IterVar, Schedule, Stage, Tensor

VECTOR_FACTORS = (16, 8, 4)
CUDA_THREADS = 64


def const_extent(iv: IterVar) -> int | None:
    dom = iv.dom
    value = getattr(dom.extent, "value", None) if dom is not None else None
    return value if isinstance(value, int) else None


def best_factor(n: int, candidates: Iterable[int]) -> int:
    """The first candidate that divides n (1 if none does)."""
    return next((c for c in candidates if c <= n and n % c == 0), 1)


def compute_stages(s: Schedule) -> list[Stage]:
    return [st for st in s.stages if not st.is_placeholder]


def output_ids(outs: Sequence[Tensor]) -> set[int]:
    return {id(t.op) for t in outs}


MAX_INLINE_CHAIN = 32
"""Injective stages inlined into one another at most this deep: past it one stage is
materialized (a fused chain of hundreds of elementwise ops would otherwise become one
expression hundreds of levels deep, unreadable in the loop nest and too deep to walk)."""


def inline_injective(s: Schedule, outs: Sequence[Tensor], keep: Sequence[Tensor] = ()) -> None:
    """compute_inline every injective stage that is not an output (nor in `keep`), except
    one in every MAX_INLINE_CHAIN along a chain of inlined stages."""
    skip = output_ids(outs) | output_ids(keep)
    depth: dict[int, int] = {}  # op id -> length of the inlined chain ending at it
    chosen: list[Stage] = []
    for stage in compute_stages(s):  # producers before consumers
        op = stage.origin_op
        chain = 1 + max((depth.get(id(t.op), 0) for t in op.input_tensors), default=0)
        if (id(op) in skip or not is_injective(op.tag) or stage.attach_type == "inline"
                or chain > MAX_INLINE_CHAIN):
            depth[id(op)] = 0
            continue
        depth[id(op)] = chain
        chosen.append(stage)
    for stage in reversed(chosen):
        stage.compute_inline()


def is_root(stage: Stage) -> bool:
    return stage.attach_type == "root" and not stage.is_placeholder


def is_untouched(stage: Stage) -> bool:
    """A root compute stage no primitive has shaped yet."""
    return is_root(stage) and not stage.relations and not stage.iter_var_attrs


def data_leaves(stage: Stage) -> list[IterVar]:
    return [iv for iv in stage.leaf_iter_vars if not iv.is_reduce]


# --- llvm ----------------------------------------------------------------------------------

def parallel_outer(stage: Stage, count: int) -> IterVar | None:
    """Fuse the first `count` data-parallel leaves and mark the result parallel."""
    axes = data_leaves(stage)[:count]
    if not axes:
        return None
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    stage.parallel(fused)
    return fused


def vectorize_inner(stage: Stage, iv: IterVar) -> IterVar | None:
    """Split `iv` by a vector width that divides it and vectorize the inner part."""
    extent = const_extent(iv)
    if extent is None or extent < 4:
        return None
    factor = best_factor(extent, VECTOR_FACTORS)
    if factor == 1:
        return None
    if factor == extent:
        stage.vectorize(iv)
        return None
    outer, inner = stage.split(iv, factor=factor)
    stage.vectorize(inner)
    return outer


def injective_llvm(stage: Stage) -> None:
    """TVM's x86 schedule_injective_from_existing on one stage."""
    axes = list(stage.op.axis)
    if not axes:
        return
    if len(axes) == 1:
        outer = vectorize_inner(stage, axes[0])
        stage.parallel(outer if outer is not None else axes[0])
        return
    count = 3 if len(axes) >= 5 else (2 if len(axes) >= 3 else 1)
    parallel_outer(stage, count)
    vectorize_inner(stage, axes[-1])


def schedule_injective_llvm(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    inline_injective(s, outs)
    for stage in compute_stages(s):
        if is_untouched(stage):
            injective_llvm(stage)


def schedule_generic_llvm(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    """Inline the injective stages, run the outer loops of every other stage in parallel."""
    inline_injective(s, outs)
    for stage in compute_stages(s):
        if not is_untouched(stage):
            continue
        if stage.op.reduce_axis:
            parallel_outer(stage, 2)
        else:
            injective_llvm(stage)


# --- cuda -----------------------------------------------------------------------------------

def bind_cuda(stage: Stage, threads: int = CUDA_THREADS) -> IterVar | None:
    """Fuse the data-parallel leaves and bind them to blockIdx.x / threadIdx.x."""
    axes = data_leaves(stage)
    if not axes:
        return None
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    total = 1
    for iv in axes:
        total *= const_extent(iv) or threads
    bx, tx = stage.split(fused, factor=min(threads, total))
    stage.bind(bx, te.thread_axis("blockIdx.x"))
    stage.bind(tx, te.thread_axis("threadIdx.x"))
    return tx


def schedule_generic_cuda(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    """Inline the injective stages; every remaining stage becomes a thread-bound nest."""
    inline_injective(s, outs)
    for stage in compute_stages(s):
        if is_untouched(stage):
            bind_cuda(stage)


def schedule_reduce_cuda(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    """A reduction with an elementwise epilogue: the reduction is computed per thread of
    the output (into a local cache when it is the output itself)."""
    inline_injective(s, outs)
    red = anchor[0]
    out = next((t for t in outs if dims_of(t) == dims_of(red)), None)
    if out is None or not s[red].op.reduce_axis:
        schedule_generic_cuda_rest(s)
        return
    if out.op is red.op:
        red = s.cache_write(red, "local")
    tx = bind_cuda(s[out])
    if tx is not None:
        s[red].compute_at(s[out], tx)
    schedule_generic_cuda_rest(s)


def schedule_generic_cuda_rest(s: Schedule) -> None:
    for stage in compute_stages(s):
        if is_untouched(stage):
            bind_cuda(stage)


def dims_of(t: Tensor) -> tuple[str, ...]:
    return tuple(str(d) for d in t.shape)


INJECTIVE_SCHEDULES = {"llvm": schedule_injective_llvm, "cuda": schedule_generic_cuda}
GENERIC_SCHEDULES = {"llvm": schedule_generic_llvm, "cuda": schedule_generic_cuda}
