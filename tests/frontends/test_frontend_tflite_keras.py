"""Keras applications converted by TensorFlow's TFLiteConverter (MobileNetV2, MobileNetV3-Small,
EfficientNet-B0, ResNet-50 and a transformer block; seeded random weights), as float32,
float16 weights, dynamic-range and full-integer models.

The files and TFLite's own outputs come from `make tflite-models` (bench/make_tflite_models.py
in a TensorFlow venv, cached in bench/models/tflite/); generating them takes minutes, so they
are not part of `make test` and these tests skip when the cache is missing.

Tolerances against TFLite's builtin kernels: float32 and float16 rtol 1e-3 (fp16 weights are
dequantized to float32 once, as TFLite does); dynamic-range: the hybrid kernels compute as
TFLite's do, bit for bit when their float inputs agree bit for bit, but an ulp of difference
in a float op before them (LOGISTIC, MEAN, ...) can flip one activation's rounding and move
an output by one quantization step, so they are held to 2 % of the largest output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_helpers import assert_fully_spanned
from tflite_cases import TFLiteCase, assert_near, run_case

from engine.relay.frontend import load
from engine.relay.frontend.common import ConversionError
from engine.relay.frontend.tflite.model import parse_tflite

CACHE = Path(__file__).resolve().parents[2] / "bench" / "models" / "tflite"
MODELS = ["mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "resnet50",
          "transformer_block"]
VARIANTS = ["float32", "float16", "dynamic"]
TOLERANCE = {"float32": (1e-3, 1e-5), "float16": (1e-3, 1e-5), "dynamic": (1e-3, 2e-2)}
# dynamic-range models whose hybrid kernels see bit-identical float inputs: TFLite's numbers
# to the last bits (MobileNetV3-Small's only difference is 3e-8 in its own float ops)
EXACT_HYBRID = {"mobilenet_v2_dynamic": (1e-5, 1e-6), "resnet50_dynamic": (1e-5, 1e-6),
                "mobilenet_v3_small_dynamic": (1e-5, 1e-6)}


def _cached(stem: str) -> tuple[Path, dict[str, np.ndarray]]:
    path = CACHE / f"{stem}.tflite"
    if not path.exists():
        pytest.skip(f"{path.name} is not generated: run `make tflite-models` (TensorFlow in "
                    ".venv-tf; several minutes)")
    with np.load(path.with_suffix(".npz")) as data:
        return path, {k: data[k] for k in data.files}


@pytest.fixture(scope="module", params=[f"{m}_{v}" for m in MODELS for v in VARIANTS])
def case(request: pytest.FixtureRequest) -> tuple[str, TFLiteCase, dict[str, np.ndarray]]:
    path, data = _cached(request.param)
    feeds = {k[3:]: v for k, v in data.items() if k.startswith("in:")}
    return request.param, run_case(path, feeds), data


def _expected(case: TFLiteCase, data: dict[str, np.ndarray], prefix: str = "out:"
              ) -> list[np.ndarray]:
    return [data[prefix + o["name"]] for o in case.result.graph["outputs"]]


def test_matches_tflite(case) -> None:
    stem, run, data = case
    rtol, scale_atol = EXACT_HYBRID.get(stem) or TOLERANCE[stem.rsplit("_", 1)[1]]
    expected = _expected(run, data)
    for outputs in (run.outputs, run.optimized, run.built):
        assert_near(outputs, expected, rtol, scale_atol)


def test_o3_keeps_every_span_and_names_tensors(case) -> None:
    _, run, _ = case
    assert len(run.coverage.passes) > 10
    assert run.coverage.failures == []
    assert_fully_spanned(run.result)


def test_dynamic_range_models_keep_int8_weights() -> None:
    path, _ = _cached("mobilenet_v2_dynamic")
    text = load(path).mod.astext(show_meta_data=False)
    assert 'out_dtype="int32"' in text and "nn.conv2d" in text
    assert "float64" in text  # the asymmetric zero point is chosen in double, as TFLite does


@pytest.mark.parametrize("model", MODELS)
def test_full_integer_models_are_read_and_refused_by_name(model: str) -> None:
    path, _ = _cached(f"{model}_int8")
    graph = parse_tflite(path.read_bytes())
    quantized = [t for t in graph.tensors if t.quant is not None and t.dtype == "int8"]
    assert quantized
    per_axis = [t for t in quantized if t.quant is not None and t.quant.scale.size > 1]
    if model != "transformer_block":
        assert per_axis and all(t.quant is not None and t.quant.scale.size == t.shape[
            t.quant.axis] for t in per_axis)
    with pytest.raises(ConversionError, match="integer kernels are not converted yet"):
        load(path)
