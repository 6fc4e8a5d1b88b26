"""ONNX's low-precision element types through from_onnx and the interpreter: Cast with
`saturate` and float8_e8m0's `round_mode`, QuantizeLinear/DequantizeLinear to and from int4,
int2, float8 and float4 (per tensor, per axis, blocked), packed sub-byte initializers, and
BitCast. onnx's reference evaluator is the oracle; values compare exactly."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from engine.relay import frontend
from engine.relay.interpreter import evaluate

F = TensorProto.FLOAT
SPECIAL = np.array([0.3, -1.7, 300.0, 500.0, 7e4, -1e6, np.inf, -np.inf, np.nan, -0.0, 1e-9],
                   "float32")


def _model(node: onnx.NodeProto, inputs: dict[str, np.ndarray],
           inits: dict[str, np.ndarray] | None = None, opset: int = 25) -> onnx.ModelProto:
    elem = helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        [node], "t",
        [helper.make_tensor_value_info(k, elem(v.dtype), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], TensorProto.UNDEFINED, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 11
    return model


def _run(node: onnx.NodeProto, inputs: dict[str, np.ndarray],
         inits: dict[str, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(ours, the reference's) for a one-node model."""
    model = _model(node, inputs, inits)
    mod, params = frontend.from_onnx(model)
    ours = np.asarray(evaluate(mod, {**inputs, **{k: v.numpy() for k, v in params.items()}}))
    want = ReferenceEvaluator(model).run(None, inputs)[0]
    return ours, want


def _same_values(ours: np.ndarray, want: Any) -> None:
    want = np.asarray(want)
    assert ours.dtype == want.dtype and ours.shape == want.shape
    np.testing.assert_array_equal(ours.astype("float32"), want.astype("float32"))


@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("to", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ,
                                TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ])
def test_cast_to_float8_saturates_or_overflows_as_the_spec_says(to: int, saturate: int) -> None:
    node = helper.make_node("Cast", ["x"], ["y"], to=to, saturate=saturate)
    _same_values(*_run(node, {"x": SPECIAL}))


def test_castlike_saturates_from_float16() -> None:
    node = helper.make_node("CastLike", ["x", "like"], ["y"])
    like = np.zeros(1, ml_dtypes.float8_e4m3fn)
    x = np.array([300.0, 500.0, 6e4, np.inf, -np.inf, np.nan], "float16")
    ours, want = _run(node, {"x": x, "like": like})
    _same_values(ours, want)
    np.testing.assert_array_equal(ours.astype("float32"), [288, 448, 448, 448, -448, np.nan])


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_cast_to_e8m0_rounds_by_mode(round_mode: str) -> None:
    x = np.array([0.0, 1.0, 1.1, 1.5, 1.49, 3.0, 2.0**-130, 6e37, 3e38], "float32")
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0,
                            round_mode=round_mode)
    _same_values(*_run(node, {"x": x}))


@pytest.mark.parametrize(("saturate", "want"), [(1, 2.0**127), (0, np.nan)])
def test_e8m0_infinity_follows_the_spec_table(saturate: int, want: float) -> None:
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0, saturate=saturate)
    model = _model(node, {"x": SPECIAL})
    mod, _ = frontend.from_onnx(model)
    out = np.asarray(evaluate(mod, {"x": np.array([np.inf, np.nan, 3e38], "float32")}))
    np.testing.assert_array_equal(out.astype("float32"), [want, np.nan, want])


@pytest.mark.parametrize("dtype", ["int4", "uint4", "int2", "uint2"])
def test_quantize_per_axis_to_sub_byte_ints(dtype: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(-20, 20, (2, 3, 4)).astype("float32")
    scale = np.array([0.5, 2.0, 8.0], "float32")
    zero = np.array([1, 0, 1], dtype)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    _same_values(*_run(node, {"x": x}, {"s": scale, "z": zero}))


def test_quantize_blocked_to_int4_and_back() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(-6, 6, (2, 6)).astype("float32")
    scale = np.array([[0.5, 1.0, 0.25], [2.0, 0.5, 1.0]], "float32")
    quant = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2,
                             output_dtype=TensorProto.INT4)
    ours, want = _run(quant, {"x": x}, {"s": scale})
    _same_values(ours, want)
    dequant = helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=1, block_size=2)
    _same_values(*_run(dequant, {"q": want}, {"s": scale}))


@pytest.mark.parametrize("to", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2FNUZ,
                                TensorProto.FLOAT4E2M1])
@pytest.mark.parametrize("saturate", [0, 1])
def test_quantize_to_low_precision_floats(to: int, saturate: int) -> None:
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=to,
                            saturate=saturate)
    x = SPECIAL[np.isfinite(SPECIAL)]
    _same_values(*_run(node, {"x": x}, {"s": np.array(0.5, "float32")}))


def test_dequantize_a_packed_int4_initializer_per_axis() -> None:
    """15 int4 values are packed in 8 bytes; the zero point shifts each row."""
    q = np.arange(-7, 8).reshape(3, 5).astype(ml_dtypes.int4)
    assert len(numpy_helper.from_array(q).raw_data) == 8
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0,
                            output_dtype=TensorProto.FLOAT16)
    inits = {"q": q, "s": np.array([0.5, 1.0, 2.0], "float32"),
             "z": np.array([1, -1, 0], ml_dtypes.int4)}
    ours, want = _run(node, {}, inits)
    assert ours.dtype == np.float16
    np.testing.assert_array_equal(ours, want)


def test_bitcast_float8_to_uint8() -> None:
    x = np.array([0.5, -448, np.nan], ml_dtypes.float8_e4m3fn)
    node = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.UINT8)
    ours, want = _run(node, {"x": x})
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(ours, x.view(np.uint8))


def test_bitcast_of_another_width_names_both() -> None:
    node = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT64)
    model = _model(node, {"x": np.zeros(2, "float32")})
    with pytest.raises(frontend.ConversionError,
                       match=r"cannot reinterpret float32 \(32 bits\) as int64 \(64 bits\)"):
        frontend.from_onnx(model)
