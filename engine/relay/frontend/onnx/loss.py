"""ONNX losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, through TVM's
`nn.nll_loss` (as TVM's ONNX frontend converts them)."""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter

NO_IGNORE = -100  # TVM's default ignore_index; class indices are never negative


def _nll(ctx: NodeContext, log_probs: Expr) -> Expr:
    weights = ctx.input(2) if ctx.has(2) else relay.const(
        np.ones(ctx.static_shape(0)[1], dtype=ctx.dtype(0)))
    return relay.nn.nll_loss(log_probs, ctx.input(1), weights,
                             reduction=str(ctx.attr("reduction", "mean")),
                             ignore_index=int(ctx.attr("ignore_index", NO_IGNORE)))


@converter("NegativeLogLikelihoodLoss", since=12)
def negative_log_likelihood_loss(ctx: NodeContext) -> ConvertResult:
    return _nll(ctx, ctx.input(0))


@converter("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(ctx: NodeContext) -> ConvertResult:
    log_probs = relay.nn.log_softmax(ctx.input(0), axis=1)
    return [_nll(ctx, log_probs), log_probs]
