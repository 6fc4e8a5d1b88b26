"""Losses: nll_loss (TVM's `relay.nn.nll_loss`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, check_ndim, tensor_arg, type_str
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

NLL_KEY = "relay.attrs.NLLLossAttrs"
REDUCTIONS = ("mean", "sum", "none")


def _nll_loss_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """predictions (N, C, d1, ...), targets (N, d1, ...), weights (C,)."""
    check_arity(arg_types, 3)
    pred, target, weights = (tensor_arg(arg_types, i) for i in range(3))
    if pred.ndim < 2:
        raise TypeRelationError("needs a class axis", arg=0, expected="(N, C, ...)",
                                actual=type_str(pred))
    check_ndim(target, 1, pred.ndim - 1)
    check_ndim(weights, 2, 1)
    check_dim(weights.shape[0], pred.shape[1], 2, "length (the class count)", weights)
    for i, (t, p) in enumerate(zip(target.shape, (pred.shape[0], *pred.shape[2:]))):
        check_dim(t, p, 1, f"dim {i}", target)
    if target.dtype.startswith("float"):
        raise TypeRelationError("must hold integer class indices", arg=1, expected="an int tensor",
                                actual=type_str(target))
    if attrs.reduction == "none":
        return TensorType(target.shape, pred.dtype)
    return TensorType((), pred.dtype)


def _nll_loss_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    pred, target, weights = xs
    ignored = target == int(attrs.ignore_index)
    safe = np.where(ignored, 0, target).astype(np.int64)
    picked = np.take_along_axis(pred, np.expand_dims(safe, 1), axis=1).squeeze(1)
    w = np.where(ignored, 0, np.take(weights, safe)).astype(pred.dtype)
    loss = -picked * w
    if attrs.reduction == "sum":
        return np.asarray(loss.sum(), dtype=pred.dtype)
    if attrs.reduction == "mean":
        return np.asarray(loss.sum() / w.sum(), dtype=pred.dtype)
    return loss.astype(pred.dtype)


define_op("nn.nll_loss", ("predictions", "targets", "weights"), _nll_loss_rel, OPAQUE,
          _nll_loss_compute, attrs_type_key=NLL_KEY)


def nll_loss(predictions: Expr, targets: Expr, weights: Expr, reduction: str = "mean",
             ignore_index: int = -100) -> Call:
    """Negative log likelihood: -predictions[n, targets[n, ...], ...] * weights[target],
    summed, averaged over the weights of the counted targets (`mean`), or kept (`none`);
    targets equal to `ignore_index` count zero."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return make_call("nn.nll_loss", (predictions, targets, weights),
                     {"reduction": reduction, "ignore_index": int(ignore_index)}, NLL_KEY)
