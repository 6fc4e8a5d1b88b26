"""Bad input is a clear FrontendError: corrupt, truncated, empty, not a model, gigantic,
unsupported ops (all listed), cycles, undefined tensors, external data outside the folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from engine.ir.errors import FrontendError, UnsupportedOperatorError
from engine.relay import frontend
from engine.relay.frontend import (
    CorruptModelError,
    DynamicShapeError,
    InvalidGraphError,
    TensorTooLargeError,
    UnknownFormatError,
    UnsafeModelError,
)


def _model(nodes, inputs=None, outputs=None, initializers=(), opset=13) -> onnx.ModelProto:
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])]
    outputs = outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _relu_bytes() -> bytes:
    return _model([helper.make_node("Relu", ["x"], ["y"], name="r")]).SerializeToString()


def test_empty_file() -> None:
    with pytest.raises(CorruptModelError, match="empty"):
        frontend.load(b"")


def test_truncated_onnx() -> None:
    data = _model([helper.make_node("Relu", ["x"], ["y"])], initializers=[
        numpy_helper.from_array(np.ones((64, 64), "float32"), "w")]).SerializeToString()
    with pytest.raises(CorruptModelError):
        frontend.load(data[: len(data) // 2])


def test_random_bytes_and_text_are_not_models() -> None:
    rng = np.random.default_rng(0)
    for blob in [rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(), b"hello, world\n" * 20,
                 b"\x89PNG\r\n\x1a\n" + bytes(100)]:
        with pytest.raises(FrontendError):
            frontend.load(blob)
    with pytest.raises(UnknownFormatError):
        frontend.load(b"\x89PNG\r\n\x1a\n" + bytes(100))


def test_a_valid_protobuf_without_a_graph() -> None:
    with pytest.raises(CorruptModelError, match="no graph"):
        frontend.load(onnx.ModelProto(ir_version=8).SerializeToString())


def test_unsupported_operators_are_listed_all_at_once() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("StringNormalizer", ["a"], ["b"]),
             helper.make_node("StringNormalizer", ["b"], ["c"]),
             helper.make_node("StringSplit", ["c"], ["y"])]
    with pytest.raises(UnsupportedOperatorError) as info:
        frontend.load(_model(nodes).SerializeToString())
    assert info.value.ops == {"StringNormalizer": 2, "StringSplit": 1}
    assert "StringNormalizer (x2)" in str(info.value) and "StringSplit (x1)" in str(info.value)
    assert ("unsupported: StringSplit (ai.onnx, opset 13) at node '#2 StringSplit'"
            in str(info.value))
    assert ("unsupported: StringNormalizer (ai.onnx, opset 13) at nodes "
            "'#0 StringNormalizer', '#1 StringNormalizer'") in str(info.value)


def test_custom_domain_op_is_unsupported() -> None:
    node = helper.make_node("FusedThing", ["x"], ["y"], domain="com.example")
    model = _model([node])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(UnsupportedOperatorError, match="com.example.FusedThing"):
        frontend.load(model.SerializeToString())


def test_cycle() -> None:
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["b"], name="second"),
             helper.make_node("Relu", ["a"], ["y"], name="out")]
    with pytest.raises(InvalidGraphError, match="cycle"):
        frontend.load(_model(nodes).SerializeToString())


def test_undefined_tensor() -> None:
    nodes = [helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")]
    with pytest.raises(InvalidGraphError, match="'adder'.*'ghost'"):
        frontend.load(_model(nodes).SerializeToString())


def test_gigantic_declared_input_is_refused() -> None:
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [65536, 65536, 4])]
    with pytest.raises(TensorTooLargeError, match="x"):
        frontend.load(_model([helper.make_node("Relu", ["x"], ["y"])],
                             inputs=inputs).SerializeToString())


def test_gigantic_initializer_dims_are_refused_before_allocation() -> None:
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20])
    tensor.raw_data = b"\x00" * 16
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])]
    with pytest.raises(TensorTooLargeError, match="'w'"):
        frontend.load(_model(nodes, initializers=[tensor]).SerializeToString())


def test_initializer_data_shorter_than_its_shape() -> None:
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4])
    tensor.raw_data = b"\x00" * 8
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])]
    with pytest.raises(FrontendError):
        frontend.load(_model(nodes, initializers=[tensor]).SerializeToString())


def _external_model(location: str) -> onnx.ModelProto:
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4])
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    return _model([helper.make_node("Add", ["x", "w"], ["y"])], initializers=[tensor])


def test_external_data_outside_the_model_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.ones(4, "float32").tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    for location in ["../secret.bin", str(secret)]:
        path = folder / "m.onnx"
        path.write_bytes(_external_model(location).SerializeToString())
        with pytest.raises(UnsafeModelError, match="outside"):
            frontend.load(path)


def test_external_data_inside_the_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(np.arange(4, dtype="float32").tobytes())
    path = tmp_path / "m.onnx"
    path.write_bytes(_external_model("w.bin").SerializeToString())
    result = frontend.load(path)
    const = result.mod["main"].body.args[1]
    np.testing.assert_array_equal(const.data.numpy(), np.arange(4, dtype="float32")[None])
    with pytest.raises(UnsafeModelError, match="external"):
        frontend.load(path.read_bytes())  # bytes have no folder to read from


def test_checker_complaint_is_a_warning_not_a_refusal() -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    model = _model([node])
    model.graph.node[0].attribute.append(helper.make_attribute("bogus", 1))
    result = frontend.load(model.SerializeToString())
    assert any("checker" in w and "bogus" in w for w in result.warnings)


def test_an_unread_optional_output_is_fine_a_read_one_is_named() -> None:
    """Inference-mode BatchNormalization of opset 13 declares the training outputs (the
    running mean, ...) it does not compute: fine unread, named when something reads one."""
    stats = [numpy_helper.from_array(np.full(2, v, np.float32), n)
             for n, v in (("g", 1.0), ("b", 0.0), ("m", 0.0), ("v", 1.0))]
    nodes = [helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"],
                              ["y", "run_mean"], name="bn")]
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4])]
    y = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4])]
    assert frontend.load(_model(nodes, inputs=x, outputs=y, initializers=stats)
                         .SerializeToString()).mod
    nodes.append(helper.make_node("Identity", ["run_mean"], ["z"], name="use"))
    z = [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])]
    with pytest.raises(frontend.ConversionError, match="output 1 .'run_mean'. of layer 'bn'"):
        frontend.load(_model(nodes, inputs=x, outputs=z, initializers=stats)
                      .SerializeToString())


def test_converter_problem_names_the_layer() -> None:
    nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="train_drop")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
              helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
              helper.make_tensor_value_info("t", TensorProto.BOOL, [])]
    with pytest.raises(frontend.ConversionError, match="train_drop.*Dropout"):
        frontend.load(_model(nodes, inputs=inputs).SerializeToString())


def test_corrupt_tflite() -> None:
    data = bytearray(b"\x18\x00\x00\x00TFL3" + bytes(64))
    data[0] = 0xF0  # root offset points past the end
    with pytest.raises(CorruptModelError):
        frontend.load(bytes(data))
    with pytest.raises(CorruptModelError):
        frontend.load(b"\x00\x00\x00\x00TFL3")


def test_zip_that_is_not_a_torch_export() -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(FrontendError):
        frontend.load(buffer.getvalue())


def test_a_static_shape_needed_of_a_dynamic_input_names_the_inputs_and_a_pin() -> None:
    """MatMul (lowered to dense) needs a static shape; with a symbolic batch the error names
    every dynamic input with its shape and a pin (each dynamic dim 1) that imports."""
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                   inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 4]),
                           helper.make_tensor_value_info("m", TensorProto.FLOAT, [None, 3])],
                   outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, 3])],
                   initializers=[w])
    with pytest.raises(DynamicShapeError, match=r"layer 'mm' \(MatMul\).*pin the model's "
                       r"dynamic inputs \(x \[batch, 2, 4\], m \[\?, 3\]\)") as caught:
        frontend.from_onnx(model)
    assert caught.value.inputs == {"x": ["batch", 2, 4], "m": ["?", 3]}
    assert caught.value.suggested == {"x": [1, 2, 4], "m": [1, 3]}
    mod, _ = frontend.from_onnx(model, shape=caught.value.suggested)
    assert "reshape(%2, newshape=[1, 2, 3]" in mod.astext()  # static now
