"""ONNX RotaryEmbedding (opset 23): rotate (part of) each head by the cos / sin caches,
halves or interleaved pairs, composed from Relay ops as onnx's reference does it."""

from __future__ import annotations

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter


def _caches(ctx: NodeContext) -> tuple[Expr, Expr]:
    """cos and sin as (batch, seq, 1, rot/2), gathered by position_ids when given."""
    cos, sin = ctx.input(1), ctx.input(2)
    if ctx.has(3):
        cos = relay.take(cos, ctx.input(3), axis=0)
        sin = relay.take(sin, ctx.input(3), axis=0)
    return relay.expand_dims(cos, axis=2), relay.expand_dims(sin, axis=2)


def _halves(x: Expr, rot: int, interleaved: bool) -> tuple[Expr, Expr]:
    if interleaved:
        return (relay.strided_slice(x, [0], [rot], strides=[2], axes=[3]),
                relay.strided_slice(x, [1], [rot], strides=[2], axes=[3]))
    half = rot // 2
    return (relay.strided_slice(x, [0], [half], axes=[3]),
            relay.strided_slice(x, [half], [rot], axes=[3]))


@converter("RotaryEmbedding", since=23)
def rotary_embedding(ctx: NodeContext) -> ConvertResult:
    shape = ctx.static_shape(0)
    x = ctx.input(0)
    if len(shape) == 4:  # (batch, heads, seq, size) -> (batch, seq, heads, size)
        x = relay.transpose(x, axes=[0, 2, 1, 3])
        batch, heads, seq, size = shape
    else:
        heads = int(ctx.attr("num_heads", 0))
        if not heads:
            raise ctx.fail("3-D input needs the num_heads attribute")
        batch, seq, size = shape[0], shape[1], shape[2] // heads
        x = relay.reshape(x, newshape=[batch, seq, heads, size])
    rot = int(ctx.attr("rotary_embedding_dim", 0)) or size
    interleaved = bool(ctx.attr("interleaved", 0))
    cos, sin = _caches(ctx)
    x1, x2 = _halves(x, rot, interleaved)
    real = relay.subtract(relay.multiply(cos, x1), relay.multiply(sin, x2))
    imag = relay.add(relay.multiply(sin, x1), relay.multiply(cos, x2))
    if interleaved:
        pairs = relay.stack([real, imag], axis=-1)
        rotated = relay.reshape(pairs, newshape=[batch, seq, heads, rot])
    else:
        rotated = relay.concatenate([real, imag], axis=3)
    if rot < size:
        rest = relay.strided_slice(x, [rot], [size], axes=[3])
        rotated = relay.concatenate([rotated, rest], axis=3)
    if len(shape) == 4:
        return relay.transpose(rotated, axes=[0, 2, 1, 3])
    return relay.reshape(rotated, newshape=list(shape))
