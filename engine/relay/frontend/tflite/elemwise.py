"""Element-wise TFLite operators: arithmetic, comparisons, activations (as TFLite's float
kernels compute them)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.tflite.context import OpContext, converter, fused

_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "ADD": relay.add, "SUB": relay.subtract, "MUL": relay.multiply, "DIV": relay.divide,
    "MAXIMUM": relay.maximum, "MINIMUM": relay.minimum, "POW": relay.power,
    "FLOOR_DIV": relay.floor_divide, "FLOOR_MOD": relay.floor_mod,
    "SQUARED_DIFFERENCE": lambda a, b: _square(relay.subtract(a, b)),
    "LESS": relay.less, "LESS_EQUAL": relay.less_equal, "GREATER": relay.greater,
    "GREATER_EQUAL": relay.greater_equal, "EQUAL": relay.equal, "NOT_EQUAL": relay.not_equal,
    "LOGICAL_AND": relay.logical_and, "LOGICAL_OR": relay.logical_or,
}


def _square(x: Expr) -> Expr:
    return relay.multiply(x, x)


@converter(*_BINARY)
def binary(ctx: OpContext) -> Expr:
    return fused(ctx, _BINARY[ctx.op.op_type](ctx.input(0), ctx.input(1)))


def _const(value: float) -> Expr:
    return relay.const(value, "float32")


def hard_swish(x: Expr) -> Expr:
    """x * relu6(x + 3) / 6 (TFLite's reference order)."""
    gate = relay.clip(relay.add(x, _const(3.0)), 0.0, 6.0)
    return relay.divide(relay.multiply(x, gate), _const(6.0))


def gelu(x: Expr, approximate: bool) -> Expr:
    if approximate:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = relay.multiply(_const(0.044715), relay.multiply(x, _square(x)))
        inner = relay.multiply(_const(math.sqrt(2.0 / math.pi)), relay.add(x, cube))
        return relay.multiply(relay.multiply(_const(0.5), x),
                              relay.add(_const(1.0), relay.tanh(inner)))
    erf = relay.erf(relay.multiply(x, _const(math.sqrt(0.5))))
    return relay.multiply(relay.multiply(_const(0.5), x), relay.add(_const(1.0), erf))


def _elu(x: Expr) -> Expr:
    negative = relay.subtract(relay.exp(x), _const(1.0))
    return relay.where(relay.less(x, _const(0.0)), negative, x)


_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "RELU": relay.nn.relu,
    "RELU6": lambda x: relay.clip(x, 0.0, 6.0),
    "RELU_N1_TO_1": lambda x: relay.clip(x, -1.0, 1.0),
    "RELU_0_TO_1": lambda x: relay.clip(x, 0.0, 1.0),
    "LOGISTIC": relay.sigmoid, "TANH": relay.tanh, "HARD_SWISH": hard_swish, "ELU": _elu,
    "NEG": relay.negative, "RSQRT": relay.rsqrt, "SQRT": relay.sqrt, "SQUARE": _square,
    "EXP": relay.exp, "LOG": relay.log, "ABS": relay.abs, "SIGN": relay.sign,
    "SIN": relay.sin, "COS": relay.cos, "FLOOR": relay.floor, "CEIL": relay.ceil,
    "ROUND": relay.round,  # TFLite rounds half to even, as numpy does
    "LOGICAL_NOT": relay.logical_not, "ZEROS_LIKE": relay.zeros_like,
    "ONES_LIKE": relay.ones_like,
}


@converter(*_UNARY)
def unary(ctx: OpContext) -> Expr:
    return _UNARY[ctx.op.op_type](ctx.input(0))


@converter("GELU")
def gelu_op(ctx: OpContext) -> Expr:
    return gelu(ctx.input(0), bool(ctx.option("Approximate", False)))


@converter("LEAKY_RELU")
def leaky_relu(ctx: OpContext) -> Expr:
    return relay.nn.leaky_relu(ctx.input(0), alpha=float(ctx.option("Alpha", 0.2)))


@converter("PRELU")
def prelu(ctx: OpContext) -> Expr:
    channels = ctx.tensor(0).shape[-1]
    alpha = ctx.input(1)
    if int(np.prod(ctx.tensor(1).shape)) == channels:
        return relay.nn.prelu(ctx.input(0), relay.reshape(alpha, newshape=[channels]), axis=-1)
    x = ctx.input(0)
    return relay.where(relay.less(x, _const(0.0)), relay.multiply(x, alpha), x)


@converter("CAST")
def cast(ctx: OpContext) -> Expr:
    return relay.cast(ctx.input(0), ctx.out_tensor().dtype)


@converter("SELECT", "SELECT_V2")
def select(ctx: OpContext) -> Expr:
    return relay.where(ctx.input(0), ctx.input(1), ctx.input(2))


@converter("L2_NORMALIZATION")
def l2_normalization(ctx: OpContext) -> Expr:
    x = ctx.input(0)
    norm = relay.sqrt(relay.sum(_square(x), axis=[-1], keepdims=True))
    return fused(ctx, relay.divide(x, relay.maximum(norm, _const(1e-6))))


@converter("LOG_SOFTMAX")
def log_softmax(ctx: OpContext) -> Expr:
    return relay.nn.log_softmax(ctx.input(0), axis=-1)
