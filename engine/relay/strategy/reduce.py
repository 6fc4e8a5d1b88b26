"""Reductions: sum, max, min, prod, mean, all, any, argmax, argmin, variance.

`reduce_tensor` builds one comm-reduce stage over chosen axes (kept as size-1
axes with keepdims); mean and variance divide in a following injective stage,
argmax/argmin find the extreme value, then its first (or last) index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import engine.te as te
from engine.ir.attrs import Attrs
from engine.ir.type import Type
from engine.relay.op.reduce import reduce_axes
from engine.relay.strategy.base import (
    COMM_REDUCE,
    ELEMWISE,
    OpStrategy,
    dims,
    out_types,
    register_strategy,
)
from engine.relay.strategy.schedules import schedule_generic_llvm, schedule_reduce_cuda
from engine.te import Reducer, Tensor
from engine.tir import expr as E
from engine.tir import intrin

Body = Callable[[list[Any]], E.PrimExpr]

prod = te.comm_reducer(lambda x, y: x * y, lambda t: E.make_const(1, t), name="prod")
all_ = te.comm_reducer(lambda x, y: E.And(a=x, b=y), lambda t: E.make_const(True, t), "all")
any_ = te.comm_reducer(lambda x, y: E.Or(a=x, b=y), lambda t: E.make_const(False, t), "any")


def reduce_tensor(shape: Sequence[int], axes: Sequence[int], keepdims: bool, reducer: Reducer,
                  source: Body, name: str, where: Body | None = None) -> Tensor:
    """out[kept...] = reducer over the `axes` of source(full index)."""
    raxes = [te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes]
    out_shape = [1 if a in axes else d for a, d in enumerate(shape)] if keepdims else \
        [d for a, d in enumerate(shape) if a not in axes]

    def full_index(idx: Sequence[Any]) -> list[Any]:
        it = iter(idx)
        out: list[Any] = []
        for a in range(len(shape)):
            if a in axes:
                if keepdims:
                    next(it)
                out.append(raxes[list(axes).index(a)])
            else:
                out.append(next(it))
        return out

    def body(*idx: Any) -> E.PrimExpr:
        full = full_index(idx)
        cond = where(full) if where is not None else None
        return reducer(source(full), axis=raxes, where=cond)
    return te.compute(out_shape, body, name=name, tag=COMM_REDUCE)


def _axes(attrs: Attrs, data: Tensor) -> tuple[int, ...]:
    return reduce_axes(attrs, data.ndim)


def _simple(reducer: Reducer, name: str) -> Callable[..., list[Tensor]]:
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        data = inputs[0]
        return [reduce_tensor(dims(data), _axes(attrs, data), bool(attrs.get("keepdims")),
                              reducer, lambda i: data.load(i), f"{data.op.name}_{name}")]
    return compute


def _count(data: Tensor, axes: Sequence[int]) -> int:
    count = 1
    for a in axes:
        count *= dims(data)[a]
    return count


def _divided(total: Tensor, count: int, dtype: str, name: str) -> Tensor:
    return te.compute(total.shape, lambda *i: E.cast(total.load(i) / E.make_const(
        max(count, 1), total.dtype), dtype), name=name, tag=ELEMWISE)


def mean_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    axes = _axes(attrs, data)
    total = reduce_tensor(dims(data), axes, bool(attrs.get("keepdims")), te.sum,
                          lambda i: data.load(i), f"{data.op.name}_red")
    return [_divided(total, _count(data, axes), out_types(out_type)[0].dtype, "T_divide")]


def variance_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data, mean = inputs
    axes = _axes(attrs, data)

    def dev(i: list[Any]) -> E.PrimExpr:
        d = data.load(i) - mean.load([0 if dims(mean)[a] == 1 else v for a, v in enumerate(i)])
        return d * d
    total = reduce_tensor(dims(data), axes, bool(attrs.get("keepdims")), te.sum, dev,
                          f"{data.op.name}_sq_red")
    count = _count(data, axes) - (1 if attrs.get("unbiased") else 0)
    return [_divided(total, count, out_types(out_type)[0].dtype, "T_divide")]


def _arg(is_max: bool) -> Callable[..., list[Tensor]]:
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        data = inputs[0]
        axes, keep = _axes(attrs, data), bool(attrs.get("keepdims"))
        shape = dims(data)
        best = reduce_tensor(shape, axes, True, te.max if is_max else te.min,
                             lambda i: data.load(i), "T_extreme")
        ty = out_types(out_type)[0]
        last = bool(attrs.get("select_last_index"))

        def flat(i: list[Any]) -> E.PrimExpr:
            index: E.PrimExpr = E.make_const(0, ty.dtype)
            for a in axes:
                index = index * shape[a] + E.cast(i[a], ty.dtype)
            hit = data.load(i) == best.load([0 if a in axes else v for a, v in enumerate(i)])
            miss = intrin.min_value(ty.dtype) if last else intrin.max_value(ty.dtype)
            return te.Select(hit, index, miss)
        return [reduce_tensor(shape, axes, keep, te.max if last else te.min, flat, "T_arg")]
    return compute


def register() -> None:
    schedules = {"llvm": schedule_generic_llvm, "cuda": schedule_reduce_cuda}
    table = {"sum": _simple(te.sum, "sum"), "max": _simple(te.max, "max"),
             "min": _simple(te.min, "min"), "prod": _simple(prod, "prod"),
             "all": _simple(all_, "all"), "any": _simple(any_, "any"), "mean": mean_compute,
             "variance": variance_compute, "argmax": _arg(True), "argmin": _arg(False)}
    for name, compute in table.items():
        register_strategy(name, OpStrategy(name, compute, schedules))
