"""`load()` picks the frontend by content (a file name only names Relay text that no magic
number claims); `describe()` summarizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from engine.ir import ParseError
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


_RELAY = """// a hand-written model: no version line, so only its name says it is Relay text
def @main(%x: Tensor[(1, 4), float32]) {
  nn.relu(%x) /* relu1 */
}
"""


@pytest.mark.parametrize("name", ["model.relay", "MODEL.TXT"])
def test_relay_text_files_load_by_name(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(_RELAY, encoding="utf-8")
    result = frontend.load(path)
    assert result.format == "relay" and result.params == {} and result.warnings == ()
    assert result.graph == {"outputs": [],
                            "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                            "layers": [{"name": "relu1", "op_type": "nn.relu", "inputs": ["x"],
                                        "outputs": ["relu1"], "attrs": {}}]}
    assert "relu1" in result.mod.astext()
    assert detect_format(_RELAY.encode(), "model.relay") == "relay"


def test_a_relay_name_does_not_override_a_magic_number(tmp_path: Path) -> None:
    path = tmp_path / "model.txt"
    path.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(32))
    assert detect_format(path.read_bytes(), path.name) == "tflite"


def test_relay_parse_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%x) {\n  nn.relu(%x\n}\n')
    with pytest.raises(ParseError) as info:
        frontend.load(path)
    assert info.value.source_name == "broken.relay"
    assert str(info.value).startswith("broken.relay:")


def test_relay_text_that_is_not_utf8_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "latin1.relay"
    path.write_bytes('#[version = "0.0.5"]\ndef @main() { 0 } // caf\xe9'.encode("latin-1"))
    with pytest.raises(frontend.CorruptModelError, match=r"not valid UTF-8 \(byte \d+: "):
        frontend.load(path)


def test_unreadable_relay_file_is_corrupt(tmp_path: Path) -> None:
    with pytest.raises(frontend.CorruptModelError, match="cannot read missing.relay"):
        frontend.load(tmp_path / "missing.relay")
