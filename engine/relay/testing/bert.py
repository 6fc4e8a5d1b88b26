"""A BERT-style encoder built with the relay API: embeddings, multi-head attention with
batch_matmul, erf-GELU feed-forward, layer_norm, tanh pooler."""

from __future__ import annotations

import numpy as np

from engine.ir.expr import Expr, Function, Tuple
from engine.ir.module import IRModule
from engine.relay import op
from engine.relay.analysis import free_vars
from engine.relay.expr import const, var
from engine.relay.op import nn
from engine.relay.testing.init import create_workload
from engine.relay.testing.layers import dense
from engine.runtime.ndarray import NDArray

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _layer_norm(x: Expr, name: str, hidden: int) -> Expr:
    return nn.layer_norm(x, var(f"{name}_gamma", shape=(hidden,)),
                         var(f"{name}_beta", shape=(hidden,)), axis=-1, epsilon=1e-12)


def _gelu(x: Expr) -> Expr:
    return x * (op.erf(x * const(1 / np.sqrt(2.0))) + const(1.0)) * const(0.5)


def _heads(x: Expr, batch: int, seq: int, heads: int, head_dim: int) -> Expr:
    """(batch*seq, hidden) -> (batch*heads, seq, head_dim)."""
    x = op.transpose(op.reshape(x, (batch, seq, heads, head_dim)), (0, 2, 1, 3))
    return op.reshape(x, (batch * heads, seq, head_dim))


def _attention(x: Expr, mask: Expr, name: str, batch: int, seq: int, hidden: int,
               heads: int) -> Expr:
    head_dim = hidden // heads
    q = _heads(dense(x, f"{name}_query", hidden, hidden), batch, seq, heads, head_dim)
    k = _heads(dense(x, f"{name}_key", hidden, hidden), batch, seq, heads, head_dim)
    v = _heads(dense(x, f"{name}_value", hidden, hidden), batch, seq, heads, head_dim)
    scores = nn.batch_matmul(q, k) * const(1.0 / np.sqrt(head_dim))
    scores = op.reshape(scores, (batch, heads, seq, seq)) + mask
    probs = op.reshape(nn.softmax(scores, axis=-1), (batch * heads, seq, seq))
    ctx = nn.batch_matmul(probs, v, transpose_b=False)
    ctx = op.transpose(op.reshape(ctx, (batch, heads, seq, head_dim)), (0, 2, 1, 3))
    return dense(op.reshape(ctx, (batch * seq, hidden)), f"{name}_output", hidden, hidden)


def _encoder_layer(x: Expr, mask: Expr, name: str, batch: int, seq: int, hidden: int,
                   heads: int, ffn: int) -> Expr:
    att = _attention(x, mask, f"{name}_attention", batch, seq, hidden, heads)
    x = _layer_norm(att + x, f"{name}_attention_ln", hidden)
    h = _gelu(dense(x, f"{name}_intermediate", ffn, hidden))
    out = dense(h, f"{name}_ffn_output", hidden, ffn)
    return _layer_norm(out + x, f"{name}_output_ln", hidden)


def get_net(batch_size: int = 1, seq_len: int = 128, num_layers: int = 2, hidden: int = 768,
            heads: int = 12, ffn: int = 3072, vocab: int = 30522, max_position: int = 512,
            type_vocab: int = 2) -> Function:
    ids = var("input_ids", shape=(batch_size, seq_len), dtype="int32")
    mask_in = var("attention_mask", shape=(batch_size, seq_len), dtype="int32")
    types = var("token_type_ids", shape=(batch_size, seq_len), dtype="int32")
    positions = const(np.arange(seq_len, dtype="int32")[None, :])
    emb = (op.take(var("word_embedding", shape=(vocab, hidden)), ids, axis=0)
           + op.take(var("position_embedding", shape=(max_position, hidden)), positions, axis=0)
           + op.take(var("token_type_embedding", shape=(type_vocab, hidden)), types, axis=0))
    x: Expr = op.reshape(_layer_norm(emb, "embeddings_ln", hidden), (batch_size * seq_len, hidden))
    mask = op.cast(op.reshape(mask_in, (batch_size, 1, 1, seq_len)), "float32")
    mask = (const(1.0) - mask) * const(-10000.0)
    for i in range(num_layers):
        x = _encoder_layer(x, mask, f"layer{i}", batch_size, seq_len, hidden, heads, ffn)
    seq_out = op.reshape(x, (batch_size, seq_len, hidden))
    first = op.squeeze(op.strided_slice(seq_out, (0, 0), (batch_size, 1)), axis=(1,))
    pooled = op.tanh(dense(first, "pooler", hidden, hidden))
    out = Tuple((seq_out, pooled))
    return Function(tuple(free_vars(out)), out)


def get_workload(batch_size: int = 1, seq_len: int = 128, num_layers: int = 2,
                 hidden: int = 768, heads: int = 12, ffn: int = 3072, vocab: int = 30522,
                 seed: int = 0) -> tuple[IRModule, dict[str, NDArray]]:
    """(mod, params) of a BERT encoder; inputs input_ids, attention_mask, token_type_ids
    (int32, shape (batch, seq)); outputs (sequence_output, pooled_output)."""
    func = get_net(batch_size, seq_len, num_layers, hidden, heads, ffn, vocab)
    return create_workload(func, inputs=INPUTS, seed=seed)
