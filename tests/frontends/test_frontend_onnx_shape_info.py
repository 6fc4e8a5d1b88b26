"""Where onnx's shape inference leaves a dim unknown, the importer asks the converted
expression: a shape computed by a Where (as TorchScript-exported attention masks compute
their Expand's shape) is folded at import time, so the Expand's output is static for us
although onnx sees `(?, 2, 4)`."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from engine.relay.frontend.onnx import import_onnx
from engine.relay.frontend.onnx.shapes import infer_tensor_info, light_model
from engine.relay.interpreter import evaluate


def _const(name: str, value: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value))


def _where_shaped_expand() -> onnx.ModelProto:
    nodes = [
        _const("keep", np.array([True, True, True])),
        _const("wanted", np.array([3, 2, 4], "int64")),
        _const("ones", np.array([1, 1, 1], "int64")),
        helper.make_node("Where", ["keep", "wanted", "ones"], ["shape"], name="where"),
        helper.make_node("Expand", ["x", "shape"], ["y"], name="expand"),
        helper.make_node("MatMul", ["y", "w"], ["z"], name="matmul"),  # needs y's batch dim
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4, 5])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_inference_leaves_the_expanded_dim_unknown() -> None:
    model = _where_shaped_expand()
    info, _ = infer_tensor_info(light_model(model, {}, list(model.graph.node)))
    assert info["y"][0] == (None, 2, 4)


def test_the_converted_expression_gives_the_dim() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 4)).astype("float32")
    w = rng.standard_normal((3, 4, 5)).astype("float32")
    result = import_onnx(_where_shaped_expand())
    got = np.asarray(evaluate(result.mod, {"x": x, "w": w}))
    np.testing.assert_allclose(got, np.broadcast_to(x, (3, 2, 4)) @ w, rtol=1e-5)
