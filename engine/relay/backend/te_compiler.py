"""Lower a fused (Primitive) Relay function to one TE schedule (TVM's te_compiler).

Each call in the function body is computed by its op's strategy
(`FTVMStrategy`; an extern stage when the op has none) on the tensors of its
arguments; the schedule covers every op of the function and is shaped by the
anchor op's strategy (the op with the highest fusion pattern, the last one on
a tie, as TVM picks it), which inlines the injective stages into it.

    lowered = lower_primitive(fused_func, "llvm", "fused_nn_conv2d_add_nn_relu")
    lowered.schedule.schedule_record      # vanilla, then one snapshot per primitive
    lowered.lower()                        # the final loop nest (PrimFuncModule)
    lowered.steps()                        # per snapshot: primitive, python, loop nest, TEDD

`TECompiler` (TVM's TECompiler and its CCacheKey) lowers each distinct primitive
function once per build: its cache is keyed structurally (the function modulo variable
names and spans, its parameter types, the target), so the 16 identical bottleneck
blocks of a ResNet share one kernel; every call lowered to a kernel is one of its
`calls` (their spans keep the provenance of each call site).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import engine.te as te
from engine.ir.errors import EngineError
from engine.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from engine.ir.op import Op
from engine.ir.span import SpanLike
from engine.ir.structural import structural_equal, structural_hash
from engine.ir.type import TensorType, TupleType, Type
from engine.relay import strategy as _strategies
from engine.relay.expr_functor import post_order_visit
from engine.relay.strategy.base import OpStrategy, get_strategy, out_types, static_shape
from engine.relay.strategy.extern import extern_strategy
from engine.relay.strategy.schedules import INJECTIVE_SCHEDULES
from engine.target import target_kind
from engine.te import Schedule, Tensor
from engine.tir.stmt import PrimFuncModule

Value = Any  # Tensor | tuple[Value, ...]

_ = _strategies  # registers every FTVMStrategy


class LowerError(EngineError):
    """A fused function could not be lowered to TE (names the function and the op)."""


@dataclass
class ScheduleStep:
    """One snapshot of a schedule record, with what the explorer shows for it."""

    index: int
    primitive: str
    python: str
    loop_nest: str
    tedd: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {"k": self.index, "primitive": self.primitive, "python": self.python,
                "loop_nest": self.loop_nest, "tedd": dict(self.tedd)}


@dataclass(eq=False)
class LoweredFunc:
    """A fused function, its TE tensors and its (recorded) schedule."""

    name: str
    func: Function
    target: str
    schedule: Schedule
    inputs: list[Tensor]
    outputs: list[Tensor]
    anchor: str
    ops: list[str]
    constants: list[tuple[Tensor, np.ndarray]] = field(default_factory=list)
    extern: bool = False
    calls: list[SpanLike] = field(default_factory=list)
    """The spans of every call site sharing this kernel (TECompiler), in dataflow order."""
    _lowered: PrimFuncModule | None = None
    _steps: list[ScheduleStep] | None = None

    @property
    def args(self) -> list[Tensor]:
        """The buffers of the kernel: inputs (params, then lifted constants), outputs."""
        return [*self.inputs, *(t for t, _ in self.constants), *self.outputs]

    @property
    def spans(self) -> SpanLike:
        return self.func.span

    def lower(self, snapshot: Schedule | None = None) -> PrimFuncModule:
        """The loop nest of the final schedule (cached) or of a snapshot of its record."""
        from engine.driver import lower

        if snapshot is not None:
            return lower(snapshot, self.args, name=self.name)
        if self._lowered is None:
            self._lowered = lower(self.schedule, self.args, name=self.name)
        return self._lowered

    def num_steps(self) -> int:
        """How many steps `steps()` will show (without replaying any)."""
        return len(_step_groups(list(self.schedule.primitive_record)))

    def steps(self) -> list[ScheduleStep]:
        """Every snapshot of the record, replayed once in order (cached)."""
        if self._steps is None:
            self._steps = record_steps(self.schedule, self.args, self.name)
        return self._steps


GROUP_RUNS_OVER = 4
"""A run of more than this many consecutive identical primitives (the compute_inline of
every stage of a long fused chain) is shown as one step after the last of them."""


def _step_groups(names: list[str]) -> list[tuple[int, int]]:
    """(first, last) record indices of the steps to show: every primitive on its own,
    except that a long run of the same primitive collapses into one step."""
    groups: list[tuple[int, int]] = []
    k = 0
    while k < len(names):
        end = k
        while k and end + 1 < len(names) and names[end + 1] == names[k]:
            end += 1
        if end - k + 1 > GROUP_RUNS_OVER:
            groups.append((k, end))
        else:
            groups.extend((j, j) for j in range(k, end + 1))
        k = end + 1
    return groups


def record_steps(s: Schedule, args: list[Tensor], name: str = "main") -> list[ScheduleStep]:
    """Primitive, Python line, loop nest and TEDD views of each snapshot of `s`'s record
    (a long run of one primitive is one step: `compute_inline x250`, its Python lines
    joined, the state after the last of them)."""
    from engine.driver import lower
    from engine.te import tedd

    if not s.primitive_record:
        return []
    python = s.python_lines()
    names = list(s.primitive_record)
    snapshot = s.replay(0)
    applied = 0
    out = []
    for first, last in _step_groups(names):
        while applied < last:
            snapshot.apply_step(s.steps[applied])
            applied += 1
        views = {"schedule_tree": tedd.viz_schedule_tree(snapshot),
                 "itervar": tedd.viz_itervar_relationship_graph(snapshot),
                 "dataflow": tedd.viz_dataflow_graph(snapshot)}
        label = names[last] if first == last else f"{names[last]} x{last - first + 1}"
        out.append(ScheduleStep(last, label, "\n".join(python[first:last + 1]),
                                str(lower(snapshot, args, name=name)),
                                {key: value or "" for key, value in views.items()}))
    return out


# --- Relay -> TE ------------------------------------------------------------------------------

def _placeholders(ty: Type, name: str) -> Value:
    if isinstance(ty, TupleType):
        return tuple(_placeholders(f, f"{name}_{k}") for k, f in enumerate(ty.fields))
    if not isinstance(ty, TensorType):
        raise LowerError(f"parameter {name} has type {ty}: only tensors and tuples lower")
    return te.placeholder(static_shape(ty, name), dtype=ty.dtype, name=name)


def flatten(value: Value) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    out: list[Tensor] = []
    for item in value:
        out.extend(flatten(item))
    return out


def _regroup(tensors: list[Tensor], ty: Type) -> Value:
    """Tensors in the nesting of `ty` (a tuple type groups them)."""
    if not isinstance(ty, TupleType):
        return tensors.pop(0)
    return tuple(_regroup(tensors, f) for f in ty.fields)


def _pattern(op: Op) -> int:
    value = op.get_attr("TOpPattern")
    return int(value) if value is not None else 8


class ToTE:
    """Walks a primitive function's body, building TE tensors for every node."""

    def __init__(self, func: Function) -> None:
        self.func = func
        self.memo: dict[Expr, Value] = {}
        self.inputs: list[Tensor] = []
        self.constants: list[tuple[Tensor, np.ndarray]] = []
        self.ops: list[str] = []
        self.anchor: tuple[int, OpStrategy | None, list[Tensor]] = (-1, None, [])
        self.anchor_op = ""
        self.extern = False
        self._handlers: dict[type, Callable[[Any], Value]] = {
            Var: self._var, Constant: self._constant, Call: self._call, Tuple: self._tuple,
            TupleGetItem: self._getitem,
        }

    def run(self) -> list[Tensor]:
        for k, param in enumerate(self.func.params):
            ty = param.checked_type if param.has_type else param.type_annotation
            if ty is None:
                raise LowerError(f"parameter %{param.name_hint} has no type: "
                                 "run InferType before lowering")
            value = _placeholders(ty, param.name_hint or f"p{k}")
            self.memo[param] = value
            self.inputs.extend(flatten(value))
        post_order_visit(self.func.body, self._visit)
        return flatten(self.memo[self.func.body])

    def _visit(self, expr: Expr) -> None:
        if expr in self.memo or isinstance(expr, Op):
            return
        handler = self._handlers.get(type(expr))
        if handler is None:
            raise LowerError(f"cannot lower a {type(expr).__name__} inside a fused function")
        self.memo[expr] = handler(expr)

    def _var(self, var: Var) -> Value:
        raise LowerError(f"free variable {var.name_hint} in a fused function")

    def _constant(self, const: Constant) -> Value:
        data = np.asarray(const.data)
        if data.ndim == 0:
            value = data.item()
            return te.compute((), lambda: te.const(value, str(data.dtype)), name="const",
                              tag="elemwise")
        tensor = te.placeholder(data.shape, dtype=str(data.dtype),
                                name=f"constant_{len(self.constants)}")
        self.constants.append((tensor, data))
        return tensor

    def _tuple(self, tup: Tuple) -> Value:
        return tuple(self.memo[f] for f in tup.fields)

    def _getitem(self, item: TupleGetItem) -> Value:
        return self.memo[item.tuple_value][item.index]

    def _call(self, call: Call) -> Value:
        op = call.op
        if not isinstance(op, Op):
            raise LowerError("a fused function may only call operators")
        strategy = get_strategy(op)
        if strategy is None:
            strategy = extern_strategy(op.name)
            self.extern = True
        inputs = [t for arg in call.args for t in flatten(self.memo[arg])]
        try:
            outs = strategy.compute(call.attrs, inputs, call.checked_type)
        except EngineError:
            raise
        except Exception as err:  # a compute's own bug or an unsupported attribute
            raise LowerError(f"{op.name}: TE compute failed: {err}") from err
        self.extern = self.extern or any(t.op.tag == "extern" for t in outs)
        self.ops.append(op.name)
        pattern = _pattern(op)
        if pattern >= self.anchor[0]:
            self.anchor = (pattern, strategy, list(outs))
            self.anchor_op = op.name
        return _regroup(list(outs), call.checked_type)


def _expected_outputs(func: Function) -> int:
    return len(out_types(func.body.checked_type))


def lower_primitive(func: Function, target: str = "llvm", name: str = "fused") -> LoweredFunc:
    """The TE schedule of one fused function, shaped by its anchor op's strategy."""
    builder = ToTE(func)
    try:
        outs = builder.run()
    except LowerError as err:
        raise LowerError(f"{name}: {err}") from err
    if len(outs) != _expected_outputs(func):
        raise LowerError(f"{name}: built {len(outs)} outputs for a function returning "
                         f"{func.body.checked_type}")
    outs = _distinct_outputs(outs)
    s = te.create_schedule([t.op for t in outs])
    s.spans = func.span
    pattern, strategy, anchor_outs = builder.anchor
    if strategy is None or pattern <= 2:
        INJECTIVE_SCHEDULES[_kind(target)](s, outs, anchor_outs)
    else:
        strategy.schedule_for(target)(s, outs, anchor_outs)
    return LoweredFunc(name, func, _kind(target), s, builder.inputs, outs,
                       builder.anchor_op, builder.ops,
                       builder.constants, builder.extern)


def _param_types(func: Function) -> tuple[Type | None, ...]:
    return tuple(p.checked_type if p.has_type else p.type_annotation for p in func.params)


class TECompiler:
    """Lowers primitive functions for one target, each structurally distinct one once
    (TVM's TECompiler): `lower(func, name)` returns the cached kernel of an equal function
    (names and spans aside, same parameter types) or lowers a new one named `name()`."""

    def __init__(self, target: str) -> None:
        self.target = target_kind(target)
        self._cache: dict[tuple[int, tuple[Type | None, ...]], list[LoweredFunc]] = {}

    def lower(self, func: Function, name: Callable[[], str]) -> tuple[LoweredFunc, bool]:
        """(the kernel of `func`, whether it was lowered now rather than found)."""
        types = _param_types(func)
        bucket = self._cache.setdefault((structural_hash(func), types), [])
        for known in bucket:
            if _param_types(known.func) == types and structural_equal(known.func, func):
                return known, False
        lowered = lower_primitive(func, self.target, name())
        bucket.append(lowered)
        return lowered, True


def _kind(target: Any) -> str:
    return target_kind(target)


def _distinct_outputs(outs: list[Tensor]) -> list[Tensor]:
    """Outputs as distinct compute ops: an input or a repeated tensor gets a copy stage."""
    seen: set[int] = set()
    result = []
    for t in outs:
        if id(t.op) in seen or not isinstance(t.op, te.ComputeOp):
            t = te.compute(t.shape, lambda *i, _t=t: _t.load(i), name=f"{t.op.name}_copy",
                           tag="injective")
        seen.add(id(t.op))
        result.append(t)
    return result
