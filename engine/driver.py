"""`tvm.lower` and `tvm.build` for TE schedules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.target import target_kind
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


class BuiltFunc:
    """What `tvm.build` returns here: the lowered loop nest, callable on numpy arrays (it
    runs through engine.tir.eval; there is no native code generator)."""

    def __init__(self, module: PrimFuncModule, name: str, target: str) -> None:
        from engine.tir.eval import CompiledFunc

        self.module = module
        self.name = name
        self.target = target
        self._compiled = CompiledFunc(module[name])

    def __call__(self, *arrays: Any) -> None:
        self._compiled(*arrays)

    def __getitem__(self, name: str) -> BuiltFunc:
        if name != self.name:
            raise KeyError(f"no function {name!r} (built: {self.name!r})")
        return self

    def get_source(self, fmt: str = "") -> str:
        return self.module.script()

    @property
    def entry_func(self) -> PrimFunc:
        return self.module[self.name]


def build(inputs: Any, args: Sequence[Tensor] | None = None, target: Any = "llvm",
          target_host: Any = None, name: str = "main", binds: Any = None) -> BuiltFunc:
    """`tvm.build(s, [A, B], target)`: lower the schedule and make it callable."""
    module = lower(inputs, args, name=name, binds=binds)
    entry = name if name in module else next(iter(module))
    return BuiltFunc(module, entry, target_kind(target))
