"""ONNX control flow: If, Loop and Scan, as Relay writes control flow.

If becomes `relay.If` over its two branches, each converted as a sub-graph that reads
outer values directly (a condition known at import time just picks its branch, so the
branches may differ in shape). Loop and Scan become a recursive local function:

    let %loop = fn (%i, %state..., %acc..., %captured...) {
      if (<keep going>) { %loop(%i + 1, <body's next state>..., <acc with this trip's
      scan outputs appended>..., %captured...) } else { (%state..., %acc...) }
    };
    %loop(0, <initial state>..., <empty accumulators>..., <outer values>...)

The body is converted once, as a function scope (scope.py): the outer values it reads
become parameters passed along unchanged. A loop-carried value whose shape changes from
trip to trip gets `?` in the dimensions that change (found by converting the body with
the initial types, then once more with the differing dimensions made dynamic).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from engine.ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from engine.ir.span import SpanLike
from engine.ir.type import AnyDim, FuncType, TensorType, TupleType, Type
from engine.relay import op as _op
from engine.relay.expr import const
from engine.relay.frontend.common import ConversionError, as_span
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, Subgraph, converter
from engine.relay.frontend.onnx.util import norm_axis

INT64_MAX = np.iinfo(np.int64).max


# --- the recursive loop ---------------------------------------------------------------------
@dataclass(frozen=True)
class LoopParts:
    """A loop in terms of its function's parameters; `results` are some of those."""

    params: list[Var]
    inits: list[Expr]
    keep_going: Expr
    nexts: list[Expr]
    results: list[Var]


def recursive_loop(name: str, parts: LoopParts, span: SpanLike) -> Expr:
    """`let %name = fn (params) { if (keep_going) { %name(nexts) } else { results } };
    %name(inits)`: a tuple of the results' final values."""
    ret = TupleType([_annotation(p) for p in parts.results])
    loop = Var(name, FuncType([_annotation(p) for p in parts.params], ret), span=span)
    body = If(parts.keep_going, Call(loop, tuple(parts.nexts)), Tuple(tuple(parts.results)))
    func = Function(tuple(parts.params), body, ret_type=ret)
    return Let(loop, func, Call(loop, tuple(parts.inits)))


def _annotation(var: Var) -> Type:
    assert var.type_annotation is not None
    return var.type_annotation


def generalize(first: Type, later: Type) -> Type | None:
    """The type covering both (dims that differ become `?`); None when none does (another
    dtype or rank, a sequence of another length)."""
    if first == later:
        return first
    if isinstance(first, TensorType) and isinstance(later, TensorType):
        if first.dtype != later.dtype or first.ndim != later.ndim:
            return None
        return TensorType([a if a == b else AnyDim() for a, b in zip(first.shape, later.shape)],
                          first.dtype)
    if isinstance(first, TupleType) and isinstance(later, TupleType) \
            and len(first.fields) == len(later.fields):
        fields = [generalize(a, b) for a, b in zip(first.fields, later.fields)]
        return None if any(f is None for f in fields) else TupleType(fields)  # type: ignore[arg-type]
    return None


def refined(ty: Type, info: onnx.ValueInfoProto) -> Type:
    """`ty` with the dims it leaves unknown taken from the sub-graph's declared output
    (a body computing its slice bounds at run time still declares `float[1]`)."""
    declared = info.type.tensor_type.shape.dim if info.type.HasField("tensor_type") else []
    if not isinstance(ty, TensorType) or len(declared) != ty.ndim:
        return ty
    return TensorType([d.dim_value if isinstance(a, AnyDim) and d.HasField("dim_value") else a
                       for a, d in zip(ty.shape, declared)], ty.dtype)


def carried_body(ctx: NodeContext, body: onnx.GraphProto, lead: list[Var], types: list[Type],
                 tail: Callable[[], list[Expr]], first_out: int) -> tuple[list[Var], Subgraph]:
    """Convert a loop body whose inputs are `lead` vars, then one var per loop-carried value
    (of `types`), then `tail()`; its outputs from `first_out` on are the carried values'
    next ones. Converted again with `?` dims where a carried value's shape changes."""
    span = as_span(ctx.name)
    for _ in range(2):
        state = [Var(info.name, ty, span=span)
                 for info, ty in zip(body.input[len(lead):], types)]
        sub = ctx.importer.import_subgraph(body, [*lead, *state, *tail()], True, ctx.name)
        nexts = sub.outputs[first_out:first_out + len(types)]
        if any(n is None for n in nexts):
            raise ctx.fail("a loop-carried value of the body is an empty optional")
        infos = body.output[first_out:]
        wider = [generalize(t, refined(ctx.importer.type_of(n), info))  # type: ignore[arg-type]
                 for t, n, info in zip(types, nexts, infos)]
        for info, ty in zip(infos, wider):
            if ty is None:
                raise ctx.fail(f"loop-carried value {info.name!r} changes its dtype, rank or "
                               "sequence length from one iteration to the next")
        if wider == types:
            return state, sub
        types = wider  # type: ignore[assignment]
    raise ctx.fail("the loop-carried shapes do not settle")


def _scalar(ctx: NodeContext, expr: Expr, dtype: str) -> Expr:
    """`expr` as a scalar of `dtype` (ONNX allows a 1-element tensor for M and cond)."""
    ty = ctx.importer.type_of(expr)
    if isinstance(ty, TensorType) and ty.ndim:
        expr = _op.reshape(expr, ())
    if isinstance(ty, TensorType) and ty.dtype != dtype:
        expr = _op.cast(expr, dtype)
    return expr


def _accumulator(ctx: NodeContext, value: Expr, axis: int, info: onnx.ValueInfoProto
                 ) -> tuple[TensorType, Expr, int]:
    """The accumulator of per-iteration output `info`: its type (`?` at `axis`), its empty
    first value, and the axis normalized."""
    ty = refined(ctx.importer.type_of(value), info)
    if not isinstance(ty, TensorType) or not ty.is_static:
        raise ctx.fail(f"scan output {info.name!r} needs a static shape to be stacked, it "
                       f"has {ty}")
    axis = norm_axis(axis, ty.ndim + 1)
    shape = list(ty.concrete_shape)
    acc = TensorType([*shape[:axis], AnyDim(), *shape[axis:]], ty.dtype)
    return acc, _op.zeros(tuple([*shape[:axis], 0, *shape[axis:]]), ty.dtype), axis


def _append(acc: Expr, value: Expr, axis: int, reverse: bool) -> Expr:
    item = _op.expand_dims(value, axis)
    return _op.concatenate([item, acc] if reverse else [acc, item], axis)


def _i64(value: int) -> Expr:
    return const(np.int64(value), "int64")


def _unpack(result: Expr, count: int) -> list[Expr]:
    return [TupleGetItem(result, k) for k in range(count)]


# --- If ----------------------------------------------------------------------------------
@converter("If", since=1)
def if_(ctx: NodeContext) -> ConvertResult:
    branches = ctx.graph("then_branch"), ctx.graph("else_branch")
    known = ctx.value(0)
    if known is not None:  # the condition is known: the other branch never runs
        chosen = branches[0] if bool(np.asarray(known).reshape(-1)[0]) else branches[1]
        return _outputs(ctx.importer.import_subgraph(chosen, [], False, ctx.name).outputs)
    cond = _scalar(ctx, ctx.input(0), "bool")
    then, other = (ctx.importer.import_subgraph(g, [], False, ctx.name).outputs
                   for g in branches)
    if len(then) != len(other):
        raise ctx.fail(f"the branches give {len(then)} and {len(other)} outputs")
    for name, a, b in zip(ctx.output_names, then, other):
        _check_branch_types(ctx, name, a, b)
    if len(then) == 1:
        return [If(cond, then[0], other[0])]  # type: ignore[arg-type]
    ite = If(cond, Tuple(tuple(then)), Tuple(tuple(other)))  # type: ignore[arg-type]
    return _unpack(ite, len(then))


def _check_branch_types(ctx: NodeContext, name: str, a: Expr | None, b: Expr | None) -> None:
    if a is None or b is None:
        raise ctx.fail(f"output {name!r} is an empty optional in one branch only; which one "
                       "runs is decided at run time")
    ta, tb = ctx.importer.type_of(a), ctx.importer.type_of(b)
    wider = generalize(ta, tb)
    if wider is None or wider != ta or wider != tb:
        raise ctx.fail(f"output {name!r} is {ta} in the then branch and {tb} in the else "
                       "branch; which one runs is decided at run time")


def _outputs(values: Sequence[Expr | None]) -> list[object]:
    from engine.relay.frontend.onnx.scope import EMPTY_OPTIONAL

    return [EMPTY_OPTIONAL if v is None else v for v in values]


# --- Loop ----------------------------------------------------------------------------------
UNROLL_LIMIT = 64
"""The most trips a Loop is unrolled to when it cannot be a function (a sequence that grows
by one element per trip has another type on every trip)."""


@converter("Loop", since=1)
def loop(ctx: NodeContext) -> ConvertResult:
    try:
        return loop_function(ctx)
    except ConversionError as err:
        trips = ctx.value(0)
        cond = ctx.value(1) if ctx.has(1) else np.array(True)
        if trips is None or cond is None or int(np.asarray(trips).reshape(-1)[0]) > UNROLL_LIMIT:
            raise
        return unrolled_loop(ctx, int(np.asarray(trips).reshape(-1)[0]),
                             bool(np.asarray(cond).reshape(-1)[0]), err)


def unrolled_loop(ctx: NodeContext, trips: int, cond: bool, why: ConversionError
                  ) -> list[object]:
    """One copy of the body per trip, while the condition (which each copy must compute at
    import time) holds."""
    body = ctx.graph("body")
    state = ctx.inputs[2:]
    scans: list[list[Expr]] = [[] for _ in body.output[1 + len(state):]]
    for k in range(trips):
        if not cond:
            break
        sub = ctx.importer.import_subgraph(
            body, [_i64(k), const(np.bool_(True)), *state], False, ctx.name)
        if not isinstance(sub.outputs[0], Constant):
            raise ctx.fail(f"{why}; and it cannot be unrolled (the loop condition is "
                           "computed at run time)")
        cond = bool(sub.outputs[0].data.numpy().reshape(-1)[0])
        state = sub.outputs[1:1 + len(state)]
        for column, value in zip(scans, sub.outputs[1 + len(state):]):
            column.append(value)  # type: ignore[arg-type]
    if scans and not scans[0]:
        raise ctx.fail(f"{why}; unrolled, it runs no trip, so its scan outputs have no "
                       "element type")
    return [*_outputs(state), *(_op.stack(column, 0) for column in scans)]


def loop_function(ctx: NodeContext) -> list[Expr]:
    body = ctx.graph("body")
    carried: list[Expr] = []
    for index in range(2, len(ctx.inputs)):
        if not ctx.has(index):
            raise ctx.fail(f"loop-carried input {ctx.input_names[index]!r} is an empty "
                           "optional (or missing)")
        carried.append(ctx.input(index))
    span = as_span(ctx.name)
    i = Var("iter", TensorType((), "int64"), span=span)
    cond = Var("cond", TensorType((), "bool"), span=span)
    types = [ctx.importer.type_of(v) for v in carried]
    state, sub = carried_body(ctx, body, [i, cond], types, list, 1)
    outs = sub.outputs
    scans = outs[1 + len(carried):]
    trips = Var("trips", TensorType((), "int64"), span=span)
    accs, empties, nexts_acc = [], [], []
    for info, value in zip(body.output[1 + len(carried):], scans):
        if value is None:
            raise ctx.fail(f"scan output {info.name!r} is an empty optional")
        acc_ty, empty, axis = _accumulator(ctx, value, 0, info)
        acc = Var(f"{info.name}_acc", acc_ty, span=span)
        accs.append(acc)
        empties.append(empty)
        nexts_acc.append(_append(acc, value, axis, False))
    captured = [var for var, _ in sub.captures]
    first_trips = _scalar(ctx, ctx.input(0), "int64") if ctx.has(0) else _i64(INT64_MAX)
    first_cond = _scalar(ctx, ctx.input(1), "bool") if ctx.has(1) else const(True)
    parts = LoopParts(
        params=[i, trips, cond, *state, *accs, *captured],
        inits=[_i64(0), first_trips, first_cond, *carried, *empties,
               *(value for _, value in sub.captures)],
        keep_going=_op.logical_and(_op.less(i, trips), cond),
        nexts=[i + _i64(1), trips, _scalar(ctx, outs[0], "bool"),  # type: ignore[arg-type]
               *outs[1:1 + len(carried)], *nexts_acc, *captured],  # type: ignore[list-item]
        results=[*state, *accs])
    result = recursive_loop(f"{ctx.name}_loop", parts, span)
    return _unpack(result, len(state) + len(accs))


# --- Scan ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScanSpec:
    """The per-input and per-output axes and directions of a Scan."""

    in_axes: list[int]
    in_reverse: list[bool]
    out_axes: list[int]
    out_reverse: list[bool]


def scan_loop(ctx: NodeContext, body: onnx.GraphProto, states: list[Expr], xs: list[Expr],
              spec: ScanSpec) -> list[Expr]:
    """The final states, then the stacked scan outputs, of scanning `xs` with `body`."""
    span = as_span(ctx.name)
    x_types = [ctx.importer.type_of(x) for x in xs]
    axes = [norm_axis(a, t.ndim) for a, t in zip(spec.in_axes, x_types)]  # type: ignore[attr-defined]
    lengths = {t.shape[a] for t, a in zip(x_types, axes)}  # type: ignore[attr-defined]
    if len(lengths) != 1 or not isinstance(next(iter(lengths)), int):
        raise ctx.fail(f"the scan inputs' lengths along the scan axes must be one static "
                       f"number, they are {sorted(map(str, lengths))}")
    steps = int(next(iter(lengths)))
    i = Var("iter", TensorType((), "int64"), span=span)
    x_vars = [Var(f"scan_input{k}", t, span=span) for k, t in enumerate(x_types)]

    def elements() -> list[Expr]:
        last = _i64(steps - 1)
        return [_op.take(x, last - i if reverse else i, axis=axis)
                for x, axis, reverse in zip(x_vars, axes, spec.in_reverse)]

    types = [ctx.importer.type_of(s) for s in states]
    state, sub = carried_body(ctx, body, [], types, elements, 0)
    outs = sub.outputs[len(states):]
    accs, empties, nexts_acc, out_axes = [], [], [], []
    for k, (info, value) in enumerate(zip(body.output[len(states):], outs)):
        axis = spec.out_axes[k] if k < len(spec.out_axes) else 0
        reverse = spec.out_reverse[k] if k < len(spec.out_reverse) else False
        acc_ty, empty, axis = _accumulator(ctx, value, axis, info)  # type: ignore[arg-type]
        acc = Var(f"{info.name}_acc", acc_ty, span=span)
        accs.append(acc)
        empties.append(empty)
        nexts_acc.append(_append(acc, value, axis, reverse))  # type: ignore[arg-type]
        out_axes.append((axis, acc_ty))
    captured = [var for var, _ in sub.captures]
    parts = LoopParts(
        params=[i, *state, *accs, *x_vars, *captured],
        inits=[_i64(0), *states, *empties, *xs, *(v for _, v in sub.captures)],
        keep_going=_op.less(i, _i64(steps)),
        nexts=[i + _i64(1), *sub.outputs[:len(states)], *nexts_acc,  # type: ignore[list-item]
               *x_vars, *captured],
        results=[*state, *accs])
    result = _unpack(recursive_loop(f"{ctx.name}_loop", parts, span), len(state) + len(accs))
    stacked = [_op.reshape(r, tuple(steps if isinstance(d, AnyDim) else d for d in ty.shape))
               for r, (_, ty) in zip(result[len(state):], out_axes)]
    return [*result[:len(state)], *stacked]


def _spec(ctx: NodeContext, count_in: int, count_out: int, in_dirs_key: str) -> ScanSpec:
    return ScanSpec([int(a) for a in ctx.attr("scan_input_axes", [0] * count_in)],
                    [bool(d) for d in ctx.attr(in_dirs_key, [0] * count_in)],
                    [int(a) for a in ctx.attr("scan_output_axes", [])],
                    [bool(d) for d in ctx.attr("scan_output_directions", [])])


@converter("Scan", since=9)
def scan(ctx: NodeContext) -> ConvertResult:
    body = ctx.graph("body")
    count = int(ctx.attr("num_scan_inputs"))
    n_state = len(ctx.inputs) - count
    inputs = [ctx.input(k) for k in range(len(ctx.inputs))]
    spec = _spec(ctx, count, len(body.output) - n_state, "scan_input_directions")
    return scan_loop(ctx, body, inputs[:n_state], inputs[n_state:], spec)


@converter("Scan", since=8)
def scan_batched(ctx: NodeContext) -> ConvertResult:
    """Opset 8: every input has a batch axis first (scanned along axis 1): one scan per
    batch entry, stacked. Per-entry lengths (`sequence_lens`) must be the full length."""
    body = ctx.graph("body")
    count = int(ctx.attr("num_scan_inputs"))
    inputs = [ctx.input(k) for k in range(1, len(ctx.inputs))]
    n_state = len(inputs) - count
    batch = ctx.static_shape(1)[0]
    if ctx.has(0):
        lens = ctx.const(0, "sequence_lens")
        full = ctx.static_shape(1 + n_state)[1]
        if not np.all(np.asarray(lens) == full):
            raise ctx.fail(f"sequence_lens {lens.tolist()} shorter than the scan length "
                           f"{full} are not supported")
    reverse = [bool(d) for d in ctx.attr("directions", [0] * count)]
    spec = ScanSpec([0] * count, reverse, [], [])
    per_batch = [scan_loop(ctx, body, [_op.take(x, _i64(b), axis=0)
                                       for x in inputs[:n_state]],
                           [_op.take(x, _i64(b), axis=0) for x in inputs[n_state:]],
                           spec)
                 for b in range(batch)]
    return [_op.stack([outs[k] for outs in per_batch], 0) for k in range(len(body.output))]
