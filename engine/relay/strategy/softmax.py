"""Row-wise normalizations: nn.softmax, nn.log_softmax, nn.layer_norm.

Each is a few stages over the normalized axis (max, exp, sum, divide; or mean,
variance, normalize). The x86 schedule (topi.x86 schedule_softmax) fuses the
loops before the axis into one parallel loop and computes every intermediate
stage inside it, one row at a time; the last axis of the output is vectorized.
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
    norm_axis,
    register_strategy,
)
from engine.relay.strategy.reduce import reduce_tensor
from engine.relay.strategy.schedules import (
    compute_stages,
    inline_injective,
    schedule_generic_llvm,
    schedule_reduce_cuda,
    vectorize_inner,
)
from engine.te import Schedule, Tensor
from engine.tir import expr as E
from engine.tir import intrin

ROWWISE_TAG = "rowwise"


def _row(i: list[Any], axis: int) -> list[Any]:
    return [0 if a == axis else v for a, v in enumerate(i)]


def _stage(shape: list[int], fn: Any, name: str) -> Tensor:
    return te.compute(shape, fn, name=name, tag=ROWWISE_TAG, attrs={})


def softmax_compute(log: bool) -> Any:
    def compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        x = inputs[0]
        shape = list(dims(x))
        axis = norm_axis(attrs.get("axis", -1), x.ndim)
        mx = reduce_tensor(shape, [axis], True, te.max, lambda i: x.load(i), "T_softmax_maxelem")
        mx.op.attrs  # noqa: B018  (kept as a comm_reduce stage)

        def shifted(i: list[Any]) -> E.PrimExpr:
            return x.load(i) - mx.load(_row(i, axis))
        if log:
            total = reduce_tensor(shape, [axis], True, te.sum, lambda i: intrin.exp(shifted(i)),
                                  "T_softmax_expsum")
            return [_stage(shape, lambda *i: shifted(list(i)) - intrin.log(
                total.load(_row(list(i), axis))), "T_log_softmax_norm")]
        expo = te.compute(shape, lambda *i: intrin.exp(shifted(list(i))), name="T_softmax_exp",
                          tag=ROWWISE_TAG)
        total = reduce_tensor(shape, [axis], True, te.sum, lambda i: expo.load(i),
                              "T_softmax_expsum")
        return [_stage(shape, lambda *i: expo.load(i) / total.load(_row(list(i), axis)),
                       "T_softmax_norm")]
    return compute


def layer_norm_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    x, gamma, beta = inputs
    shape = list(dims(x))
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    n = E.make_const(shape[axis], x.dtype)
    total = reduce_tensor(shape, [axis], True, te.sum, lambda i: x.load(i), "T_layer_norm_sum")
    mean = _stage(shape[:axis] + [1] + shape[axis + 1:], lambda *i: total.load(i) / n,
                  "T_layer_norm_mean")

    def dev(i: list[Any]) -> E.PrimExpr:
        return x.load(i) - mean.load(_row(i, axis))
    sq = reduce_tensor(shape, [axis], True, te.sum, lambda i: dev(i) * dev(i), "T_layer_norm_sq")
    eps = E.make_const(float(attrs.get("epsilon", 1e-5)), x.dtype)

    def norm(*i: Any) -> E.PrimExpr:
        row = _row(list(i), axis)
        value = dev(list(i)) * intrin.rsqrt(sq.load(row) / n + eps)
        if attrs.get("scale", True):
            value = value * gamma.load((i[axis],))
        if attrs.get("center", True):
            value = value + beta.load((i[axis],))
        return value
    return [_stage(shape, norm, "T_layer_norm")]


def schedule_rowwise_llvm(s: Schedule, outs: list[Tensor], anchor: list[Tensor]) -> None:
    """Intermediate stages computed per row inside the parallel loop over the rows."""
    inline_injective(s, outs)
    out = outs[0]
    st = s[out]
    axes = list(st.op.axis)
    lead = _leading_axes(s, axes)
    if not lead:
        schedule_generic_llvm(s, outs, anchor)
        return
    fused = st.fuse(*lead) if len(lead) > 1 else lead[0]
    st.parallel(fused)
    if len(lead) < len(axes):
        vectorize_inner(st, axes[-1])
    for stage in reversed(compute_stages(s)):
        if stage is st or stage.attach_type != "root" or stage.is_output:
            continue
        stage.compute_at(st, fused)
    for stage in compute_stages(s):
        if stage.attach_type == "scope" and not stage.op.reduce_axis and stage.op.axis:
            vectorize_inner(stage, stage.op.axis[-1])


def _leading_axes(s: Schedule, axes: list[Any]) -> list[Any]:
    """The output axes before the first one a row-wise reduction collapses."""
    collapsed = len(axes)
    for stage in compute_stages(s):
        if stage.op.reduce_axis and len(stage.op.axis) == len(axes):
            for k, iv in enumerate(stage.op.axis):
                if _extent(iv) == "1" and _extent(axes[k]) != "1":
                    collapsed = min(collapsed, k)
    return axes[:collapsed]


def register() -> None:
    schedules = {"llvm": schedule_rowwise_llvm, "cuda": schedule_reduce_cuda}
    register_strategy("nn.softmax", OpStrategy("softmax", softmax_compute(False), schedules))
    register_strategy("nn.log_softmax",
                      OpStrategy("log_softmax", softmax_compute(True), schedules))
    register_strategy("nn.layer_norm", OpStrategy("layer_norm", layer_norm_compute, schedules))


__all__ = ["INJECTIVE", "register"]


def _extent(iv: Any) -> str:
    return str(iv.dom.extent) if iv.dom is not None else "?"
