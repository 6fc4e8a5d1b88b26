"""Op strategies: a TE compute and a default schedule per target (TVM's `relay.op.strategy`).

    strategy = Op.get("nn.conv2d").get_attr("FTVMStrategy")
    outs = strategy.compute(call.attrs, [data, weight], call.checked_type)
    strategy.schedule_for("llvm")(s, outs, anchor)   # s: the fused function's schedule

`compute(attrs, inputs, out_type)` returns the op's output tensors (tagged, so
a schedule can tell injective stages from the anchor); a schedule function
takes the schedule of a whole fused function, its outputs and the anchor
op's outputs, inlines the injective stages and shapes the anchor's loops.
Targets are "llvm" (x86-style) and "cuda" (thread-bound).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.ir.attrs import Attrs
from engine.ir.errors import EngineError
from engine.ir.op import Op, register_op_attr
from engine.ir.type import TensorType, TupleType, Type
from engine.target import TargetLike, target_kind
from engine.te import Schedule, Tensor

ComputeFn = Callable[[Attrs, list[Tensor], Type], list[Tensor]]
ScheduleFn = Callable[[Schedule, list[Tensor], list[Tensor]], None]

TARGETS = ("llvm", "cuda")

# TE op tags (TVM's topi tags): a schedule inlines the injective ones
ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
EXTERN = "extern"
INJECTIVE_TAGS = (ELEMWISE, BROADCAST, INJECTIVE)


class StrategyError(EngineError):
    """An op has no strategy for the target, or its compute rejected the call."""


def is_injective(tag: str) -> bool:
    return tag.split(",")[0] in INJECTIVE_TAGS


@dataclass(frozen=True)
class OpStrategy:
    """How one op is computed in TE and scheduled per target."""

    name: str
    compute: ComputeFn
    schedules: Mapping[str, ScheduleFn] = field(default_factory=dict)

    def schedule_for(self, target: TargetLike) -> ScheduleFn:
        kind = target_kind(target)
        fn = self.schedules.get(kind)
        if fn is None:
            raise StrategyError(f"strategy {self.name} has no schedule for target {kind!r}")
        return fn


def register_strategy(op_names: str | Sequence[str], strategy: OpStrategy,
                      level: int = 10) -> OpStrategy:
    """Set `FTVMStrategy` of each registered op (ops not registered are skipped)."""
    names = [op_names] if isinstance(op_names, str) else list(op_names)
    for name in names:
        try:
            Op.get(name)
        except KeyError:
            continue
        register_op_attr(name, "FTVMStrategy", strategy, level)
    return strategy


def get_strategy(op: Op) -> OpStrategy | None:
    value = op.get_attr("FTVMStrategy")
    return value if isinstance(value, OpStrategy) else None


# --- helpers for computes ------------------------------------------------------------------

def static_shape(ty: Type, what: str = "output") -> tuple[int, ...]:
    if not isinstance(ty, TensorType):
        raise StrategyError(f"{what} must be a tensor, got {ty}")
    try:
        return ty.concrete_shape
    except (TypeError, ValueError):
        raise StrategyError(f"{what} has a dynamic shape {ty}: the build needs static "
                            "shapes") from None


def out_types(ty: Type) -> list[TensorType]:
    if isinstance(ty, TupleType):
        out: list[TensorType] = []
        for field_ty in ty.fields:
            out.extend(out_types(field_ty))
        return out
    if not isinstance(ty, TensorType):
        raise StrategyError(f"cannot build a value of type {ty}")
    return [ty]


def dims(t: Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def norm_axis(axis: Any, ndim: int) -> int:
    a = int(axis)
    return a + ndim if a < 0 else a


def attr(attrs: Attrs, key: str, default: Any = None) -> Any:
    value = attrs.get(key) if attrs is not None else None
    return default if value is None else value
