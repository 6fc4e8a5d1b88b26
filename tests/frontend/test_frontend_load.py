"""`load()` picks the frontend by content, not by file name; `describe()` summarizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from engine.relay import frontend
from engine.relay.frontend import detect_format


def _onnx_bytes() -> bytes:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def test_detects_formats_by_magic() -> None:
    assert detect_format(_onnx_bytes()) == "onnx"
    assert detect_format(b"\x1c\x00\x00\x00TFL3" + bytes(32)) == "tflite"
    assert detect_format(b"PK\x03\x04rest") == "pytorch"
    assert detect_format(b'#[version = "0.0.5"]\ndef @main() { 0 }') == "relay"
    assert detect_format(b"\n  def @main(%x) { %x }") == "relay"


def test_extension_is_ignored(tmp_path: Path) -> None:
    misleading = tmp_path / "model.tflite"
    misleading.write_bytes(_onnx_bytes())
    result = frontend.load(misleading)
    assert result.format == "onnx"
    assert result.graph["layers"][0]["name"] == "relu"


def test_describe_summarizes_an_import() -> None:
    summary = frontend.describe(_onnx_bytes())
    assert summary["format"] == "onnx"
    assert summary["num_layers"] == 1 and summary["op_types"] == {"Relu": 1}
    assert summary["inputs"] == [{"name": "x", "shape": [1, 4], "dtype": "float32"}]
    assert summary["outputs"] == [{"name": "y", "shape": [1, 4], "dtype": "float32"}]


def test_relay_text_round_trips_through_load() -> None:
    pytest.importorskip("engine.relay.parser")
    imported = frontend.load(_onnx_bytes())
    text = imported.mod.astext()
    again = frontend.load(text.encode())
    assert again.format == "relay"
    assert [i["name"] for i in again.graph["inputs"]] == ["x"]
    from frontend_helpers import run_module

    x = np.array([[-1.0, 2.0, -3.0, 4.0]], "float32")
    np.testing.assert_array_equal(run_module(again.mod, {"x": x})[0], np.maximum(x, 0))


def test_missing_path_is_a_frontend_error(tmp_path: Path) -> None:
    with pytest.raises(frontend.CorruptModelError, match="cannot read"):
        frontend.load(tmp_path / "nope.onnx")
