"""onnxruntime's quantized operators one node at a time: each converter against
onnxruntime's CPU kernel on seeded random 8-bit data, bit for bit.

QuantizeLinear / DequantizeLinear / QLinearConv / QLinearMatMul (default domain) and the
com.microsoft QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool,
QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat, QGemm and
MatMulIntegerToFloat, in int8 and uint8, per tensor and (where the op allows) per
channel, with the broadcasts onnxruntime's kernels treat apart (a one-element operand of
QLinearAdd). The importer's qnn ops are checked to be there (the dialect, not a float
composition, carries the quantized layers).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from engine.ir.expr import Call
from engine.relay.analysis import post_order_visit
from engine.relay.frontend.common import ConversionError
from engine.relay.frontend.onnx import import_onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_onnx_quantized import run_stages

ort = pytest.importorskip("onnxruntime")

MS = "com.microsoft"


def onnx_type(dtype: Any) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def quantized(rng: np.random.Generator, shape: Sequence[int], dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def scalar(value: Any, dtype: str) -> np.ndarray:
    return np.array(value, dtype=dtype)


def single_node(op: str, inputs: dict[str, np.ndarray], params: dict[str, np.ndarray],
                order: Sequence[str], out_dtype: Any, domain: str = "",
                **attrs: Any) -> onnx.ModelProto:
    """A one-node model: `inputs` are graph inputs, `params` initializers, `order` the
    node's input names ("" for an absent optional)."""
    node = helper.make_node(op, list(order), ["y"], domain=domain, **attrs)
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(k, onnx_type(v.dtype), list(v.shape))
         for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", onnx_type(out_dtype), None)],
        [numpy_helper.from_array(v, k) for k, v in params.items()])
    opsets = [helper.make_opsetid("", 19)] + ([helper.make_opsetid(MS, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets)


def onnxruntime_output(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


def check_exact(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> set[str]:
    """Our output, imported (the interpreter), after relay.build's O3 pipeline (which
    lowers the qnn ops) and built, equals onnxruntime's; the names of the imported ops."""
    expected = onnxruntime_output(model, inputs)
    result = import_onnx(model)
    ops: set[str] = set()
    post_order_visit(result.mod["main"], lambda e: ops.add(e.op.name)
                     if isinstance(e, Call) and hasattr(e.op, "name") else None)
    stages = run_stages(result, inputs)
    assert stages.coverage.failures == []
    for actual in (stages.before[0], stages.after[0], stages.built[0]):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
            continue
        diff = np.abs(actual.astype("int64") - expected.astype("int64"))
        assert diff.max() == 0, f"{np.count_nonzero(diff)} of {diff.size} differ (max {diff.max()})"
    return ops


DTYPES = ["int8", "uint8"]


def qparams(rng: np.random.Generator, dtype: str, prefix: str, scale: float
            ) -> dict[str, np.ndarray]:
    zp = int(rng.integers(-20, 20)) if dtype == "int8" else int(rng.integers(100, 150))
    return {f"{prefix}_scale": scalar(scale, "float32"), f"{prefix}_zp": scalar(zp, dtype)}


# --- default domain --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_quantize_dequantize_are_qnn_ops(dtype: str, per_channel: bool) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((2, 4, 5, 5)) * 3).astype("float32")
    scale = np.array([0.02, 0.05, 0.1, 0.03], "float32") if per_channel else scalar(0.04, "float32")
    zp = np.array([1, -3, 0, 7] if dtype == "int8" else [128, 120, 130, 140], dtype) \
        if per_channel else scalar(3 if dtype == "int8" else 128, dtype)
    params = {"s": scale, "z": zp}
    q = single_node("QuantizeLinear", {"x": x}, params, ["x", "s", "z"], dtype, axis=1)
    assert "qnn.quantize" in check_exact(q, {"x": x})
    xq = quantized(rng, x.shape, dtype)
    dq = single_node("DequantizeLinear", {"x": xq}, params, ["x", "s", "z"], "float32", axis=1)
    assert "qnn.dequantize" in check_exact(dq, {"x": xq})


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")
def test_quantize_with_an_infinite_scale_saturates_like_onnxruntime() -> None:
    # onnxruntime's MinMax calibration writes scale=inf for a tensor holding -inf; MLAS
    # sends the NaN quotient (-inf / inf) to the low bound
    x = np.array([[-np.inf, 0.0, 1.0, -3e38]], "float32")
    model = single_node("QuantizeLinear", {"x": x}, {"s": scalar(np.inf, "float32"),
                                                     "z": scalar(0, "int8")},
                        ["x", "s", "z"], "int8")
    check_exact(model, {"x": x})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_qlinear_conv_is_qnn_conv2d(dtype: str, per_channel: bool) -> None:
    rng = np.random.default_rng(2)
    x = quantized(rng, (1, 3, 9, 9), dtype)
    w = quantized(rng, (4, 3, 3, 3), "int8") // 2  # 7-bit weights (see make_onnx_quantized)
    params = {"w": w, "bias": rng.integers(-500, 500, 4).astype("int32"),
              "w_scale": np.asarray(rng.uniform(0.001, 0.01, 4) if per_channel else 0.004, "float32"),
              "w_zp": np.zeros(4 if per_channel else (), "int8"),
              **qparams(rng, dtype, "x", 0.05), **qparams(rng, dtype, "y", 0.2)}
    model = single_node("QLinearConv", {"x": x}, params,
                        ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp",
                         "bias"], dtype, pads=[1, 1, 1, 1], strides=[2, 2])
    assert "qnn.conv2d" in check_exact(model, {"x": x})


@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_matmul_is_qnn_dense(dtype: str) -> None:
    rng = np.random.default_rng(3)
    a = quantized(rng, (2, 5, 16), dtype)
    params = {"b": quantized(rng, (16, 6), "int8") // 2, "b_scale": scalar(0.01, "float32"),
              "b_zp": scalar(0, "int8"), **qparams(rng, dtype, "a", 0.05),
              **qparams(rng, dtype, "y", 0.3)}
    model = single_node("QLinearMatMul", {"a": a}, params,
                        ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"],
                        dtype)
    assert "qnn.dense" in check_exact(model, {"a": a})


# --- com.microsoft ---------------------------------------------------------------------
BINARY_SHAPES = [((2, 8, 37), (2, 8, 37)), ((2, 8, 37), (37,)), ((2, 8, 37), (1,)),
                 ((1,), (3, 40))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_qlinear_binary(dtype: str, op: str, shapes: tuple) -> None:
    rng = np.random.default_rng(4)
    a, b = quantized(rng, shapes[0], dtype), quantized(rng, shapes[1], dtype)
    params = {**qparams(rng, dtype, "a", 0.031), **qparams(rng, dtype, "b", 0.017),
              **qparams(rng, dtype, "c", 0.043 if op == "QLinearAdd" else 0.11)}
    model = single_node(op, {"a": a, "b": b}, params,
                        ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c_scale", "c_zp"],
                        dtype, domain=MS)
    check_exact(model, {"a": a, "b": b})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
def test_qlinear_table_activations(dtype: str, op: str) -> None:
    rng = np.random.default_rng(6)
    x = quantized(rng, (4, 64), dtype)
    params = {**qparams(rng, dtype, "x", 0.05), **qparams(rng, dtype, "y", 0.004)}
    model = single_node(op, {"x": x}, params, ["x", "x_scale", "x_zp", "y_scale", "y_zp"],
                        dtype, domain=MS)
    check_exact(model, {"x": x})


@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_softmax(dtype: str) -> None:
    rng = np.random.default_rng(7)
    x = quantized(rng, (2, 4, 16, 16), dtype)
    y_zp = -128 if dtype == "int8" else 0
    params = {**qparams(rng, dtype, "x", 0.08), "y_scale": scalar(1 / 256, "float32"),
              "y_zp": scalar(y_zp, dtype)}
    model = single_node("QLinearSoftmax", {"x": x}, params,
                        ["x", "x_scale", "x_zp", "y_scale", "y_zp"], dtype, domain=MS,
                        axis=-1, opset=13)
    check_exact(model, {"x": x})


@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_concat(dtype: str) -> None:
    rng = np.random.default_rng(8)
    a, b = quantized(rng, (1, 3, 4, 4), dtype), quantized(rng, (1, 5, 4, 4), dtype)
    params = {**qparams(rng, dtype, "y", 0.05), **qparams(rng, dtype, "a", 0.03),
              **qparams(rng, dtype, "b", 0.08)}
    model = single_node("QLinearConcat", {"a": a, "b": b}, params,
                        ["y_scale", "y_zp", "a", "a_scale", "a_zp", "b", "b_scale", "b_zp"],
                        dtype, domain=MS, axis=1)
    check_exact(model, {"a": a, "b": b})


POOLS = [("QLinearGlobalAveragePool", (2, 24, 7, 7), {}),
         ("QLinearAveragePool", (1, 4, 8, 8),
          {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("op", "shape", "attrs"), POOLS, ids=[p[0] for p in POOLS])
def test_qlinear_pools(dtype: str, op: str, shape: tuple, attrs: dict) -> None:
    rng = np.random.default_rng(5)
    x = quantized(rng, shape, dtype)
    params = {**qparams(rng, dtype, "x", 0.05), **qparams(rng, dtype, "y", 0.02)}
    model = single_node(op, {"x": x}, params, ["x", "x_scale", "x_zp", "y_scale", "y_zp"],
                        dtype, domain=MS, **attrs)
    check_exact(model, {"x": x})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("requantized", [True, False], ids=["quantized_out", "float_out"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_qgemm(dtype: str, requantized: bool, per_channel: bool) -> None:
    rng = np.random.default_rng(10)
    a = quantized(rng, (3, 32), dtype)
    b = quantized(rng, (10, 32), "int8") // 2
    params = {"b": b, "c": rng.integers(-300, 300, 10).astype("int32"),
              "b_scale": np.asarray(rng.uniform(0.001, 0.01, 10) if per_channel else 0.005,
                                    "float32"),
              "b_zp": np.zeros(10 if per_channel else (), "int8"),
              **qparams(rng, dtype, "a", 0.05), **qparams(rng, dtype, "y", 0.3)}
    order = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c"]
    if requantized:
        order += ["y_scale", "y_zp"]
    model = single_node("QGemm", {"a": a}, params, order,
                        dtype if requantized else "float32", domain=MS, transB=1,
                        alpha=0.75)
    assert "qnn.dense" in check_exact(model, {"a": a})


def test_matmul_integer_to_float() -> None:
    rng = np.random.default_rng(11)
    a = quantized(rng, (2, 3, 16), "uint8")
    params = {"b": quantized(rng, (16, 5), "int8") // 2, "a_scale": scalar(0.02, "float32"),
              "b_scale": rng.uniform(0.001, 0.01, 5).astype("float32"),
              "a_zp": scalar(131, "uint8"), "b_zp": np.zeros(5, "int8"),
              "bias": rng.standard_normal(5).astype("float32")}
    model = single_node("MatMulIntegerToFloat", {"a": a}, params,
                        ["a", "b", "a_scale", "b_scale", "a_zp", "b_zp", "bias"], "float32",
                        domain=MS)
    check_exact(model, {"a": a})


def test_a_per_channel_scale_where_one_is_required_is_named() -> None:
    rng = np.random.default_rng(12)
    a = quantized(rng, (4, 8), "int8")
    params = {"a_scale": np.full(4, 0.1, "float32"), "a_zp": scalar(0, "int8"),
              **qparams(rng, "int8", "b", 0.1), **qparams(rng, "int8", "c", 0.1)}
    model = single_node("QLinearAdd", {"a": a, "b": a}, params,
                        ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c_scale", "c_zp"],
                        "int8", domain=MS)
    with pytest.raises(ConversionError, match=r"QLinearAdd.*a_scale.*one element"):
        import_onnx(model)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_dynamic_quantize_matmul(per_channel: bool) -> None:
    rng = np.random.default_rng(13)
    a = rng.standard_normal((2, 3, 16)).astype("float32")
    params = {"b": quantized(rng, (16, 5), "int8") // 2,
              "b_scale": np.asarray(rng.uniform(0.001, 0.01, 5) if per_channel else 0.004,
                                    "float32"),
              "b_zp": np.zeros(5 if per_channel else (), "int8"),
              "bias": rng.standard_normal(5).astype("float32")}
    model = single_node("DynamicQuantizeMatMul", {"a": a}, params,
                        ["a", "b", "b_scale", "b_zp", "bias"], "float32", domain=MS)
    check_exact(model, {"a": a})


# --- batched and dynamic integer products ------------------------------------------------
BATCHED = [((2, 3, 5, 16), (2, 3, 16, 6)),  # attention: (batch, heads, tokens, dims)
           ((2, 1, 5, 16), (3, 16, 6)),  # leading dims broadcast
           ((16,), (4, 16, 6)),  # a vector against a batch
           ((4, 5, 16), (16,))]  # a batch against a vector


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", BATCHED, ids=lambda s: f"{s[0]}x{s[1]}")
def test_batched_qlinear_matmul_is_qnn_batch_matmul(dtype: str, shapes: tuple) -> None:
    """Both operands run-time activations (attention's Q @ K^T and P @ V); a 1-D b is a
    dense of one unit."""
    rng = np.random.default_rng(14)
    a, b = quantized(rng, shapes[0], dtype), quantized(rng, shapes[1], dtype) // 2
    params = {**qparams(rng, dtype, "a", 0.05), **qparams(rng, dtype, "b", 0.02),
              **qparams(rng, dtype, "y", 0.6)}
    model = single_node("QLinearMatMul", {"a": a, "b": b}, params,
                        ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"],
                        dtype)
    ops = check_exact(model, {"a": a, "b": b})
    kernel = "qnn.dense" if len(shapes[1]) == 1 else "qnn.batch_matmul"
    assert {kernel, "qnn.requantize"} <= ops and "nn.batch_matmul" not in ops


def test_qlinear_matmul_with_a_zero_point_per_row_stays_integer_relay() -> None:
    """qnn.batch_matmul takes per-tensor zero points only: a per-row one of a is the int32
    matmul of the shifted operands."""
    rng = np.random.default_rng(15)
    a, b = quantized(rng, (2, 4, 8), "uint8"), quantized(rng, (2, 8, 3), "uint8") // 2
    params = {"a_scale": scalar(0.05, "float32"), "a_zp": np.array([120, 125, 130, 135], "uint8"),
              **qparams(rng, "uint8", "b", 0.02), **qparams(rng, "uint8", "y", 0.4)}
    model = single_node("QLinearMatMul", {"a": a, "b": b}, params,
                        ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"],
                        "uint8")
    result = import_onnx(model)
    ops: set[str] = set()
    post_order_visit(result.mod["main"], lambda e: ops.add(e.op.name)
                     if isinstance(e, Call) and hasattr(e.op, "name") else None)
    assert "nn.batch_matmul" in ops and "qnn.batch_matmul" not in ops


@pytest.mark.parametrize(("a_shape", "b_shape", "kernel"),
                         [((3, 5, 16), (16, 6), "qnn.dense"),
                          ((2, 3, 5, 16), (2, 3, 16, 6), "qnn.batch_matmul")])
def test_matmul_integer_with_run_time_zero_points_is_a_qnn_product(
        a_shape: tuple, b_shape: tuple, kernel: str) -> None:
    """Dynamic quantization's MatMulInteger: a's zero point computed at run time (a graph
    input here), no scales (the qnn op gets 1.0: its int32 product does not use them)."""
    rng = np.random.default_rng(16)
    a, b = quantized(rng, a_shape, "uint8"), quantized(rng, b_shape, "int8") // 2
    inputs = {"a": a, "a_zp": scalar(131, "uint8")}
    model = single_node("MatMulInteger", inputs, {"b": b, "b_zp": scalar(3, "int8")},
                        ["a", "b", "a_zp", "b_zp"], "int32")
    assert kernel in check_exact(model, inputs)


def test_conv_integer_with_a_run_time_zero_point_is_qnn_conv2d() -> None:
    rng = np.random.default_rng(17)
    x, w = quantized(rng, (1, 4, 7, 7), "uint8"), quantized(rng, (6, 2, 3, 3), "int8") // 2
    inputs = {"x": x, "x_zp": scalar(119, "uint8")}
    model = single_node("ConvInteger", inputs, {"w": w, "w_zp": scalar(0, "int8")},
                        ["x", "w", "x_zp", "w_zp"], "int32", pads=[1, 0, 1, 2], group=2,
                        strides=[2, 1])
    assert "qnn.conv2d" in check_exact(model, inputs)
