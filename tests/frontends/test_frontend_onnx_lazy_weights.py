"""Acceptance: a model's weights stay in their file until numbers are asked for.

A Llama decoder written by torch.onnx from the meta device (2 layers, hidden 64: the
bench's 7B one at a small configuration, engine.relay.testing.llama_export) with its
weights in an external data file, and ResNet-50's file with its weights inline:
- importing from the path leaves every big initializer memory-mapped (a LazySource);
- relay.build at O3 (FoldConstant folds the weight transposes, FuseOps, LowerTE, graph
  codegen) reads none of them: the folded weights are deferred computations, unread too;
- the interpreter, asked for numbers, computes them and matches onnxruntime;
- a model without a path (bytes, an upload's world) refuses external data as before.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import pytest
from shared_models import llama_small_path, model_path

import engine as tvm
from engine import relay
from engine.ir.expr import Constant
from engine.ir.traversal import post_order
from engine.relay.frontend.common import UnsafeModelError
from engine.relay.frontend.onnx.weights import MAP_MIN_BYTES
from engine.relay.interpreter import evaluate
from engine.runtime.lazy import LazySource

for _package in ("torch", "transformers", "onnxscript", "onnxruntime"):
    if importlib.util.find_spec(_package) is None:
        pytest.skip(f"{_package} is not installed", allow_module_level=True)

pytestmark = [pytest.mark.torch]


@pytest.fixture(scope="module")
def llama() -> str:
    return str(llama_small_path())


def constants(mod: tvm.IRModule) -> list[Constant]:
    return [node for _, fn in mod.items() for node in post_order(fn)
            if isinstance(node, Constant)]


def lazy_sources(mod: tvm.IRModule) -> list[LazySource]:
    return [c.data.lazy for c in constants(mod) if c.data.lazy is not None]


def test_big_initializers_are_memory_mapped(llama: str) -> None:
    result = relay.frontend.load(llama)
    proto = onnx.load(llama, load_external_data=False)
    big = {t.name for t in proto.graph.initializer
           if np.prod(t.dims) * 2 >= MAP_MIN_BYTES}  # float16
    mapped = [c for c in constants(result.mod) if c.data.lazy is not None]
    assert len(mapped) == len(big) >= 16  # 7 projections per layer, embedding, lm_head
    assert all(c.data.lazy.key[0] == "file" and c.data.lazy.reads == 0 for c in mapped)
    assert isinstance(mapped[0].data.numpy(), np.memmap)  # read on demand: a map, no copy


def test_o3_build_reads_no_weight(llama: str) -> None:
    result = relay.frontend.load(llama)
    imported = lazy_sources(result.mod)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(result.mod, target="llvm")
    built = lazy_sources(lib.ir_mod) + [p.lazy for p in lib.get_params().values()
                                        if p.lazy is not None]
    deferred = [s for s in built if s.key[0] == "fold"]
    assert deferred, "FoldConstant should fold the weight transposes (deferred)"
    assert all(s.reads == 0 for s in imported + built)
    text = lib.ir_mod.astext(show_meta_data=False)
    assert "meta[relay.Constant]" in text  # printed by reference, never by value


def test_numbers_on_demand_match_onnxruntime(llama: str) -> None:
    import onnxruntime as ort

    result = relay.frontend.load(llama)
    ids = (np.arange(16, dtype=np.int64) * 37 % 1000).reshape(1, 16)
    with tvm.transform.PassContext(opt_level=3):
        optimized = relay.optimize(result.mod, target="llvm")[0]
    ours = np.asarray(evaluate(optimized, {"input_ids": ids}), dtype=np.float32)
    ref = ort.InferenceSession(llama, providers=["CPUExecutionProvider"]).run(
        None, {"input_ids": ids})[0].astype(np.float32)
    np.testing.assert_allclose(ours, ref, rtol=2e-2, atol=2e-3)
    assert any(s.reads for s in lazy_sources(optimized))  # the numbers were computed


def test_inline_weights_are_mapped_from_the_file() -> None:
    path = model_path("resnet50")
    result = relay.frontend.load(str(path))
    mapped = lazy_sources(result.mod)
    assert sum(s.nbytes for s in mapped) > 90 * 2**20  # ResNet-50's 98 MB, left in place
    assert all(s.key[1] == str(path.resolve()) for s in mapped)


def test_bytes_refuse_external_data(llama: str) -> None:
    with open(llama, "rb") as handle:
        data = handle.read()
    with pytest.raises(UnsafeModelError, match="external"):
        relay.frontend.load(data)
    with pytest.raises(UnsafeModelError, match="external"):
        relay.frontend.load(llama, external_data=False)
