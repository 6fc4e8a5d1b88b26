#!/usr/bin/env python3
"""A Llama-style decoder as ONNX with external data, written by torch.onnx's exporter
without ever holding its weights in memory.

    python bench/make_llama.py OUT.onnx [--layers 32] [--hidden 4096] [--intermediate 11008]
                               [--heads 32] [--vocab 32000] [--seq 128] [--dtype float16]

The defaults are Llama-2-7B's shape (6.7B parameters: 13 GB in float16). transformers'
`LlamaForCausalLM` is built from a `LlamaConfig` on the meta device (its tensors have a
shape and a dtype, no storage), exported by `torch.onnx.export(dynamo=True)` (torch.export,
then onnxscript's translation; its optimizer is skipped, since it would fold constants
that have no values), and each initializer is then written to `OUT.onnx.data` in chunks
and referenced from the model as external data: norm weights are ones, the rotary
frequencies are transformers' own, every other weight repeats one seeded block of
N(0, 0.02) values. Peak memory stays that of the graph (a few hundred MB), not of the
weights. The same function serves the tests with a small configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.relay.testing.llama_export import make_llama  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=11008)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--dtype", default="float16", choices=("float16", "float32"))
    args = parser.parse_args()
    start = time.perf_counter()
    out = make_llama(args.out, args.layers, args.hidden, args.intermediate, args.heads,
                     args.vocab, args.seq, args.dtype)
    data = out.with_name(out.name + ".data")
    print(f"{out}: graph {os.path.getsize(out) / 1e6:.1f} MB, weights "
          f"{os.path.getsize(data) / 1e9:.2f} GB, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
