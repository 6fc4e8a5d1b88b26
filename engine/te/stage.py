"""A schedule stage: the loop structure of one operation (TVM's `te.Stage`).

A stage holds its root iter vars (the op's axes and reduce axes), the
relations that derive new iter vars from them (split, fuse), the current leaf
order, per-iter-var annotations (vectorize, parallel, unroll, bind, pragma)
and where it is attached (root, inline, or inside another stage's loop).

Every primitive method goes through `Schedule._apply`, which records it as a
replayable step before it runs; composite primitives (`tile`) are written in
terms of the recorded ones, so the record lists each of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.te.tensor import ComputeOp, IterVar, Operation
from engine.tir import expr as E
from engine.tir.stmt import ForKind


@dataclass(frozen=True, eq=False, slots=True)
class Split:
    """`parent = outer * factor + inner` (factor from `nparts` when that was given)."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: E.PrimExpr | None
    nparts: E.PrimExpr | None


@dataclass(frozen=True, eq=False, slots=True)
class Fuse:
    """`fused = outer * extent(inner) + inner`."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


Relation = Split | Fuse


@dataclass(frozen=True, slots=True)
class IterVarAttr:
    """How the loop of a leaf iter var is emitted."""

    kind: ForKind = ForKind.SERIAL
    thread: IterVar | None = None
    pragmas: tuple[tuple[str, Any], ...] = ()


class AttachType:
    ROOT = "root"
    INLINE = "inline"
    SCOPE = "scope"


class ScheduleView(Protocol):
    """What stages, primitives and records use of the Schedule that owns them
    (`engine.te.schedule.Schedule` implements it; it sits above these modules)."""

    spans: SpanLike

    @property
    def stages(self) -> Sequence[Stage]: ...

    @property
    def outputs(self) -> Sequence[Operation]: ...

    def __getitem__(self, key: Any) -> Stage: ...

    def stage_index(self, stage: Stage) -> int: ...

    def insert_stage(self, stage: Stage, before: Stage | None = None,
                     after: Stage | None = None) -> None: ...

    def replace_stage_op(self, stage: Stage, op: Operation, reset: bool = False) -> None: ...

    def _apply(self, name: str, stage: Stage | None, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any: ...


class Stage:
    """The loop structure of one operation within a Schedule."""

    __slots__ = ("schedule", "op", "origin_op", "all_iter_vars", "leaf_iter_vars", "relations",
                 "iter_var_attrs", "attach_type", "attach_ivar", "attach_stage", "scope",
                 "is_output", "_span")

    def __init__(self, schedule: ScheduleView, op: Operation, scope: str = "global") -> None:
        self.schedule = schedule
        self.op = op
        self.origin_op = op
        roots = root_iter_vars(op)
        self.all_iter_vars: list[IterVar] = list(roots)
        self.leaf_iter_vars: list[IterVar] = list(roots)
        self.relations: list[Relation] = []
        self.iter_var_attrs: dict[IterVar, IterVarAttr] = {}
        self.attach_type = AttachType.ROOT
        self.attach_ivar: IterVar | None = None
        self.attach_stage: Stage | None = None
        self.scope = scope
        self.is_output = False
        self._span: SpanLike | None = None

    # --- identity and provenance -----------------------------------------------------
    @property
    def name(self) -> str:
        return self.op.name

    @property
    def span(self) -> SpanLike:
        """The stage's own span if set, else the span of the schedule (the fused function)."""
        if self._span is not None:
            return self._span
        return self.schedule.spans if self.schedule is not None else UNKNOWN_SPAN

    @span.setter
    def span(self, value: SpanLike) -> None:
        self._span = value

    @property
    def own_span(self) -> SpanLike | None:
        return self._span

    @property
    def is_placeholder(self) -> bool:
        return not isinstance(self.op, ComputeOp)

    def reset_op(self, op: Operation) -> None:
        """Point the stage at a new op with fresh root iter vars (cache_write)."""
        self.op = op
        roots = root_iter_vars(op)
        self.all_iter_vars = list(roots)
        self.leaf_iter_vars = list(roots)
        self.relations = []
        self.iter_var_attrs = {}

    def __repr__(self) -> str:
        return f"stage({self.op.name}, {self.op!r})"

    # --- primitives (each recorded by the schedule) -----------------------------------
    def _apply(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.schedule._apply(name, self, args, kwargs)

    def split(self, parent: IterVar, factor: Any = None,
              nparts: Any = None) -> tuple[IterVar, IterVar]:
        """Split `parent` into (outer, inner) by `factor` (inner extent) or `nparts`."""
        return self._apply("split", parent, factor=factor, nparts=nparts)

    def tile(self, x_parent: IterVar, y_parent: IterVar, x_factor: Any,
             y_factor: Any) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Split two axes and order them (xo, yo, xi, yi): recorded as split, split, reorder."""
        x_outer, x_inner = self.split(x_parent, factor=x_factor)
        y_outer, y_inner = self.split(y_parent, factor=y_factor)
        self.reorder(x_outer, y_outer, x_inner, y_inner)
        return x_outer, y_outer, x_inner, y_inner

    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse consecutive leaf iter vars (outermost first) into one."""
        return self._apply("fuse", *args)

    def reorder(self, *args: IterVar) -> None:
        """Put these leaf iter vars, in this order, into the positions they occupy."""
        self._apply("reorder", *args)

    def vectorize(self, var: IterVar) -> None:
        self._apply("vectorize", var)

    def parallel(self, var: IterVar) -> None:
        self._apply("parallel", var)

    def unroll(self, var: IterVar) -> None:
        self._apply("unroll", var)

    def bind(self, ivar: IterVar, thread_ivar: IterVar) -> None:
        """Bind the loop of `ivar` to a thread axis (`te.thread_axis("blockIdx.x")`)."""
        self._apply("bind", ivar, thread_ivar)

    def pragma(self, var: IterVar, pragma_type: str, pragma_value: Any = None) -> None:
        self._apply("pragma", var, pragma_type, pragma_value)

    def compute_at(self, parent: Stage, scope: IterVar) -> None:
        """Compute this stage inside the loop of `scope` of stage `parent`."""
        self._apply("compute_at", parent, scope)

    def compute_inline(self) -> None:
        """Substitute this (injective) stage's expression into its consumers."""
        self._apply("compute_inline")

    def compute_root(self) -> None:
        self._apply("compute_root")

    def set_scope(self, scope: str) -> None:
        self._apply("set_scope", scope)


def root_iter_vars(op: Operation) -> list[IterVar]:
    return [*getattr(op, "axis", ()), *getattr(op, "reduce_axis", ())]
