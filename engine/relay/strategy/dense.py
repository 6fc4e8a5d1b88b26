"""nn.dense, nn.matmul, nn.batch_matmul: TE computes and TVM's x86 dense schedule.

x86 schedule (topi.x86 dense_nopack): the output is tiled over its last two
axes, the inner column loop vectorized, the outer tile loops fused and run in
parallel; the product is computed into a cache at the tile with the
reduction split, unrolled and kept outside the vectorized column loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import engine.te as te
from engine.ir.attrs import Attrs
from engine.ir.type import Type
from engine.relay.strategy.base import OpStrategy, dims, out_types, register_strategy, static_shape
from engine.relay.strategy.schedules import (
    best_factor,
    const_extent,
    inline_injective,
    schedule_generic_llvm,
    schedule_reduce_cuda,
)
from engine.te import Schedule, Tensor
from engine.tir import expr as E

DENSE_TAG = "dense"

Reader = Callable[[tuple[Any, ...], Any], E.PrimExpr]


def _product(name: str, out_type: Type, kdim: int, read_a: Reader, read_b: Reader) -> Tensor:
    ty = out_types(out_type)[0]
    k = te.reduce_axis((0, kdim), name="k")

    def body(*idx: Any) -> E.PrimExpr:
        a, b = read_a(idx, k), read_b(idx, k)
        return te.sum(E.cast(a, ty.dtype) * E.cast(b, ty.dtype), axis=k)
    return te.compute(static_shape(ty), body, name=name, tag=DENSE_TAG)


def dense_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data, weight = inputs
    return [_product("T_dense", out_type, dims(data)[-1],
                     lambda idx, k: data.load([*idx[:-1], k]),
                     lambda idx, k: weight.load([idx[-1], k]))]


def matmul_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    a, b = inputs
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    kdim = dims(a)[-2] if ta else dims(a)[-1]

    def read_a(idx: tuple[Any, ...], k: Any) -> E.PrimExpr:
        if a.ndim == 1:
            return a.load([k])
        return a.load([*idx[:-2], k, idx[-2]] if ta else [*idx[:-1], k])

    def read_b(idx: tuple[Any, ...], k: Any) -> E.PrimExpr:
        return b.load([idx[-1], k] if tb else [k, idx[-1]])
    return [_product("T_matmul", out_type, kdim, read_a, read_b)]


def batch_matmul_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    x, y = inputs
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    kdim = dims(x)[1] if ta else dims(x)[2]

    def batch(t: Tensor, b: Any) -> Any:
        return 0 if dims(t)[0] == 1 else b

    def read_x(idx: tuple[Any, ...], k: Any) -> E.PrimExpr:
        b, i, _ = idx
        return x.load([batch(x, b), k, i] if ta else [batch(x, b), i, k])

    def read_y(idx: tuple[Any, ...], k: Any) -> E.PrimExpr:
        b, _, j = idx
        return y.load([batch(y, b), j, k] if tb else [batch(y, b), k, j])
    return [_product("T_batch_matmul", out_type, kdim, read_x, read_y)]


def schedule_dense_llvm(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    prod = anchor[0]
    out = next((t for t in outs if dims(t) == dims(prod)), None)
    if out is None or prod.ndim < 2:
        schedule_generic_llvm(s, outs, anchor)
        return
    inline_injective(s, outs)
    cache = s.cache_write(prod, "global")
    if out.op is not prod.op:
        s[prod].compute_inline()
    _tile(s, out, cache)
    schedule_generic_llvm(s, outs, anchor)


def _tile(s: Schedule, out: Tensor, cache: Tensor) -> None:
    st = s[out]
    *lead, i, j = st.op.axis
    bi = best_factor(const_extent(i) or 1, (8, 4, 2))
    bj = best_factor(const_extent(j) or 1, (16, 8, 4, 2))
    io, jo, _, ji = st.tile(i, j, bi, bj)
    st.vectorize(ji)
    fused = st.fuse(*lead, io, jo)
    st.parallel(fused)
    cst = s[cache]
    cst.compute_at(st, fused)
    *_, ic, jc = cst.op.axis
    (kc,) = cst.op.reduce_axis
    ko, ki = cst.split(kc, factor=best_factor(const_extent(kc) or 1, (4, 2)))
    cst.reorder(ko, ic, ki, jc)
    cst.unroll(ki)
    cst.vectorize(jc)


def register() -> None:
    schedules = {"llvm": schedule_dense_llvm, "cuda": schedule_reduce_cuda}
    register_strategy("nn.dense", OpStrategy("dense", dense_compute, schedules))
    register_strategy("nn.matmul", OpStrategy("matmul", matmul_compute, schedules))
    register_strategy("nn.batch_matmul",
                      OpStrategy("batch_matmul", batch_matmul_compute, schedules))
