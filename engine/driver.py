"""`tvm.lower` and `tvm.build` for TE schedules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.te.errors import LoweringError
from engine.te.schedule import Schedule
from engine.te.schedule_ops import lower_schedule
from engine.te.tensor import Tensor
from engine.tir.stmt import PrimFunc, PrimFuncModule


def lower(sch: Any, args: Sequence[Tensor] | None = None, name: str = "main",
          binds: Any = None, simple_mode: bool = False) -> PrimFuncModule:
    """Lower a schedule to a module holding one PrimFunc `name` over `args`' buffers.

    `simple_mode` is accepted for TVM compatibility: the text is always the
    simple, readable loop nest.
    """
    if isinstance(sch, PrimFuncModule):
        return sch
    if isinstance(sch, PrimFunc):
        return PrimFuncModule({sch.name: sch})
    if not isinstance(sch, Schedule):
        raise LoweringError(f"lower expects a te.Schedule, got {type(sch).__name__}")
    if binds:
        raise LoweringError("lower: binds= is not supported; buffers come from args")
    if args is None:
        raise LoweringError("lower needs args: the input and output tensors, in order")
    return PrimFuncModule({name: lower_schedule(sch, list(args), name)})
