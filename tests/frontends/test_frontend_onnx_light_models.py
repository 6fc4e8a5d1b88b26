"""The nine classic models shipped in the onnx package (`onnx/backend/test/data/light`: IR
version 3, opset 9, weights made by ConstantOfShape, initializers listed as graph inputs,
Dropout with its mask output): each imports, runs through the O3 pipeline with 100 % span
coverage after every pass, and the interpreter matches the shipped expected output (the
input is onnx's own dummy input: arange / size, as its backend runner makes it).

The shipped outputs are uniform softmaxes (constant weights make every class equal), so
each model is also checked on its logits, whose value depends on the input and every layer (the last node's input, added as a graph output) against
onnxruntime on the same file. Each model is imported and optimized once per session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import engine as tvm
from engine.ir.module import IRModule
from engine.relay.analysis import span_coverage
from engine.relay.frontend.onnx import from_onnx
from engine.relay.interpreter import evaluate
from engine.relay.testing.coverage import CoverageCheck
from engine.relay.transform.pipeline import standard_pipeline

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
          "shufflenet", "squeezenet", "vgg19", "zfnet512"]
RTOL = {"densenet121": 2e-3}  # onnx's own tolerance for this model


@dataclass
class LightRun:
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    imported: IRModule
    optimized: IRModule
    coverage: CoverageCheck


def dummy_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """onnx's backend runner's input for the light models: arange(n) / n, float32."""
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for info in model.graph.input:
        if info.name in inits:
            continue
        shape = [d.dim_value or 1 for d in info.type.tensor_type.shape.dim]
        n = int(np.prod(shape))
        feeds[info.name] = (np.arange(n).reshape(shape) / n).astype("float32")
    return feeds


@pytest.fixture(scope="session")
def light_runs() -> Callable[[str], LightRun]:
    cache: dict[str, LightRun] = {}

    def run(name: str) -> LightRun:
        if name not in cache:
            model = onnx.load(str(LIGHT / f"light_{name}.onnx"))
            mod, params = from_onnx(model)
            assert not params
            check = CoverageCheck()
            with tvm.transform.PassContext(opt_level=3, instruments=[check]):
                optimized = standard_pipeline(3, "llvm")(mod)
            cache[name] = LightRun(model, dummy_feeds(model), mod, optimized, check)
        return cache[name]

    return run


def _expected(name: str) -> np.ndarray:
    tensor = onnx.load_tensor(str(LIGHT / f"light_{name}_output_0.pb"))
    return onnx.numpy_helper.to_array(tensor)


@pytest.mark.parametrize("name", MODELS)
def test_light_model_o3_keeps_every_span(name: str, light_runs: Callable[[str], LightRun]
                                         ) -> None:
    run = light_runs(name)
    assert len(run.coverage.passes) > 10
    assert run.coverage.failures == []
    assert span_coverage(run.imported).ratio == 1.0


@pytest.mark.parametrize("name", MODELS)
def test_light_model_matches_the_shipped_output(name: str,
                                                light_runs: Callable[[str], LightRun]) -> None:
    run = light_runs(name)
    expected = _expected(name)
    for mod in (run.imported, run.optimized):
        out = np.asarray(evaluate(mod, run.feeds))
        np.testing.assert_allclose(out, expected, rtol=RTOL.get(name, 1e-3), atol=1e-7)


def _with_logits(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    """The model with the input of its last node (the final Softmax, or DenseNet's last
    pooling) as a second graph output."""
    logits = model.graph.node[-1].input[0]
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.graph.output.append(onnx.helper.make_empty_tensor_value_info(logits))
    return copy, logits


@pytest.mark.parametrize("name", MODELS)
def test_light_model_logits_match_onnxruntime(name: str,
                                              light_runs: Callable[[str], LightRun]) -> None:
    run = light_runs(name)
    model, logits = _with_logits(run.model)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    want = session.run([logits], run.feeds)[0]
    mod, _ = from_onnx(model)
    got = np.asarray(evaluate(mod, run.feeds)[1])
    assert np.abs(want).max() > 1e-3  # an input-dependent value, unlike the softmax's 1/1000
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5 * float(np.abs(want).max()))
