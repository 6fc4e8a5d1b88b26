"""A Llama-style decoder exported to ONNX with external data, its weights never in memory.

transformers' `LlamaForCausalLM` is built from a `LlamaConfig` on the meta device (its
tensors have a shape and a dtype, no storage), exported by `torch.onnx.export(dynamo=True)`
(torch.export, then onnxscript's translation; its optimizer is skipped, since it would
fold constants that have no values), and each initializer is then written to
`OUT.onnx.data` in chunks and referenced from the model as external data: norm weights
are ones, the rotary frequencies are transformers' own, every other weight repeats one
seeded block of N(0, 0.02) values. Peak memory stays that of the graph, not of the
weights. bench/make_llama.py makes the 7B one (13 GB in float16); tests make a 2-layer one.

torch, transformers and onnx_ir are imported lazily: importing this module needs none.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from engine.relay.testing.torch_models import import_transformers

BLOCK_ELEMENTS = 1 << 22  # the seeded block weights repeat (8 MB in float16)
SEED = 7


def _config(args: argparse.Namespace) -> Any:
    transformers = import_transformers()
    config = transformers.LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.heads, max_position_embeddings=max(2048, args.seq),
        use_cache=False)
    config._attn_implementation = "eager"  # plain MatMul/Softmax, what every runtime takes
    return config


def export_graph(config: Any, seq: int, dtype: str) -> Any:
    """The exported onnx_ir model: initializers typed, without values."""
    import torch

    transformers = import_transformers()
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config).to(getattr(torch, dtype)).eval()
    ids = torch.zeros((1, seq), dtype=torch.long, device="meta")
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # the exporter's own deprecation notices
        program = torch.onnx.export(model, (ids,), dynamo=True, optimize=False,
                                    input_names=["input_ids"], output_names=["logits"],
                                    verbose=False)
    assert program is not None  # dynamo=True always returns its program
    return program.model


def _buffers(config: Any) -> dict[str, np.ndarray]:
    """The model's computed (non-learned) buffers, built for real: they are tiny."""
    transformers = import_transformers()
    rotary = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config=config)
    return {f"model.rotary_emb.{k}": v.numpy() for k, v in rotary.named_buffers()}


def _chunks(name: str, count: int, dtype: np.dtype, buffers: dict[str, np.ndarray],
            block: np.ndarray) -> Iterator[np.ndarray]:
    if name in buffers:
        yield buffers[name].astype(dtype).reshape(-1)
        return
    if name.endswith("norm.weight"):
        ones = np.ones(min(count, BLOCK_ELEMENTS), dtype)
        for start in range(0, count, len(ones)):
            yield ones[:count - start]
        return
    values = block.astype(dtype)
    for start in range(0, count, len(values)):
        yield values[:count - start]


def write_weights(model: Any, out: Path, config: Any) -> int:
    """Write every initializer to `out`.data in chunks and point the model at it."""
    import onnx_ir as ir

    data_path = out.with_name(out.name + ".data")
    buffers = _buffers(config)
    block = (np.random.default_rng(SEED).standard_normal(BLOCK_ELEMENTS) * 0.02)
    offset = 0
    with open(data_path, "wb") as handle:
        for name, value in model.graph.initializers.items():
            dtype = np.dtype(value.dtype.numpy())
            count = int(np.prod([int(d) for d in value.shape], dtype=np.int64))
            for chunk in _chunks(name, count, dtype, buffers, block):
                handle.write(chunk.tobytes())
            length = count * dtype.itemsize
            value.const_value = ir.ExternalTensor(
                data_path.name, offset, length, value.dtype, shape=value.shape, name=name,
                base_dir=out.parent)
            offset += length
            pad = -offset % 64  # aligned, as onnx_ir aligns big tensors
            handle.write(b"\0" * pad)
            offset += pad
    return offset


def make_llama(out: Path, layers: int = 32, hidden: int = 4096, intermediate: int = 11008,
               heads: int = 32, vocab: int = 32000, seq: int = 128,
               dtype: str = "float16") -> Path:
    """Export the decoder to `out` (+ `out`.data); returns `out`."""
    import onnx_ir as ir

    args = argparse.Namespace(layers=layers, hidden=hidden, intermediate=intermediate,
                              heads=heads, vocab=vocab, seq=seq)
    config = _config(args)
    out.parent.mkdir(parents=True, exist_ok=True)
    model = export_graph(config, seq, dtype)
    write_weights(model, out, config)
    ir.save(model, out)
    return out


__all__ = ["make_llama"]
