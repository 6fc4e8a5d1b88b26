"""Schedules with records (TVM's `te.Schedule`, `te.create_schedule`).

    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    s.primitive_record   # ["vanilla", "split", "split", "reorder"]
    s.schedule_record[2] # the schedule after the first two splits (replayed)
    print(s.record_as_python())

The record is on when the PassContext config `te.keep_schedule_record` is
true (off by default, as in TVM); with it off, both records are empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.te.config import keep_schedule_record
from engine.te.errors import ScheduleError
from engine.te.primitives import PRIMITIVES, op_of
from engine.te.record import PythonPrinter, Step, decode, encode_step
from engine.te.stage import Stage
from engine.te.tensor import Operation, Tensor


class Schedule:
    """The stages of a compute DAG in producer-before-consumer order, plus the record."""

    def __init__(self, outputs: Sequence[Operation], keep_record: bool | None = None,
                 spans: SpanLike = UNKNOWN_SPAN) -> None:
        self.outputs: list[Operation] = list(outputs)
        self.stages: list[Stage] = []
        self._stage_of: dict[int, Stage] = {}
        self._positions: dict[int, int] | None = None
        self._steps: list[Step] = []
        self.keep_record = keep_schedule_record() if keep_record is None else keep_record
        self.spans: SpanLike = spans
        for op in _post_order(self.outputs):
            self._add_stage(Stage(self, op))
        for op in self.outputs:
            self[op].is_output = True

    # --- stages ------------------------------------------------------------------------------
    def _add_stage(self, stage: Stage, position: int | None = None) -> None:
        if position is None:
            self.stages.append(stage)
        else:
            self.stages.insert(position, stage)
        self._stage_of[id(stage.op)] = stage
        self._stage_of[id(stage.origin_op)] = stage
        self._positions = None

    def __getitem__(self, key: Any) -> Stage:
        if isinstance(key, Stage):
            return key
        op = op_of(key)
        stage = self._stage_of.get(id(op))
        if stage is None:
            raise ScheduleError(f"{op.name} is not an operation of this schedule")
        return stage

    def __contains__(self, key: Any) -> bool:
        try:
            self[key]
        except ScheduleError:
            return False
        return True

    def stage_index(self, stage: Stage) -> int:
        if self._positions is None:
            self._positions = {id(s): i for i, s in enumerate(self.stages)}
        index = self._positions.get(id(stage))
        if index is None:
            raise ScheduleError(f"stage {stage.name} is not in this schedule")
        return index

    def insert_stage(self, stage: Stage, before: Stage | None = None,
                     after: Stage | None = None) -> None:
        anchor = before if before is not None else after
        if anchor is None:
            raise ScheduleError("insert_stage needs before= or after=")
        position = self.stage_index(anchor) + (0 if before is not None else 1)
        self._add_stage(stage, position)

    def replace_stage_op(self, stage: Stage, op: Operation, reset: bool = False) -> None:
        if reset:
            stage.reset_op(op)
        else:
            stage.op = op
        self._stage_of[id(op)] = stage

    def normalize(self) -> Schedule:
        """Loops are emitted from 0 already; kept for TVM compatibility."""
        return self

    # --- primitives and the record -------------------------------------------------------
    def _apply(self, name: str, stage: Stage | None, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
        step = encode_step(self, name, stage, args, kwargs)
        result = PRIMITIVES[name](self, stage, *args, **kwargs)
        self._steps.append(step)
        return result

    def cache_read(self, tensor: Tensor, scope: str, readers: Any) -> Tensor:
        """A `scope` copy of `tensor` that `readers` read instead of it."""
        return self._apply("cache_read", None, (tensor, scope, readers), {})

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute `tensor` into a `scope` cache first, then copy it out."""
        return self._apply("cache_write", None, (tensor, scope), {})

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    @property
    def primitive_record(self) -> list[str]:
        if not self.keep_record:
            return []
        return ["vanilla", *(step.primitive for step in self._steps)]

    @property
    def schedule_record(self) -> ScheduleRecord:
        return ScheduleRecord(self)

    def replay(self, num_steps: int) -> Schedule:
        """A new schedule: the vanilla one with the first `num_steps` steps applied."""
        fresh = self._vanilla()
        for step in self._steps[:num_steps]:
            fresh.apply_step(step)
        return fresh

    def _vanilla(self) -> Schedule:
        fresh = Schedule(self.outputs, keep_record=self.keep_record, spans=self.spans)
        for stage in self.stages:
            own = stage.own_span
            if own is not None and stage.origin_op in fresh:
                fresh[stage.origin_op].span = own
        return fresh

    def apply_step(self, step: Step) -> Any:
        stage = None if step.stage is None else self.stages[step.stage]
        args = decode(self, step.args)
        kwargs = {k: decode(self, v) for k, v in step.kwargs}
        result = PRIMITIVES[step.primitive](self, stage, *args, **kwargs)
        self._steps.append(step)
        return result

    def python_lines(self) -> list[str]:
        """The record as Python: the create_schedule line, then one line per step."""
        fresh = self._vanilla()
        printer = PythonPrinter(fresh)
        lines = [printer.header()]
        for step in self._steps:
            args = decode(fresh, step.args)
            kwargs = {k: decode(fresh, v) for k, v in step.kwargs}
            lines.append(printer.line(step, fresh.apply_step(step), args, kwargs))
        return lines

    def record_as_python(self) -> str:
        return "\n".join(self.python_lines())

    def __repr__(self) -> str:
        return f"Schedule({', '.join(op.name for op in self.outputs)}; {len(self._steps)} steps)"


class ScheduleRecord(Sequence[Schedule]):
    """`schedule_record`: snapshot k is replayed on access from the first k steps."""

    def __init__(self, schedule: Schedule) -> None:
        self._schedule = schedule

    def __len__(self) -> int:
        sch = self._schedule
        return len(sch._steps) + 1 if sch.keep_record else 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        size = len(self)
        if not -size <= index < size:
            raise IndexError(f"schedule_record index {index} out of range ({size} snapshots)")
        return self._schedule.replay(index % size)

    def __iter__(self) -> Iterator[Schedule]:
        return (self[i] for i in range(len(self)))


def _post_order(outputs: Sequence[Operation]) -> list[Operation]:
    """Every op the outputs depend on, producers first (iterative DFS)."""
    order: list[Operation] = []
    seen: set[int] = set()
    for root in outputs:
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if expanded:
                order.append(op)
                continue
            if id(op) in seen:
                continue
            seen.add(id(op))
            stack.append((op, True))
            for tensor in reversed(op.input_tensors):
                if id(tensor.op) not in seen:
                    stack.append((tensor.op, False))
    return order


def create_schedule(ops: Any) -> Schedule:
    """A schedule for the output operation(s) `ops` (an Operation, Tensor or a list)."""
    items = ops if isinstance(ops, (list, tuple)) else [ops]
    return Schedule([op_of(item) for item in items])
