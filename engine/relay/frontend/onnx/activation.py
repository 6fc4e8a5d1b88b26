"""ONNX activations built from elementwise Relay ops: Softplus, Softsign, HardSwish, Elu,
Selu, Celu, Mish, ThresholdedRelu, Swish, SwiGLU, and onnxruntime's com.microsoft Gelu / FastGelu
(what its transformer optimizer and some exporters emit)."""

from __future__ import annotations

import math
from collections.abc import Callable

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter

MICROSOFT = "com.microsoft"


def _consts(ctx: NodeContext) -> Callable[[float], Expr]:
    dtype = ctx.dtype(0)
    return lambda value: relay.const(value, dtype)


def softplus_expr(x: Expr, c: Callable[[float], Expr]) -> Expr:
    """log(1 + exp(x)) computed stably: max(x, 0) + log(1 + exp(-|x|))."""
    tail = relay.log(relay.add(c(1.0), relay.exp(relay.negative(relay.abs(x)))))
    return relay.add(relay.maximum(x, c(0.0)), tail)


def elu_expr(x: Expr, alpha: float, c: Callable[[float], Expr]) -> Expr:
    negative = relay.multiply(c(alpha), relay.subtract(relay.exp(x), c(1.0)))
    return relay.where(relay.greater(x, c(0.0)), x, negative)


def softsign_expr(x: Expr, c: Callable[[float], Expr]) -> Expr:
    return relay.divide(x, relay.add(c(1.0), relay.abs(x)))


@converter("Softplus")
def softplus(ctx: NodeContext) -> ConvertResult:
    return softplus_expr(ctx.input(0), _consts(ctx))


@converter("Softsign")
def softsign(ctx: NodeContext) -> ConvertResult:
    return softsign_expr(ctx.input(0), _consts(ctx))


@converter("HardSwish", since=14)
def hard_swish(ctx: NodeContext) -> ConvertResult:
    x, c = ctx.input(0), _consts(ctx)
    gate = relay.clip(relay.add(relay.multiply(x, c(1.0 / 6.0)), c(0.5)), 0.0, 1.0)
    return relay.multiply(x, gate)


@converter("Elu")
def elu(ctx: NodeContext) -> ConvertResult:
    return elu_expr(ctx.input(0), float(ctx.attr("alpha", 1.0)), _consts(ctx))


@converter("Selu")
def selu(ctx: NodeContext) -> ConvertResult:
    c = _consts(ctx)
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    return relay.multiply(c(gamma), elu_expr(ctx.input(0), alpha, c))


@converter("Celu", since=12)
def celu(ctx: NodeContext) -> ConvertResult:
    x, c = ctx.input(0), _consts(ctx)
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = relay.subtract(relay.exp(relay.divide(x, c(alpha))), c(1.0))
    negative = relay.minimum(c(0.0), relay.multiply(c(alpha), scaled))
    return relay.add(relay.maximum(c(0.0), x), negative)


@converter("Mish", since=18)
def mish(ctx: NodeContext) -> ConvertResult:
    x, c = ctx.input(0), _consts(ctx)
    return relay.multiply(x, relay.tanh(softplus_expr(x, c)))


@converter("ThresholdedRelu", since=10)
def thresholded_relu(ctx: NodeContext) -> ConvertResult:
    x, c = ctx.input(0), _consts(ctx)
    alpha = float(ctx.attr("alpha", 1.0))
    return relay.where(relay.greater(x, c(alpha)), x, c(0.0))


def swish_expr(x: Expr, alpha: float, c: Callable[[float], Expr]) -> Expr:
    """x sigmoid(alpha x): SiLU for alpha = 1."""
    gate = relay.sigmoid(x if alpha == 1.0 else relay.multiply(c(alpha), x))
    return relay.multiply(x, gate)


@converter("Swish", since=24)
def swish(ctx: NodeContext) -> ConvertResult:
    return swish_expr(ctx.input(0), float(ctx.attr("alpha", 1.0)), _consts(ctx))


@converter("SwiGLU", since=28)
def swiglu(ctx: NodeContext) -> ConvertResult:
    """Swish_alpha(A) * B; A and B have one shape (the spec allows no broadcasting)."""
    if ctx.shape(0) != ctx.shape(1):
        raise ctx.fail(f"A {ctx.shape(0)} and B {ctx.shape(1)} must have one shape")
    gated = swish_expr(ctx.input(0), float(ctx.attr("alpha", 1.0)), _consts(ctx))
    return relay.multiply(gated, ctx.input(1))


def _with_bias(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    return relay.add(x, ctx.input(1)) if ctx.has(1) else x


@converter(f"{MICROSOFT}.Gelu")
def ms_gelu(ctx: NodeContext) -> ConvertResult:
    x, c = ctx.input(0), _consts(ctx)
    erf = relay.erf(relay.multiply(x, c(0.5 ** 0.5)))
    return relay.multiply(relay.multiply(x, c(0.5)), relay.add(c(1.0), erf))


@converter(f"{MICROSOFT}.FastGelu")
def ms_fast_gelu(ctx: NodeContext) -> ConvertResult:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x = input + optional bias."""
    x, c = _with_bias(ctx), _consts(ctx)
    cube = relay.multiply(relay.multiply(x, x), x)
    inner = relay.multiply(c(math.sqrt(2.0 / math.pi)),
                           relay.add(x, relay.multiply(c(0.044715), cube)))
    return relay.multiply(relay.multiply(c(0.5), x), relay.add(c(1.0), relay.tanh(inner)))


@converter(f"{MICROSOFT}.BiasGelu")
def ms_bias_gelu(ctx: NodeContext) -> ConvertResult:
    x, c = _with_bias(ctx), _consts(ctx)
    erf = relay.erf(relay.multiply(x, c(0.5 ** 0.5)))
    return relay.multiply(relay.multiply(x, c(0.5)), relay.add(c(1.0), erf))
