"""Zoo models, part 3: sequence models. GPT-2 and DistilBERT as Hugging Face's exports write
them (4-D batched attention MatMuls, Softmax over the last axis, causal and padding masks
through Where, Split q/k/v, Gelu, LayerNorm decomposed or fused), and a TextCNN (Gather
embeddings, Conv1d, max over time). Sizes are small; pass the real ones for full models
(GPT-2 small: n_embd=768, n_head=12, n_layer=12, vocab=50257, n_ctx=1024)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto
from zoo_builder import ZooBuilder

FLOAT_MIN = float(np.finfo(np.float32).min)


def _heads(g: ZooBuilder, x: str, name: str, seq: int, heads: int, dim: int,
           perm: list[int]) -> str:
    r = g.node("Reshape", [x, g.i64(f"{name}.shape", [1, seq, heads, dim])], f"{name}/Reshape")
    return g.node("Transpose", [r], f"{name}/Transpose", perm=perm)


def _merge_heads(g: ZooBuilder, x: str, name: str, seq: int, hidden: int) -> str:
    t = g.node("Transpose", [x], f"{name}/Transpose", perm=[0, 2, 1, 3])
    return g.node("Reshape", [t, g.i64(f"{name}.shape", [1, seq, hidden])], f"{name}/Reshape")


# --- GPT-2 -----------------------------------------------------------------------------------
def _gpt2_positions(g: ZooBuilder, mask: str) -> str:
    """position_ids = cumsum(attention_mask) - 1, 1 where masked (HF's generate inputs)."""
    cum = g.node("CumSum", [mask, g.i64("pos.axis", 1)], "/CumSum")
    pos = g.node("Sub", [cum, g.i64("pos.one", 1)], "/Sub")
    pad = g.node("Equal", [mask, g.i64("pos.zero", 0)], "/Equal")
    return g.node("Where", [pad, g.i64("pos.fill", 1), pos], "/Where")


def _gpt2_padding_bias(g: ZooBuilder, mask: str) -> str:
    """(1 - mask[:, None, None, :]) * finfo.min, as an additive attention bias."""
    m = g.unsqueeze(g.unsqueeze(mask, "/Unsqueeze", [1]), "/Unsqueeze_1", [2])
    m = g.node("Cast", [m], "/Cast", to=TensorProto.FLOAT)
    inv = g.node("Sub", [g.f32("attn.one", 1.0), m], "/Sub_1")
    return g.node("Mul", [inv, g.f32("attn.min", FLOAT_MIN)], "/Mul")


def _gpt2_attention(g: ZooBuilder, x: str, p: str, seq: int, hidden: int, heads: int,
                    causal: str, bias: str) -> str:
    dim = hidden // heads
    qkv = g.linear(x, f"{p}.attn.c_attn", hidden, 3 * hidden)
    q, k, v = g.split(qkv, f"{p}/attn/Split", [hidden] * 3, 2)
    q = _heads(g, q, f"{p}/attn/q", seq, heads, dim, [0, 2, 1, 3])
    k = _heads(g, k, f"{p}/attn/k", seq, heads, dim, [0, 2, 3, 1])
    v = _heads(g, v, f"{p}/attn/v", seq, heads, dim, [0, 2, 1, 3])
    w = g.node("MatMul", [q, k], f"{p}/attn/MatMul")
    w = g.node("Div", [w, g.f32(f"{p}.attn.scale", math.sqrt(dim))], f"{p}/attn/Div")
    w = g.node("Where", [causal, w, g.f32(f"{p}.attn.masked_bias", FLOAT_MIN)],
               f"{p}/attn/Where")
    w = g.node("Softmax", [g.node("Add", [w, bias], f"{p}/attn/Add")], f"{p}/attn/Softmax",
               axis=-1)
    out = _merge_heads(g, g.node("MatMul", [w, v], f"{p}/attn/MatMul_1"), f"{p}/attn/merge",
                       seq, hidden)
    return g.linear(out, f"{p}.attn.c_proj", hidden, hidden)


def make_gpt2(opset: int = 13, seq: int = 16, n_embd: int = 64, n_head: int = 4,
              n_layer: int = 2, vocab: int = 512, n_ctx: int = 32) -> onnx.ModelProto:
    g = ZooBuilder("gpt2" if opset < 20 else f"gpt2_op{opset}", opset)
    ids = g.add_input("input_ids", [1, seq], TensorProto.INT64)
    mask = g.add_input("attention_mask", [1, seq], TensorProto.INT64)
    wte = g.small("transformer.wte.weight", [vocab, n_embd], 0.1)
    h = g.node("Gather", [wte, ids], "/wte/Gather")
    pos = g.node("Gather", [g.small("transformer.wpe.weight", [n_ctx, n_embd], 0.1),
                            _gpt2_positions(g, mask)], "/wpe/Gather")
    h = g.node("Add", [h, pos], "/Add")
    tril = np.tril(np.ones((n_ctx, n_ctx), bool)).reshape(1, 1, n_ctx, n_ctx)
    causal = g.slice(g.init("attn.bias", tril), "/attn/Slice", [0, 0], [seq, seq], [2, 3])
    bias = _gpt2_padding_bias(g, mask)
    for i in range(n_layer):
        p = f"h.{i}"
        a = _gpt2_attention(g, g.layer_norm(h, f"{p}.ln_1", n_embd), p, seq, n_embd, n_head,
                            causal, bias)
        h = g.node("Add", [a, h], f"{p}/Add")
        m = g.linear(g.layer_norm(h, f"{p}.ln_2", n_embd), f"{p}.mlp.c_fc", n_embd, 4 * n_embd)
        m = g.linear(g.gelu(m, f"{p}.mlp.act", tanh=True), f"{p}.mlp.c_proj", 4 * n_embd,
                     n_embd)
        h = g.node("Add", [h, m], f"{p}/Add_1")
    h = g.layer_norm(h, "ln_f", n_embd)
    lm_head = g.node("Transpose", [wte], "lm_head/Transpose", perm=[1, 0])
    g.add_output(g.node("MatMul", [h, lm_head], "lm_head/MatMul"), "logits")
    return g.model("GPT-2 (HF export), tied embeddings, random weights")


# --- DistilBERT ------------------------------------------------------------------------------
def _distilbert_embeddings(g: ZooBuilder, ids: str, seq: int, dim: int, vocab: int,
                           max_pos: int) -> str:
    words = g.node("Gather", [g.small("embeddings.word_embeddings.weight", [vocab, dim], 0.1),
                              ids], "embeddings/word_embeddings/Gather")
    length = g.node("Gather", [g.node("Shape", [ids], "embeddings/Shape"),
                               g.i64("embeddings.seq_axis", 1)], "embeddings/Gather")
    positions = g.node("Range", [g.i64("embeddings.start", 0), length,
                                 g.i64("embeddings.step", 1)], "embeddings/Range")
    positions = g.unsqueeze(positions, "embeddings/Unsqueeze", [0])
    pos = g.node("Gather", [g.small("embeddings.position_embeddings.weight", [max_pos, dim],
                                    0.1), positions], "embeddings/position_embeddings/Gather")
    h = g.node("Add", [words, pos], "embeddings/Add")
    return g.layer_norm(h, "embeddings.LayerNorm", dim)


def _distilbert_attention(g: ZooBuilder, x: str, p: str, mask: str, seq: int, dim: int,
                          heads: int) -> str:
    d = dim // heads
    q = g.linear(x, f"{p}.attention.q_lin", dim, dim)
    q = _heads(g, g.node("Div", [q, g.f32(f"{p}.attention.scale", math.sqrt(d))],
                         f"{p}/attention/Div"), f"{p}/attention/q", seq, heads, d, [0, 2, 1, 3])
    k = _heads(g, g.linear(x, f"{p}.attention.k_lin", dim, dim), f"{p}/attention/k", seq,
               heads, d, [0, 2, 3, 1])
    v = _heads(g, g.linear(x, f"{p}.attention.v_lin", dim, dim), f"{p}/attention/v", seq,
               heads, d, [0, 2, 1, 3])
    scores = g.node("MatMul", [q, k], f"{p}/attention/MatMul")
    masked = g.node("Expand", [mask, g.i64(f"{p}.attention.expand", [1, heads, seq, seq])],
                    f"{p}/attention/Expand")
    scores = g.node("Where", [masked, g.f32(f"{p}.attention.min", FLOAT_MIN), scores],
                    f"{p}/attention/Where")
    w = g.node("Softmax", [scores], f"{p}/attention/Softmax", axis=-1)
    ctx = _merge_heads(g, g.node("MatMul", [w, v], f"{p}/attention/MatMul_1"),
                       f"{p}/attention/merge", seq, dim)
    return g.linear(ctx, f"{p}.attention.out_lin", dim, dim)


def make_distilbert(opset: int = 14, seq: int = 16, dim: int = 64, heads: int = 4,
                    layers: int = 2, vocab: int = 512, max_pos: int = 64) -> onnx.ModelProto:
    g = ZooBuilder("distilbert" if opset < 17 else f"distilbert_op{opset}", opset)
    ids = g.add_input("input_ids", [1, seq], TensorProto.INT64)
    mask = g.add_input("attention_mask", [1, seq], TensorProto.INT64)
    h = _distilbert_embeddings(g, ids, seq, dim, vocab, max_pos)
    pad = g.node("Equal", [mask, g.i64("mask.zero", 0)], "/Equal")
    pad = g.node("Reshape", [pad, g.i64("mask.shape", [1, 1, 1, seq])], "/Reshape")
    for i in range(layers):
        p = f"transformer.layer.{i}"
        a = _distilbert_attention(g, h, p, pad, seq, dim, heads)
        h = g.layer_norm(g.node("Add", [a, h], f"{p}/Add"), f"{p}.sa_layer_norm", dim)
        f = g.gelu(g.linear(h, f"{p}.ffn.lin1", dim, 4 * dim), f"{p}.ffn.activation")
        f = g.linear(f, f"{p}.ffn.lin2", 4 * dim, dim)
        h = g.layer_norm(g.node("Add", [f, h], f"{p}/Add_1"), f"{p}.output_layer_norm", dim)
    g.add_output(h, "last_hidden_state")
    return g.model("DistilBERT (HF export), random weights")


# --- TextCNN ---------------------------------------------------------------------------------
def make_textcnn(opset: int = 21, seq: int = 32, vocab: int = 1000, dim: int = 64,
                 filters: int = 32, classes: int = 2) -> onnx.ModelProto:
    """Kim (2014): embeddings, Conv1d of widths 3/4/5, max over time, concat, fc."""
    g = ZooBuilder("textcnn", opset)
    ids = g.add_input("input_ids", [1, seq], TensorProto.INT64)
    emb = g.node("Gather", [g.small("embedding.weight", [vocab, dim], 0.5), ids],
                 "embedding/Gather")
    x = g.node("Transpose", [emb], "/Transpose", perm=[0, 2, 1])
    pooled = []
    for i, k in enumerate((3, 4, 5)):
        c = g.node("Relu", [g.conv(x, f"convs.{i}", dim, filters, [k])], f"convs.{i}/Relu")
        pooled.append(g.reduce("ReduceMax", c, f"convs.{i}/ReduceMax", [2], keepdims=0))
    h = g.node("Dropout", [g.node("Concat", pooled, "/Concat", axis=1)], "dropout")
    g.add_output(g.gemm(h, "fc", 3 * filters, classes), "logits")
    return g.model("TextCNN (Conv1d, max over time), random weights")


SEQUENCE_MODELS: dict[str, tuple[Callable[[], onnx.ModelProto], str]] = {
    "gpt2": (lambda: make_gpt2(13), "GPT-2 (2 layers, small dims), opset 13"),
    "gpt2_op21": (lambda: make_gpt2(21), "GPT-2, opset 21 (LayerNormalization, Gelu tanh)"),
    "distilbert": (lambda: make_distilbert(14), "DistilBERT (2 layers), opset 14"),
    "distilbert_op20": (lambda: make_distilbert(20),
                        "DistilBERT, opset 20 (LayerNormalization, Gelu)"),
    "textcnn": (lambda: make_textcnn(21), "TextCNN (Conv1d), opset 21"),
}
