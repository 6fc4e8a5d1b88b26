"""ONNX's integer ops (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv): exact int32
accumulation, then (QLinear*) float32 requantization rounding half to even and saturating.

onnxruntime is the reference where it is exact: on x86 without VNNI its uint8 x int8 kernels
saturate int16 partial sums, so that pairing is checked against numpy's int64 product."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from frontend_helpers import run_module
from onnx import TensorProto, helper, numpy_helper

from engine.relay import frontend

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(5)


def _q(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _model(op: str, inputs: list[str], feeds: dict[str, np.ndarray],
           inits: dict[str, np.ndarray], out_type: int, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, inputs, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", out_type, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    result = frontend.load(model.SerializeToString())
    return run_module(result.mod, feeds)[0]


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_matches_onnxruntime(dtype: type, per_channel: bool) -> None:
    """Padding, strides and groups; an int32 bias; w's scale and zero point per channel."""
    x, w = _q((2, 6, 7, 7), dtype), _q((4, 3, 3, 3), dtype)
    inits = {"xs": np.array(0.02, "float32"), "xz": np.array(3, dtype), "w": w,
             "ws": (RNG.random(4) * 0.01 + 1e-3).astype("float32") if per_channel
             else np.array(0.005, "float32"),
             "wz": np.array([0, 1, 2, 3] if per_channel else 1, dtype),
             "ys": np.array(0.07, "float32"), "yz": np.array(5, dtype),
             "b": RNG.integers(-500, 500, 4).astype("int32")}
    model = _model("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                   {"x": x}, inits, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                   pads=[1, 1, 1, 1], strides=[2, 1], group=2)
    _assert_same(_ours(model, {"x": x}), _ort(model, {"x": x}))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shapes", [((5, 7), (7, 3)), ((2, 5, 7), (7, 3)),
                                    ((2, 5, 7), (2, 7, 3))])
def test_qlinear_matmul_matches_onnxruntime(dtype: type, shapes) -> None:
    a, b = _q(shapes[0], dtype), _q(shapes[1], dtype)
    inits = {"as": np.array(0.03, "float32"), "az": np.array(7, dtype),
             "bs": np.array(0.02, "float32"), "bz": np.array(2, dtype),
             "ys": np.array(0.9, "float32"), "yz": np.array(10, dtype)}
    model = _model("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                   {"a": a, "b": b}, inits, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    _assert_same(_ours(model, {"a": a, "b": b}), _ort(model, {"a": a, "b": b}))


def test_matmul_integer_is_exact_per_row_and_column_zero_points() -> None:
    """uint8 x int8 (onnxruntime's x86 kernel saturates here): numpy's int64 product."""
    a, b = _q((4, 9), np.uint8), _q((9, 3), np.int8)
    a_zp, b_zp = np.array([1, 2, 3, 4], np.uint8), np.array([-1, 0, 5], np.int8)
    model = _model("MatMulInteger", ["a", "b", "az", "bz"], {"a": a, "b": b},
                   {"az": a_zp, "bz": b_zp}, TensorProto.INT32)
    want = (a.astype(np.int64) - a_zp[:, None]) @ (b.astype(np.int64) - b_zp)
    _assert_same(_ours(model, {"a": a, "b": b}), want.astype(np.int32))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_conv_integer_matches_onnxruntime(dtype: type) -> None:
    """The padding holds x's zero point (a zero after the shift)."""
    x, w = _q((1, 4, 6, 6), dtype), _q((6, 2, 3, 3), dtype)
    model = _model("ConvInteger", ["x", "w", "xz", "wz"], {"x": x},
                   {"w": w, "xz": np.array(4, dtype), "wz": np.array(2, dtype)},
                   TensorProto.INT32, pads=[1, 0, 1, 2], group=2, dilations=[2, 1])
    _assert_same(_ours(model, {"x": x}), _ort(model, {"x": x}))


def test_requantization_rounds_half_to_even() -> None:
    """1 x 1 products landing on .5 after scaling: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0."""
    a = np.array([[1], [3], [5], [-1]], np.int8)
    b = np.array([[1]], np.int8)
    inits = {"as": np.array(0.5, "float32"), "az": np.array(0, np.int8),
             "bs": np.array(1.0, "float32"), "bz": np.array(0, np.int8),
             "ys": np.array(1.0, "float32"), "yz": np.array(0, np.int8)}
    model = _model("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                   {"a": a, "b": b}, inits, TensorProto.INT8)
    _assert_same(_ours(model, {"a": a, "b": b}), np.array([[0], [2], [2], [0]], np.int8))
