"""Schedule records: each primitive is kept as a replayable `Step`.

A step names its primitive and refers to stages, iter vars and tensors by
position (`StageRef(3)`, `IterVarRef(3, 5)`), never by object: replaying the
first k steps on a fresh schedule of the same outputs rebuilds snapshot k
exactly, so a record costs a few small tuples per primitive, not a copy of the
schedule. `python_lines` prints the steps as Python that reproduces them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.te.errors import ScheduleError
from engine.te.stage import ScheduleView, Stage
from engine.te.tensor import IterVar, IterVarType, Operation, Tensor
from engine.tir import expr as E
from engine.tir.arith import simplify


@dataclass(frozen=True, slots=True)
class StageRef:
    stage: int


@dataclass(frozen=True, slots=True)
class IterVarRef:
    stage: int
    index: int


@dataclass(frozen=True, slots=True)
class TensorRef:
    stage: int
    value_index: int


@dataclass(frozen=True, slots=True)
class OpRef:
    stage: int


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded primitive: its name, target stage (None: schedule-level) and args."""

    primitive: str
    stage: int | None
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]


# --- encoding -------------------------------------------------------------------------------

def _iter_var_ref(sch: ScheduleView, iv: IterVar, prefer: Stage | None) -> Any:
    stages = [*([prefer] if prefer is not None else []), *sch.stages]
    for stage in stages:
        for index, candidate in enumerate(stage.all_iter_vars):
            if candidate is iv:
                return IterVarRef(sch.stage_index(stage), index)
    if iv.iter_type == IterVarType.ThreadIndex:
        return iv  # a thread axis is a value shared by every replay
    raise ScheduleError(f"{iv!r} is not an iter var of any stage of this schedule")


def encode(sch: ScheduleView, value: Any, prefer: Stage | None = None) -> Any:
    """A position-based reference for a live object (numbers and strings stay as they are)."""
    if isinstance(value, IterVar):
        return _iter_var_ref(sch, value, prefer)
    if isinstance(value, Stage):
        return StageRef(sch.stage_index(value))
    if isinstance(value, Tensor):
        return TensorRef(sch.stage_index(sch[value]), value.value_index)
    if isinstance(value, Operation):
        return OpRef(sch.stage_index(sch[value]))
    if isinstance(value, (list, tuple)):
        return type(value)(encode(sch, v, prefer) for v in value)
    return value


def encode_step(sch: ScheduleView, name: str, stage: Stage | None, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Step:
    index = None if stage is None else sch.stage_index(stage)
    return Step(name, index, tuple(encode(sch, a, stage) for a in args),
                tuple((k, encode(sch, v, stage)) for k, v in kwargs.items()))


def decode(sch: ScheduleView, value: Any) -> Any:
    """The live object a reference denotes in `sch`."""
    if isinstance(value, IterVarRef):
        return sch.stages[value.stage].all_iter_vars[value.index]
    if isinstance(value, StageRef):
        return sch.stages[value.stage]
    if isinstance(value, TensorRef):
        return sch.stages[value.stage].origin_op.output(value.value_index)
    if isinstance(value, OpRef):
        return sch.stages[value.stage].origin_op
    if isinstance(value, (list, tuple)):
        return type(value)(decode(sch, v) for v in value)
    return value


# --- printing as Python -------------------------------------------------------------------

def _identifier(name: str) -> str:
    ident = re.sub(r"\W", "_", name)
    return ident if ident and not ident[0].isdigit() else f"t_{ident}"


class PythonNames:
    """Python names for the tensors and iter vars a replay produces."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._used: set[str] = {"s", "te"}
        self._keep: list[Any] = []

    def bind(self, obj: Any, base: str) -> str:
        name, count = _identifier(base), 0
        root = name
        while name in self._used:
            count += 1
            name = f"{root}_{count}"
        self._used.add(name)
        self._names[id(obj)] = name
        self._keep.append(obj)
        return name

    def get(self, obj: Any) -> str | None:
        return self._names.get(id(obj))


class PythonPrinter:
    """Renders steps as Python, replaying them on `sch` to learn what each returns."""

    def __init__(self, sch: ScheduleView) -> None:
        self.sch = sch
        self.names = PythonNames()
        for stage in sch.stages:
            tensor = stage.origin_op.output(0)
            self.names.bind(tensor, tensor.op.name)

    def header(self) -> str:
        outs = ", ".join(f"{self.tensor(op.output(0))}.op" for op in self.sch.outputs)
        return f"s = te.create_schedule([{outs}])"

    def tensor(self, t: Tensor) -> str:
        return self.names.get(t) or self.names.bind(t, t.op.name)

    def iter_var(self, iv: IterVar) -> str:
        known = self.names.get(iv)
        if known is not None:
            return known
        if iv.iter_type == IterVarType.ThreadIndex:
            dom = ""
            if iv.dom is not None:
                dom = f"({iv.dom.min}, {simplify(iv.dom.min + iv.dom.extent)}), "
            return f'te.thread_axis({dom}"{iv.thread_tag}")'
        for stage in self.sch.stages:
            op = stage.origin_op
            for field in ("axis", "reduce_axis"):
                for index, root in enumerate(getattr(op, field, ())):
                    if root is iv:
                        return f"{self.tensor(op.output(0))}.op.{field}[{index}]"
        raise ScheduleError(f"cannot name {iv!r} in the recorded Python")

    def value(self, v: Any) -> str:
        if isinstance(v, IterVar):
            return self.iter_var(v)
        if isinstance(v, Stage):
            return f"s[{self.tensor(v.origin_op.output(0))}]"
        if isinstance(v, Tensor):
            return self.tensor(v)
        if isinstance(v, Operation):
            return f"{self.tensor(v.output(0))}.op"
        if isinstance(v, list):
            return "[" + ", ".join(self.value(x) for x in v) + "]"
        if isinstance(v, tuple):
            return "(" + ", ".join(self.value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if isinstance(v, E.PrimExpr):
            return str(v)
        return repr(v)

    def line(self, step: Step, result: Any, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> str:
        parts = [self.value(a) for a in args]
        parts += [f"{k}={self.value(v)}" for k, v in kwargs.items() if v is not None]
        target = "s" if step.stage is None else self.value(self.sch.stages[step.stage])
        call = f"{target}.{step.primitive}({', '.join(parts)})"
        lhs = self._assign(result)
        return f"{lhs} = {call}" if lhs else call

    def _assign(self, result: Any) -> str:
        items = result if isinstance(result, tuple) else (result,)
        names = []
        for item in items:
            if isinstance(item, IterVar):
                names.append(self.names.get(item) or self.names.bind(item, item.name))
            elif isinstance(item, Tensor):
                names.append(self.names.get(item) or self.names.bind(item, item.op.name))
        return ", ".join(names)
