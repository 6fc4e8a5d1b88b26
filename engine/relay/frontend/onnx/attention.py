"""ONNX Attention (opset 23 on): scaled dot-product attention composed from Relay ops,
as TVM's frontends compose it: 3-D inputs split into heads, past key/value caches
concatenated, grouped-query heads repeated, boolean or additive masks, causal and
sliding-window masks (constants built at import time), `nonpad_kv_seqlen` padding,
softcap, `softmax_precision` and the four `qk_matmul_output_mode`s.

It follows onnx's reference (`onnx/reference/ops/op_attention.py`) step for step, including
its fully-masked-row guard: a query row whose additive bias is all -inf attends nothing.

ai.onnx.preview's FlexAttention shares the scores, GQA and batched-matmul steps; its softmax
runs in `softmax_precision` (float32 below 32 bits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import onnx_dtype

Shape4 = tuple[int, int, int, int]


@dataclass(frozen=True)
class _Heads:
    """Q, K, V as (batch, heads, seq, head_size), with their static shapes."""

    q: Expr
    k: Expr
    v: Expr
    q_shape: Shape4
    k_shape: Shape4
    v_shape: Shape4


def _split_heads(x: Expr, shape: tuple[int, ...], heads: int) -> tuple[Expr, Shape4]:
    batch, seq, hidden = shape
    split = relay.reshape(x, newshape=[batch, seq, heads, hidden // heads])
    return relay.transpose(split, axes=[0, 2, 1, 3]), (batch, heads, seq, hidden // heads)


def _heads(ctx: NodeContext) -> _Heads:
    shapes = [ctx.static_shape(i) for i in range(3)]
    if len(shapes[0]) == 4:
        q4, k4, v4 = (tuple(s) for s in shapes)
        return _Heads(ctx.input(0), ctx.input(1), ctx.input(2), q4, k4, v4)  # type: ignore[arg-type]
    q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    if q_heads is None or kv_heads is None:
        raise ctx.fail("3-D inputs need the q_num_heads and kv_num_heads attributes")
    q, q4 = _split_heads(ctx.input(0), shapes[0], int(q_heads))
    k, k4 = _split_heads(ctx.input(1), shapes[1], int(kv_heads))
    v, v4 = _split_heads(ctx.input(2), shapes[2], int(kv_heads))
    return _Heads(q, k, v, q4, k4, v4)


def _with_past(ctx: NodeContext, heads: _Heads) -> tuple[_Heads, int]:
    """K and V after the past cache (input 4 and 5) is prepended; also the past length."""
    if not ctx.has(4):
        return heads, 0
    past = ctx.static_shape(4)[2]
    k = relay.concatenate([ctx.input(4), heads.k], axis=2)
    v = relay.concatenate([ctx.input(5), heads.v], axis=2)
    k_shape = (*heads.k_shape[:2], heads.k_shape[2] + past, heads.k_shape[3])
    v_shape = (*heads.v_shape[:2], heads.v_shape[2] + past, heads.v_shape[3])
    return _Heads(heads.q, k, v, heads.q_shape, k_shape, v_shape), past


def _mask_bias(ctx: NodeContext, dtype: str, kv_len: int) -> Expr | None:
    """The attn_mask (input 3) as an additive bias padded with -inf to `kv_len` keys."""
    if not ctx.has(3):
        return None
    mask = ctx.input(3)
    if ctx.dtype(3) == "bool":
        mask = relay.where(mask, relay.const(0.0, dtype), relay.const(-np.inf, dtype))
    shape = ctx.static_shape(3)
    missing = kv_len - shape[-1]
    if missing > 0:
        widths = [(0, 0)] * (len(shape) - 1) + [(0, missing)]
        mask = relay.nn.pad(mask, widths, pad_value=relay.const(-np.inf, dtype))
    return mask


def _static_bias(ctx: NodeContext, q_len: int, kv_len: int, offset: int) -> np.ndarray | None:
    """Causal and sliding-window masks for a scalar offset, as one additive constant."""
    diff = np.arange(q_len)[:, None] + offset - np.arange(kv_len)[None, :]
    allowed = np.ones((q_len, kv_len), dtype=bool)
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    causal = bool(ctx.attr("is_causal", 0))
    if not causal and left < 0 and right < 0:
        return None
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return np.where(allowed, 0.0, -np.inf)


def _dynamic_bias(ctx: NodeContext, dtype: str, batch: int, q_len: int, kv_len: int) -> Expr:
    """Masks that depend on `nonpad_kv_seqlen` (input 6): padding, and causal and window
    masks whose frontier is per batch (offset = nonpad_kv_seqlen - q_len)."""
    seqlen = relay.reshape(ctx.input(6), newshape=[batch, 1, 1, 1])
    keys = relay.const(np.arange(kv_len).reshape(1, 1, 1, kv_len).astype(ctx.dtype(6)))
    allowed: Expr = relay.less(keys, seqlen)
    i_minus_j = np.arange(q_len)[:, None] - np.arange(kv_len)[None, :]
    diff = relay.add(relay.const(i_minus_j.astype(ctx.dtype(6))),
                     relay.subtract(seqlen, relay.const(q_len, ctx.dtype(6))))
    zero = relay.const(0, ctx.dtype(6))
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    if ctx.attr("is_causal", 0):
        allowed = relay.logical_and(allowed, relay.greater_equal(diff, zero))
    if left >= 0:
        allowed = relay.logical_and(allowed, relay.less_equal(diff, relay.const(left, ctx.dtype(6))))
    if right >= 0:
        allowed = relay.logical_and(
            allowed, relay.less_equal(relay.negative(diff), relay.const(right, ctx.dtype(6))))
    return relay.where(allowed, relay.const(0.0, dtype), relay.const(-np.inf, dtype))


def _bias(ctx: NodeContext, dtype: str, heads: _Heads, past: int) -> Expr | None:
    batch, q_len, kv_len = heads.q_shape[0], heads.q_shape[2], heads.k_shape[2]
    terms = []
    mask = _mask_bias(ctx, dtype, kv_len)
    if mask is not None:
        terms.append(mask)
    if ctx.has(6):
        terms.append(_dynamic_bias(ctx, dtype, batch, q_len, kv_len))
    else:
        static = _static_bias(ctx, q_len, kv_len, past)
        if static is not None:
            terms.append(relay.const(static.astype(dtype)))
    if not terms:
        return None
    bias = relay.const(np.zeros((q_len, kv_len), dtype=dtype))
    for term in terms:
        bias = relay.add(bias, term)
    return bias


def _batched(a: Expr, b: Expr, a_shape: Shape4, b_shape: Shape4, transpose_b: bool) -> Expr:
    """(B, H, m, k) x (B, H, k, n) (or (B, H, n, k) with `transpose_b`) through batch_matmul."""
    batch, heads = a_shape[0], a_shape[1]
    a3 = relay.reshape(a, newshape=[batch * heads, *a_shape[2:]])
    b3 = relay.reshape(b, newshape=[batch * heads, *b_shape[2:]])
    out = relay.nn.batch_matmul(a3, b3, transpose_b=transpose_b)
    n = b_shape[2] if transpose_b else b_shape[3]
    return relay.reshape(out, newshape=[batch, heads, a_shape[2], n])


def _grouped(heads: _Heads) -> tuple[Expr, Expr, Shape4, Shape4]:
    """K and V with each KV head repeated for its group of query heads (GQA)."""
    q_heads, kv_heads = heads.q_shape[1], heads.k_shape[1]
    if q_heads == kv_heads or q_heads % kv_heads:
        return heads.k, heads.v, heads.k_shape, heads.v_shape
    reps = q_heads // kv_heads
    k = relay.repeat(heads.k, reps, axis=1)
    v = relay.repeat(heads.v, reps, axis=1)
    k_shape = (heads.k_shape[0], q_heads, *heads.k_shape[2:])
    v_shape = (heads.v_shape[0], q_heads, *heads.v_shape[2:])
    return k, v, k_shape, v_shape


def _scores(ctx: NodeContext, heads: _Heads, dtype: str) -> Expr:
    """softcap(Q sqrt(s) @ (K sqrt(s))^T), as the reference scales both operands."""
    scale = ctx.attr("scale")
    if scale is None:
        scale = 1.0 / np.sqrt(heads.q_shape[3])
    root = relay.const(np.asarray(np.sqrt(scale), dtype=dtype))
    k, _, k_shape, _ = _grouped(heads)
    qk = _batched(relay.multiply(heads.q, root), relay.multiply(k, root), heads.q_shape,
                  k_shape, transpose_b=True)
    softcap = float(ctx.attr("softcap", 0.0))
    if softcap > 0:
        cap = relay.const(softcap, dtype)
        qk = relay.multiply(relay.tanh(relay.divide(qk, cap)), cap)
    return qk


def _probabilities(ctx: NodeContext, logits: Expr, bias: Expr | None, dtype: str) -> Expr:
    precision = ctx.attr("softmax_precision")
    if precision:
        logits = relay.cast(logits, onnx_dtype(int(precision)))
    probs = relay.nn.softmax(logits, axis=-1)
    if bias is not None:
        row_max = relay.max(bias, axis=[-1], keepdims=True)
        masked = relay.equal(row_max, relay.const(-np.inf, dtype))
        probs = relay.where(masked, relay.zeros_like(probs), probs)
    return relay.cast(probs, dtype) if precision else probs


def _merge_heads(y: Expr, shape: Shape4) -> Expr:
    batch, heads, seq, size = shape
    return relay.reshape(relay.transpose(y, axes=[0, 2, 1, 3]), newshape=[batch, seq, heads * size])


@converter("Attention", since=23)
def attention(ctx: NodeContext) -> ConvertResult:
    dtype = ctx.dtype(0)
    heads, past = _with_past(ctx, _heads(ctx))
    bias = _bias(ctx, dtype, heads, past)
    qk = _scores(ctx, heads, dtype)
    with_bias = qk if bias is None else relay.add(qk, bias)
    probs = _probabilities(ctx, with_bias, bias, dtype)
    _, v, _, v_shape = _grouped(heads)
    batch, q_heads, q_len = heads.q_shape[:3]
    y = _batched(probs, v, (batch, q_heads, q_len, v_shape[2]), v_shape, transpose_b=False)
    if ctx.rank(0) == 3:
        y = _merge_heads(y, (heads.q_shape[0], heads.q_shape[1], heads.q_shape[2], v_shape[3]))
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    qk_out = {2: with_bias, 3: probs}.get(mode, qk)
    return [y, heads.k, heads.v, qk_out]


PREVIEW = "ai.onnx.preview"


def _softmax_dtype(ctx: NodeContext, dtype: str) -> str:
    """FlexAttention's softmax type: `softmax_precision`, else float32 below 32 bits."""
    precision = ctx.attr("softmax_precision")
    if precision:
        return onnx_dtype(int(precision))
    return "float32" if np.dtype(dtype).itemsize < 4 else dtype


def _modified(ctx: NodeContext, name: str, x: Expr) -> Expr:
    """`x` through the graph attribute `name` (score_mod, prob_mod) when the node has one."""
    if ctx.attrs.get(name) is None:
        return x
    out = ctx.importer.import_subgraph(ctx.graph(name), [x], False, ctx.name).outputs
    if len(out) != 1 or out[0] is None:
        raise ctx.fail(f"the graph attribute {name!r} must give one tensor, not {len(out)}")
    return out[0]


@converter(f"{PREVIEW}.FlexAttention")
def flex_attention(ctx: NodeContext) -> ConvertResult:
    """softmax(score_mod(Q K^T scale)) -> prob_mod -> @ V on rank-4 inputs, GQA by repeating
    K/V heads; scores, softmax and the last matmul in the softmax type."""
    if any(ctx.rank(i) != 4 for i in range(3)):
        raise ctx.fail("Q, K and V must be rank-4 (batch, heads, seq, head_size)")
    dtype = ctx.dtype(0)
    heads = _heads(ctx)
    compute = _softmax_dtype(ctx, dtype)
    scores = _modified(ctx, "score_mod", relay.cast(_scores(ctx, heads, dtype), compute))
    probs = _modified(ctx, "prob_mod", relay.nn.softmax(scores, axis=-1))
    _, v, _, v_shape = _grouped(heads)
    batch, q_heads, q_len = heads.q_shape[:3]
    y = _batched(probs, relay.cast(v, compute), (batch, q_heads, q_len, v_shape[2]), v_shape,
                 transpose_b=False)
    return relay.cast(y, dtype)
