"""FoldScaleAxis: fold per-channel scales into the weights of conv2d / dense (TVM's
`relay.transform.FoldScaleAxis`, `BackwardFoldScaleAxis`, `ForwardFoldScaleAxis`).

`FoldScaleAxis()` is, as in TVM, `Sequential([BackwardFoldScaleAxis(),
ForwardFoldScaleAxis(), FoldConstant()])` at opt_level 3: the backward half
folds the multiply after a conv (a batch norm unpacked by SimplifyInference),
the forward half the multiply before one, and FoldConstant turns each scaled
weight into one constant, whose span names the conv and the layer whose scale
it absorbed. The statistic `folded` counts the scales folded.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.ir.expr import Function
from engine.ir.module import IRModule
from engine.relay.transform._rewrite import ensure_typed
from engine.relay.transform.fold_constant import FoldConstant
from engine.relay.transform.fold_scale_axis_backward import backward_fold_scale_axis
from engine.relay.transform.fold_scale_axis_forward import forward_fold_scale_axis
from engine.relay.transform.pass_infra import function_pass
from engine.transform import Pass, PassContext, Sequential, register_pass

Folder = Callable[[Function], tuple[Function, int]]


def _fold_pass(folder: Folder) -> Pass:
    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new, count = folder(ensure_typed(func, mod))
        ctx.add_stat("folded", count)
        return new

    return function_pass(transform, opt_level=3, required=["InferType"])


@register_pass
def BackwardFoldScaleAxis() -> Pass:  # TVM's name
    """Fold the per-channel multiply after a conv2d / dense into its weight."""
    return _fold_pass(backward_fold_scale_axis)


@register_pass
def ForwardFoldScaleAxis() -> Pass:  # TVM's name
    """Fold the per-channel multiply before a conv2d / dense into its weight."""
    return _fold_pass(forward_fold_scale_axis)


@register_pass
def FoldScaleAxis() -> Pass:  # TVM's name
    """Backward, then forward folding, then FoldConstant (TVM's composition)."""
    return Sequential([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(), FoldConstant()],
                      opt_level=3)


__all__ = ["BackwardFoldScaleAxis", "FoldScaleAxis", "ForwardFoldScaleAxis"]
