"""ONNX LinearAttention (opset 27): the recurrent state update of linear attention, Gated
DeltaNet and their relatives, unrolled over the (static) sequence into Relay ops.

Per step t, with the state S of shape (batch, kv_heads, d_k, d_v):
  gated rules:  S <- exp(g_t) S
  delta rules:  v_t <- beta_t (v_t - S^T k_t)
  always:       S <- S + k_t (x) v_t;   o_t = scale q_t^T S  (S shared by each query group)

As onnx's reference, the recurrence runs in float32 (float64 inputs stay float64) and the
outputs are cast back: the output to the query's type, the state to the past state's type
(the query's when there is none). A decode step (T = 1) is a handful of broadcasting ops;
a prefill of T tokens unrolls T of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter

_RULES = {"linear": (False, False), "gated": (True, False), "delta": (False, True),
          "gated_delta": (True, True)}  # rule -> (decays, corrects by delta)
_QUERY, _KEY, _VALUE, _PAST, _DECAY, _BETA = range(6)


@dataclass(frozen=True)
class _Dims:
    batch: int
    steps: int
    q_heads: int
    kv_heads: int
    d_k: int
    d_v: int


def _dims(ctx: NodeContext) -> _Dims:
    q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    if q_heads is None or kv_heads is None:
        raise ctx.fail("the q_num_heads and kv_num_heads attributes are required")
    q_heads, kv_heads = int(q_heads), int(kv_heads)
    if q_heads <= 0 or kv_heads <= 0 or q_heads % kv_heads:
        raise ctx.fail(f"q_num_heads ({q_heads}) must be a positive multiple of "
                       f"kv_num_heads ({kv_heads})")
    shapes = [ctx.static_shape(i) for i in (_QUERY, _KEY, _VALUE)]
    if any(len(s) != 3 for s in shapes):
        raise ctx.fail(f"query, key and value must be (batch, seq, heads * size), got {shapes}")
    batch, steps, q_hidden = shapes[0]
    return _Dims(batch, steps, q_heads, kv_heads, q_hidden // q_heads, shapes[2][2] // kv_heads)


def _check_rule(ctx: NodeContext) -> tuple[bool, bool]:
    rule = ctx.attr("update_rule", "gated_delta")
    if rule not in _RULES:
        raise ctx.fail(f"unknown update_rule {rule!r} (one of {', '.join(_RULES)})")
    gated, delta = _RULES[rule]
    for needed, index, name in ((gated, _DECAY, "decay"), (delta, _BETA, "beta")):
        if needed != ctx.has(index):
            verb = "needs" if needed else "takes no"
            raise ctx.fail(f"update_rule {rule!r} {verb} the {name} input")
    return gated, delta


def _steps(ctx: NodeContext, index: int, dims: _Dims, heads: int, dtype: str) -> list[Expr]:
    """Input `index` (batch, T, heads * size) as T tensors (batch, heads, size)."""
    x = relay.cast(ctx.input(index), dtype)
    size = ctx.static_shape(index)[-1] // heads
    x = relay.reshape(x, newshape=[dims.batch, dims.steps, heads, size])
    parts = relay.split(x, dims.steps, axis=1)
    return [relay.squeeze(parts[t], axis=[1]) for t in range(dims.steps)]


def _last_dim(ctx: NodeContext, index: int, allowed: tuple[int, ...], what: str) -> int:
    last = ctx.static_shape(index)[-1]
    if ctx.rank(index) != 3 or last not in allowed:
        raise ctx.fail(f"{what} must be (batch, seq, n) with n in {sorted(set(allowed))}, "
                       f"got {ctx.shape(index)}")
    return last


@dataclass(frozen=True)
class _Inputs:
    """The per-step operands, each (batch, heads, size) in the compute dtype."""

    q: list[Expr]
    k: list[Expr]
    v: list[Expr]
    decay: list[Expr] | None
    beta: list[Expr] | None


def _inputs(ctx: NodeContext, dims: _Dims, dtype: str) -> _Inputs:
    gated, delta = _check_rule(ctx)
    decay = beta = None
    if gated:
        _last_dim(ctx, _DECAY, (dims.kv_heads, dims.kv_heads * dims.d_k), "decay")
        decay = [relay.exp(g) for g in _steps(ctx, _DECAY, dims, dims.kv_heads, dtype)]
    if delta:
        beta_heads = _last_dim(ctx, _BETA, (dims.kv_heads, 1), "beta")  # per head or shared
        beta = _steps(ctx, _BETA, dims, beta_heads, dtype)
    return _Inputs(_steps(ctx, _QUERY, dims, dims.q_heads, dtype),
                   _steps(ctx, _KEY, dims, dims.kv_heads, dtype),
                   _steps(ctx, _VALUE, dims, dims.kv_heads, dtype), decay, beta)


def _step(state: Expr, ins: _Inputs, t: int) -> Expr:
    """The state after token t is written."""
    k, v = relay.expand_dims(ins.k[t], -1), ins.v[t]
    if ins.decay is not None:
        state = relay.multiply(state, relay.expand_dims(ins.decay[t], -1))
    if ins.beta is not None:
        retrieved = relay.sum(relay.multiply(state, k), axis=[2])
        v = relay.multiply(ins.beta[t], relay.subtract(v, retrieved))
    return relay.add(state, relay.multiply(k, relay.expand_dims(v, 2)))


def _read(state: Expr, q: Expr, dims: _Dims, scale: Expr) -> Expr:
    """scale q^T S for each query head, (batch, q_heads, d_v)."""
    group = dims.q_heads // dims.kv_heads
    shared = relay.repeat(state, group, axis=1) if group > 1 else state
    return relay.multiply(relay.sum(relay.multiply(relay.expand_dims(q, -1), shared), axis=[2]),
                          scale)


@converter("LinearAttention", since=27)
def linear_attention(ctx: NodeContext) -> ConvertResult:
    dims = _dims(ctx)
    out_dtype = ctx.dtype(_QUERY)
    dtype = "float64" if out_dtype == "float64" else "float32"
    ins = _inputs(ctx, dims, dtype)
    state_shape = (dims.batch, dims.kv_heads, dims.d_k, dims.d_v)
    if ctx.has(_PAST):
        if ctx.static_shape(_PAST) != state_shape:
            raise ctx.fail(f"past_state has shape {ctx.shape(_PAST)}, expected {state_shape}")
        state_dtype, state = ctx.dtype(_PAST), relay.cast(ctx.input(_PAST), dtype)
    else:
        state_dtype, state = out_dtype, relay.zeros(state_shape, dtype)
    scale = float(ctx.attr("scale", 0.0)) or 1.0 / float(np.sqrt(dims.d_k))
    scale_const = relay.const(scale, dtype)
    outs = []
    for t in range(dims.steps):
        state = _step(state, ins, t)
        outs.append(_read(state, ins.q[t], dims, scale_const))
    y = relay.reshape(relay.stack(outs, axis=1),
                      newshape=[dims.batch, dims.steps, dims.q_heads * dims.d_v])
    return [relay.cast(y, out_dtype), relay.cast(state, state_dtype)]
