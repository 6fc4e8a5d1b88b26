"""nn.conv2d: a layout-generic TE compute (NCHW/NHWC data, OIHW/HWIO/... kernels,
groups and depthwise, dilation, asymmetric padding) and TVM's x86 schedule.

x86 schedule (topi.x86 conv2d, direct): the epilogue (bias, relu, ...) is
inlined into the output, the convolution is computed into a cache at the
output tile; the output channel and width loops are tiled, the channel-block
loop vectorized, the outer loops fused and run in parallel; the cache splits
its input-channel reduction and keeps the tile innermost, vectorized.
"""

from __future__ import annotations

from typing import Any

import engine.te as te
from engine.ir.attrs import Attrs
from engine.ir.type import Type
from engine.relay.strategy.base import (
    INJECTIVE,
    OpStrategy,
    dims,
    out_types,
    register_strategy,
    static_shape,
)
from engine.relay.strategy.schedules import (
    best_factor,
    const_extent,
    inline_injective,
    schedule_generic_llvm,
    schedule_reduce_cuda,
)
from engine.te import Schedule, Tensor
from engine.tir import expr as E

CONV_TAG = "conv2d"


def pad_tensor(data: Tensor, before: list[int], after: list[int], value: Any = 0.0,
               name: str = "data_pad") -> Tensor:
    """`data` padded by `before`/`after` per axis with `value` (TOPI's nn.pad)."""
    if not any(before) and not any(after):
        return data
    shape = [d + b + a for d, b, a in zip(dims(data), before, after)]

    def body(*idx: Any) -> E.PrimExpr:
        conds = []
        for i, d, b, a in zip(idx, dims(data), before, after):
            if b:
                conds.append(i >= b)
            if a:
                conds.append(i < d + b)
        inside = data.load([i - b if b else i for i, b in zip(idx, before)])
        if not conds:
            return inside
        return te.if_then_else(te.all(*conds), inside, E.make_const(value, data.dtype))
    return te.compute(shape, body, name=name, tag=f"{INJECTIVE},pad")


def _kernel_reader(weight: Tensor, layout: str, groups: int) -> Any:
    """weight value at canonical (o, i, ry, rx)."""
    if layout == "HWOI" and groups > 1 and dims(weight)[3] != 1:
        mult = dims(weight)[3]
        return lambda o, i, ry, rx: weight[ry, rx, o // mult, o % mult]
    pos = {ch: layout.index(ch) for ch in "OIHW"}

    def read(o: Any, i: Any, ry: Any, rx: Any) -> E.PrimExpr:
        by = {"O": o, "I": i, "H": ry, "W": rx}
        return weight.load([by[ch] for ch in sorted(pos, key=pos.__getitem__)])
    return read


def _kernel_dims(weight: Tensor, layout: str, groups: int) -> tuple[int, int, int, int]:
    shape = dims(weight)
    if layout == "HWOI" and groups > 1 and shape[3] != 1:
        return shape[2] * shape[3], 1, shape[0], shape[1]
    o, i, kh, kw = (shape[layout.index(ch)] for ch in "OIHW")
    return o, i, kh, kw


def conv2d_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data, weight = inputs
    layout = str(attrs.data_layout)
    groups = int(attrs.groups)
    ty = out_types(out_type)[0]
    out_layout = str(attrs.get("out_layout") or layout)
    o, ig, kh, kw = _kernel_dims(weight, str(attrs.kernel_layout), groups)
    read_w = _kernel_reader(weight, str(attrs.kernel_layout), groups)
    top, left, bottom, right = (int(p) for p in attrs.padding)
    before = [{"H": top, "W": left}.get(ch, 0) for ch in layout]
    after = [{"H": bottom, "W": right}.get(ch, 0) for ch in layout]
    padded = pad_tensor(data, before, after)
    sh, sw = (int(v) for v in attrs.strides)
    dh, dw = (int(v) for v in attrs.dilation)
    og = o // groups
    rc = te.reduce_axis((0, ig), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    acc = ty.dtype

    def body(*idx: Any) -> E.PrimExpr:
        by = dict(zip(out_layout, idx))
        f = by["C"]
        c = rc if groups == 1 else (f // og) * ig + rc
        where = {"N": by["N"], "C": c, "H": by["H"] * sh + ry * dh, "W": by["W"] * sw + rx * dw}
        x = padded.load([where[ch] for ch in layout])
        w = read_w(f, rc, ry, rx)
        return te.sum(E.cast(x, acc) * E.cast(w, acc), axis=[rc, ry, rx])
    name = "depthwise_conv2d" if groups > 1 and ig == 1 else "conv2d"
    out = te.compute(static_shape(ty), body, name=f"{name}_{out_layout.lower()}",
                     tag=CONV_TAG, attrs={"layout": out_layout})
    return [out]


def _letters(stage_axes: list[Any], layout: str) -> dict[str, Any]:
    return dict(zip(layout, stage_axes))


def schedule_conv2d_llvm(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    conv = anchor[0]
    layout = str(conv.op.attrs.get("layout", "NCHW"))
    out = next((t for t in outs if dims(t) == dims(conv)), None)
    if out is None or sorted(layout) != sorted("NCHW"):
        schedule_generic_llvm(s, outs, anchor)
        return
    inline_injective(s, outs)
    cache = s.cache_write(conv, "global")
    if out.op is not conv.op:
        s[conv].compute_inline()
    _tile_output(s, out, cache, layout)
    schedule_generic_llvm(s, outs, anchor)  # any other output: parallel + vectorized


def _tile_output(s: Schedule, out: Tensor, cache: Tensor, layout: str) -> None:
    st = s[out]
    ax = _letters(list(st.op.axis), layout)
    oc_bn = best_factor(const_extent(ax["C"]) or 1, (16, 8, 4, 2))
    ow_bn = best_factor(const_extent(ax["W"]) or 1, (8, 7, 4, 2))
    co, ci = st.split(ax["C"], factor=oc_bn)
    wo, wi = st.split(ax["W"], factor=ow_bn)
    channels_last = layout.index("C") > layout.index("W")
    inner = (wi, ci) if channels_last else (ci, wi)
    middle = (ax["H"], wo, co) if channels_last else (co, ax["H"], wo)
    st.reorder(ax["N"], *middle, *inner)
    st.vectorize(inner[1])
    st.parallel(st.fuse(ax["N"], middle[0]))
    cst = s[cache]
    cst.compute_at(st, middle[2])
    cax = _letters(list(cst.op.axis), layout)
    rc, ry, rx = cst.op.reduce_axis
    ic_bn = best_factor(const_extent(rc) or 1, (8, 4, 2))
    rco, rci = cst.split(rc, factor=ic_bn)
    c_inner = (cax["W"], cax["C"]) if channels_last else (cax["C"], cax["W"])
    cst.reorder(rco, ry, rx, rci, *c_inner)
    cst.unroll(rci)
    cst.vectorize(c_inner[1])


def register() -> None:
    strategy = OpStrategy("conv2d", conv2d_compute,
                          {"llvm": schedule_conv2d_llvm, "cuda": schedule_reduce_cuda})
    register_strategy("nn.conv2d", strategy)
