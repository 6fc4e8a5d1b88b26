"""2-D pooling (max/avg, global, adaptive) in any layout with H and W, and TVM's x86
pool schedule: batch and channel loops fused and parallel, the window loops inside
the width tile, the width tile vectorized."""

from __future__ import annotations

from typing import Any, cast

import engine.te as te
from engine.ir.attrs import Attrs
from engine.ir.type import Type
from engine.relay.op.nn._nd import out_len
from engine.relay.strategy.base import (
    ELEMWISE,
    OpStrategy,
    dims,
    out_types,
    register_strategy,
    static_shape,
)
from engine.relay.strategy.conv import pad_tensor
from engine.relay.strategy.schedules import (
    best_factor,
    const_extent,
    injective_llvm,
    inline_injective,
    schedule_generic_llvm,
    schedule_reduce_cuda,
)
from engine.te import Schedule, Tensor
from engine.tir import expr as E
from engine.tir import intrin

POOL_TAG = "pool"


def _window(attrs: Attrs, h: int, w: int) -> tuple[list[int], list[int], int, int]:
    """(pads before, pads after grown for ceil_mode) over (H, W), and the output size."""
    top, left, bottom, right = (int(p) for p in attrs.padding)
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    ceil = bool(attrs.get("ceil_mode"))
    oh = cast(int, out_len(h, kh, sh, dh, top, bottom, ceil))
    ow = cast(int, out_len(w, kw, sw, dw, left, right, ceil))
    bottom = max(bottom, (oh - 1) * sh + dh * (kh - 1) + 1 - h - top)
    right = max(right, (ow - 1) * sw + dw * (kw - 1) + 1 - w - left)
    return [top, left], [bottom, right], oh, ow


def _count_1d(o: Any, k: int, s: int, d: int, lo: int, hi: int) -> E.PrimExpr:
    """How many window taps of output position `o` fall in [lo, hi)."""
    count: E.PrimExpr = E.make_const(0, "int32")
    for r in range(k):
        pos = o * s + r * d
        count = count + te.Select(te.all(pos >= lo, pos < hi), E.make_const(1, "int32"),
                                  E.make_const(0, "int32"))
    return count


def pool2d_compute(kind: str) -> Any:
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        data = inputs[0]
        layout = str(attrs.layout)
        hpos, wpos = layout.index("H"), layout.index("W")
        h, w = dims(data)[hpos], dims(data)[wpos]
        (lo_h, lo_w), (hi_h, hi_w), _, _ = _window(attrs, h, w)
        before = [{hpos: lo_h, wpos: lo_w}.get(a, 0) for a in range(data.ndim)]
        after = [{hpos: hi_h, wpos: hi_w}.get(a, 0) for a in range(data.ndim)]
        low = intrin.min_value(data.dtype)
        padded = pad_tensor(data, before, after, cast(Any, low).value if kind == "max" else 0.0)
        (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
        ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")
        reducer = te.max if kind == "max" else te.sum

        def body(*idx: Any) -> E.PrimExpr:
            where = list(idx)
            where[hpos], where[wpos] = idx[hpos] * sh + ry * dh, idx[wpos] * sw + rx * dw
            return reducer(padded.load(where), axis=[ry, rx])
        ty = out_types(out_type)[0]
        pool = te.compute(static_shape(ty), body, name=f"pool_{kind}", tag=POOL_TAG,
                          attrs={"layout": layout})
        if kind == "max":
            return [pool]
        top, left, bottom, right = (int(p) for p in attrs.padding)
        include = bool(attrs.get("count_include_pad"))
        rng_h = (0, h + top + bottom) if include else (top, top + h)
        rng_w = (0, w + left + right) if include else (left, left + w)

        def average(*idx: Any) -> E.PrimExpr:
            ch = _count_1d(idx[hpos], kh, sh, dh, *rng_h)
            cw = _count_1d(idx[wpos], kw, sw, dw, *rng_w)
            count = E.cast(intrin.max(ch * cw, E.make_const(1, "int32")), pool.dtype)
            return pool.load(idx) / count
        return [te.compute(pool.shape, average, name="pool_avg_div", tag=ELEMWISE)]
    return compute


def adaptive_compute(kind: str) -> Any:
    """Adaptive (and global: output 1x1) pooling: window [floor(o*n/out), ceil((o+1)*n/out))."""
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        data = inputs[0]
        layout = str(attrs.get("layout") or "NCHW")
        ty = out_types(out_type)[0]
        out_layout = str(attrs.get("out_layout") or layout)
        hpos, wpos = layout.index("H"), layout.index("W")
        oshape = static_shape(ty)
        h, w = dims(data)[hpos], dims(data)[wpos]
        oh, ow = oshape[out_layout.index("H")], oshape[out_layout.index("W")]
        kh, kw = -(-h // oh) + (1 if h % oh else 0), -(-w // ow) + (1 if w % ow else 0)
        ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")

        def bounds(o: Any, n: int, out: int) -> tuple[E.PrimExpr, E.PrimExpr]:
            return (o * n) // out, ((o + 1) * n + out - 1) // out

        def body(*idx: Any) -> E.PrimExpr:
            (h0, h1), (w0, w1) = bounds(idx[hpos], h, oh), bounds(idx[wpos], w, ow)
            where = list(idx)
            where[hpos] = intrin.min(h0 + ry, h - 1)
            where[wpos] = intrin.min(w0 + rx, w - 1)
            ok = te.all(h0 + ry < h1, w0 + rx < w1)
            if kind == "max":
                return te.max(data.load(where), axis=[ry, rx], where=ok)
            return te.sum(data.load(where), axis=[ry, rx], where=ok)
        pool = te.compute(oshape, body, name=f"adaptive_pool_{kind}", tag=POOL_TAG)
        if kind == "max":
            return [pool]

        def average(*idx: Any) -> E.PrimExpr:
            (h0, h1), (w0, w1) = bounds(idx[hpos], h, oh), bounds(idx[wpos], w, ow)
            return pool.load(idx) / E.cast((h1 - h0) * (w1 - w0), pool.dtype)
        return [te.compute(oshape, average, name="adaptive_pool_avg", tag=ELEMWISE)]
    return compute


def global_attrs_compute(kind: str) -> Any:
    inner = adaptive_compute(kind)
    return lambda attrs, inputs, out_type: inner(attrs, inputs, out_type)


def schedule_pool_llvm(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    pool = anchor[0]
    pool_op = next((st.origin_op for st in s.stages if st.origin_op.tag == POOL_TAG), None)
    out = outs[0]
    inline_injective(s, outs)
    if pool_op is None or out.ndim != 4 or pool_op.attrs.get("layout") != "NCHW":
        schedule_generic_llvm(s, outs, anchor)
        return
    if out.op is pool_op:
        _schedule_window(s, out)
        return
    st = s[out]
    injective_llvm(st)
    s[pool_op].compute_at(st, st.leaf_iter_vars[0])
    del pool


def _schedule_window(s: Schedule, out: Tensor) -> None:
    st = s[out]
    n, c, y, x = st.op.axis
    ry, rx = st.op.reduce_axis
    fused = st.fuse(n, c)
    st.parallel(fused)
    xo, xi = st.split(x, factor=best_factor(const_extent(x) or 1, (8, 7, 4, 2)))
    st.reorder(fused, y, xo, ry, rx, xi)
    st.vectorize(xi)


def register() -> None:
    schedules = {"llvm": schedule_pool_llvm, "cuda": schedule_reduce_cuda}
    for name, compute in (("nn.max_pool2d", pool2d_compute("max")),
                          ("nn.avg_pool2d", pool2d_compute("avg")),
                          ("nn.global_max_pool2d", global_attrs_compute("max")),
                          ("nn.global_avg_pool2d", global_attrs_compute("avg")),
                          ("nn.adaptive_max_pool2d", adaptive_compute("max")),
                          ("nn.adaptive_avg_pool2d", adaptive_compute("avg"))):
        register_strategy(name, OpStrategy(name, compute, schedules))
