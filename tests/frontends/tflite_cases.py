"""One TFLite model taken through everything the acceptance asks: import, the O3 pipeline with
span coverage checked after every pass, relay.build and a run of the built module; and the
measure of a full-integer model's error, in its output's quantization steps (LSBs).

Shared by the TFLite tests and bench/bench_tflite_quantized.py (one copy of each helper).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.relay.frontend import load
from engine.relay.frontend.result import ImportResult
from engine.relay.frontend.tflite.model import parse_tflite
from engine.relay.interpreter import evaluate
from engine.relay.testing.coverage import CoverageCheck
from engine.relay.transform.pipeline import standard_pipeline

CACHE = Path(__file__).resolve().parents[2] / "bench" / "models" / "tflite"
"""bench/make_tflite_models.py's files (`make tflite-models`): <model>_<variant>.tflite and
.npz with its input (`in:`) and TFLite's outputs (`out:` builtin optimized kernels, `ref:`
reference kernels, `xnnpack:`)."""

KERAS_MODELS = ["mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "resnet50",
                "transformer_block"]
# what bench/make_tflite_models.py leaves out (UNRUNNABLE there): no reference outputs exist
NO_REFERENCE = {"transformer_block_int16x8": "TFLite 2.21's converter emits an int16 "
                "SQUARED_DIFFERENCE its own interpreter has no kernel for"}


def cached(stem: str) -> tuple[Path, dict[str, np.ndarray]]:
    """A cached model and its .npz arrays; FileNotFoundError when not generated."""
    path = CACHE / f"{stem}.tflite"
    if not path.exists():
        raise FileNotFoundError(f"{path.name} is not generated: run `make tflite-models` "
                                "(TensorFlow in .venv-tf; several minutes)")
    with np.load(path.with_suffix(".npz")) as data:
        return path, {k: data[k] for k in data.files}


def cached_feeds(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k[3:]: v for k, v in data.items() if k.startswith("in:")}


@dataclass
class TFLiteCase:
    path: Path
    result: ImportResult
    feeds: dict[str, np.ndarray]
    coverage: CoverageCheck
    outputs: list[np.ndarray]  # the interpreter on the imported module
    optimized: list[np.ndarray]  # the interpreter on the O3 module
    built: list[np.ndarray]  # relay.build's graph executor
    seconds: dict[str, float] = field(default_factory=dict)  # import_s, pipeline_s, build_s

    def expected(self, data: dict[str, np.ndarray], prefix: str = "out:") -> list[np.ndarray]:
        """TFLite's outputs in the .npz (`prefix` picks the kernels), in our output order."""
        return [data[prefix + o["name"]] for o in self.result.graph["outputs"]]


def _listed(out: Any) -> list[np.ndarray]:
    items = out if isinstance(out, (list, tuple)) else [out]
    return [np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in items]


def build(result: ImportResult) -> Any:
    """relay.build at O3 for llvm: the factory module."""
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(result.mod, target="llvm", params=result.params)


def optimize(result: ImportResult, check: CoverageCheck | None = None) -> Any:
    """The standard O3 pipeline on the import (what the explorer shows), instrumented."""
    with tvm.transform.PassContext(opt_level=3, instruments=[check] if check else []):
        return standard_pipeline(3, "llvm")(result.mod)


def _run_built(lib: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in feeds.items():
        module.set_input(name, value)
    module.run()
    return [module.get_output(i).numpy() for i in range(module.get_num_outputs())]


def run_case(path: Path, feeds: dict[str, np.ndarray] | None = None, seed: int = 0
             ) -> TFLiteCase:
    clock = time.perf_counter()
    result = load(path)
    seconds = {"import_s": time.perf_counter() - clock}
    if feeds is None:
        rng = np.random.default_rng(seed)
        feeds = {i["name"]: rng.uniform(-1, 1, size=i["shape"]).astype("float32")
                 for i in result.graph["inputs"]}
    check = CoverageCheck()
    clock = time.perf_counter()
    optimized = optimize(result, check)
    seconds["pipeline_s"], clock = time.perf_counter() - clock, time.perf_counter()
    lib = build(result)
    seconds["build_s"] = time.perf_counter() - clock
    return TFLiteCase(path, result, feeds, check, _listed(evaluate(result.mod, feeds)),
                      _listed(evaluate(optimized, feeds)), _run_built(lib, feeds), seconds)


def assert_near(actual: list[np.ndarray], expected: list[np.ndarray], rtol: float,
                scale_atol: float) -> None:
    """Element-wise rtol, plus an absolute tolerance of `scale_atol` x max|expected|."""
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        atol = scale_atol * float(np.abs(want).max()) + 1e-6
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def output_steps(path: Path) -> list[float]:
    """One quantization step of each model output: 1 for an integer output, the scale of
    the DEQUANTIZE input for a float one."""
    graph = parse_tflite(path.read_bytes())
    producer = {o: op for op in graph.ops for o in op.outputs}
    steps = []
    for index in graph.outputs:
        tensor = graph.tensors[index]
        op = producer[index]
        if tensor.dtype != "float32":
            steps.append(1.0)
            continue
        assert op.op_type == "DEQUANTIZE", f"{tensor.name} is not dequantized"
        quant = graph.tensors[op.inputs[0]].quant
        assert quant is not None
        steps.append(float(quant.scale.reshape(-1)[0]))
    return steps


def lsb_errors(outputs: list[np.ndarray], expected: list[np.ndarray], steps: list[float]
               ) -> list[float]:
    """Each output's largest difference from `expected`, in its quantization steps."""
    return [float(np.abs(got.astype("float64") - want.astype("float64")).max()) / step
            for got, want, step in zip(outputs, expected, steps, strict=True)]
