"""The ONNX converters added for the zoo, through the importer, against onnxruntime:
activations, GatherND/GatherElements/CumSum/TopK/OneHot/Trilu, com.microsoft FastGelu,
BatchNormalization training_mode, Range with run-time bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from zoo_helpers import assert_close, evaluate, ort_outputs

from engine.relay.frontend.onnx import import_onnx

RNG = np.random.default_rng(5)


def one_node(op: str, feeds: dict[str, np.ndarray], opset: int,
             consts: dict[str, np.ndarray] | None = None, n_out: int = 1, domain: str = "",
             **attrs: Any) -> onnx.ModelProto:
    consts = consts or {}
    node = helper.make_node(op, [*feeds, *consts], [f"y{i}" for i in range(n_out)],
                            name=f"{op}_node", domain=domain, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in feeds.items()],
        [helper.make_empty_tensor_value_info(f"y{i}") for i in range(n_out)],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()])
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return typed(helper.make_model(graph, opset_imports=opsets))


def typed(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its outputs' types filled by onnx shape inference."""
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    expected = ort_outputs(model, feeds)
    assert_close(evaluate(import_onnx(model).mod, feeds), expected)


X = (RNG.standard_normal((2, 3, 4)) * 3).astype("float32")

ACTIVATIONS = [("Softplus", 13, {}), ("Softsign", 13, {}), ("HardSwish", 14, {}),
               ("Elu", 13, {"alpha": 0.7}), ("Selu", 13, {}), ("Celu", 13, {"alpha": 1.5}),
               ("Mish", 18, {}), ("ThresholdedRelu", 13, {"alpha": 0.5})]


@pytest.mark.parametrize("op,opset,attrs", ACTIVATIONS)
def test_activation_converters_match_ort(op, opset, attrs) -> None:
    check(one_node(op, {"x": X}, opset, **attrs), {"x": X})


def test_softplus_is_stable_for_large_inputs() -> None:
    x = np.array([-100.0, -1.0, 0.0, 1.0, 100.0], "float32")
    check(one_node("Softplus", {"x": x}, 13), {"x": x})


def test_microsoft_fast_gelu_with_bias() -> None:
    bias = RNG.standard_normal(4).astype("float32")
    model = one_node("FastGelu", {"x": X}, 13, {"b": bias}, domain="com.microsoft")
    del model.graph.output[:]  # onnx cannot infer contrib ops: declare the output as ORT does
    model.graph.output.append(helper.make_tensor_value_info("y0", TensorProto.FLOAT, X.shape))
    check(model, {"x": X})


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_converter(batch_dims) -> None:
    data = RNG.standard_normal((2, 3, 4)).astype("float32")
    idx = np.array([[[1, -1], [0, 2]], [[1, 2], [-2, 0]]], "int64")[..., : 2 - batch_dims]
    model = one_node("GatherND", {"d": data}, 13, {"i": idx}, batch_dims=batch_dims)
    check(model, {"d": data})


def test_gather_elements_converter_wraps_negative_indices() -> None:
    idx = np.array([[0, -1, 2, 1], [1, 1, -3, 0], [2, 0, 0, 1]], "int64").reshape(1, 3, 4)
    idx = np.repeat(idx, 2, axis=0)
    check(one_node("GatherElements", {"x": X}, 13, {"i": idx}, axis=1), {"x": X})


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 1)])
def test_cumsum_converter_with_runtime_input(exclusive, reverse) -> None:
    model = one_node("CumSum", {"x": X}, 14, {"axis": np.array(-1, "int64")},
                     exclusive=exclusive, reverse=reverse)
    check(model, {"x": X})


@pytest.mark.parametrize("opset", [9, 11])
def test_topk_converter_both_outputs(opset) -> None:
    x = np.round(X, 1)
    if opset < 10:
        model = one_node("TopK", {"x": x}, opset, n_out=2, k=2, axis=1)
    else:
        model = one_node("TopK", {"x": x}, opset, {"k": np.array([2], "int64")}, n_out=2,
                         axis=1, largest=0)
    check(model, {"x": x})


def test_one_hot_converter() -> None:
    idx = np.array([[0, 3, -1], [2, 1, -4]], "int64")
    model = one_node("OneHot", {"i": idx}, 11,
                     {"depth": np.array(4, "int64"), "values": np.array([-1.0, 2.0], "f")},
                     axis=1)
    check(model, {"i": idx})


@pytest.mark.parametrize("upper,k", [(1, 0), (0, -1), (1, 2)])
def test_trilu_converter(upper, k) -> None:
    x = RNG.standard_normal((2, 4, 5)).astype("float32")
    check(one_node("Trilu", {"x": x}, 14, {"k": np.array(k, "int64")}, upper=upper), {"x": x})


def test_batch_norm_training_mode_uses_batch_statistics() -> None:
    x = RNG.standard_normal((4, 3, 5, 5)).astype("float32") * 2 + 1
    params = {"s": np.array([1.0, 0.5, 2.0], "f"), "b": np.array([0.0, 1.0, -1.0], "f"),
              "m": np.zeros(3, "f"), "v": np.ones(3, "f")}
    model = one_node("BatchNormalization", {"x": x}, 15, params, n_out=3, training_mode=1,
                     momentum=0.8)
    check(model, {"x": x})


def test_range_with_runtime_bounds() -> None:
    limit = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    node = helper.make_node("Range", ["start", "n", "step"], ["y"], name="range")
    graph = helper.make_graph([node], "g", [limit], [helper.make_empty_tensor_value_info("y")],
                              initializer=[numpy_helper.from_array(np.array(1, "int64"), "start"),
                                           numpy_helper.from_array(np.array(2, "int64"), "step")])
    model = typed(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    check(model, {"n": np.array(8, "int64")})
