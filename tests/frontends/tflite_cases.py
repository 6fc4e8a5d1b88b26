"""One TFLite model taken through everything the acceptance asks: import, the O3 pipeline with
span coverage checked after every pass, relay.build and a run of the built module."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.relay.frontend import load
from engine.relay.frontend.result import ImportResult
from engine.relay.interpreter import evaluate
from engine.relay.testing.coverage import CoverageCheck
from engine.relay.transform.pipeline import standard_pipeline


@dataclass
class TFLiteCase:
    path: Path
    result: ImportResult
    feeds: dict[str, np.ndarray]
    coverage: CoverageCheck
    outputs: list[np.ndarray]  # the interpreter on the imported module
    optimized: list[np.ndarray]  # the interpreter on the O3 module
    built: list[np.ndarray]  # relay.build's graph executor


def _listed(out: Any) -> list[np.ndarray]:
    items = out if isinstance(out, (list, tuple)) else [out]
    return [np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in items]


def _built(result: ImportResult, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(result.mod, target="llvm", params=result.params)
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in feeds.items():
        module.set_input(name, value)
    module.run()
    return [module.get_output(i).numpy() for i in range(module.get_num_outputs())]


def run_case(path: Path, feeds: dict[str, np.ndarray] | None = None, seed: int = 0
             ) -> TFLiteCase:
    result = load(path)
    if feeds is None:
        rng = np.random.default_rng(seed)
        feeds = {i["name"]: rng.uniform(-1, 1, size=i["shape"]).astype("float32")
                 for i in result.graph["inputs"]}
    check = CoverageCheck()
    with tvm.transform.PassContext(opt_level=3, instruments=[check]):
        optimized = standard_pipeline(3, "llvm")(result.mod)
    return TFLiteCase(path, result, feeds, check, _listed(evaluate(result.mod, feeds)),
                      _listed(evaluate(optimized, feeds)), _built(result, feeds))


def assert_near(actual: list[np.ndarray], expected: list[np.ndarray], rtol: float,
                scale_atol: float) -> None:
    """Element-wise rtol, plus an absolute tolerance of `scale_atol` x max|expected|."""
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        atol = scale_atol * float(np.abs(want).max()) + 1e-6
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
