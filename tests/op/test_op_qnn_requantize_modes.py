"""qnn.requantize as the other runtimes compute it: rounding="TFLITE" against a plain
Python-int transcription of TFLite's QuantizeMultiplier / MultiplyByQuantizedMultiplier
(random values and every tie), compute_dtype="float32" against onnxruntime itself
(QLinearMatMul), the canonical lowering of both bit for bit, and `requantize_as`."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.ir.expr import Constant
from engine.ir.module import IRModule
from engine.relay.interpreter import evaluate
from engine.relay.qnn.fixed_point import multiplier_and_shift
from engine.relay.testing.qnn import f32, i32
from engine.relay.type_infer import infer_type
from engine.runtime.ndarray import NDArray

qnn = relay.qnn.op
RNG = np.random.default_rng(1501)


# --- TFLite's algorithm, transcribed with Python ints -------------------------------------
def quantize_multiplier(real: float) -> tuple[int, int]:
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    fixed = math.floor(q * (1 << 31) + 0.5)  # std::round of a positive value
    if fixed == 1 << 31:
        fixed, shift = fixed // 2, shift + 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def saturating_rounding_doubling_high_mul(a: int, b: int) -> int:
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return trunc_div(ab + nudge, 1 << 31)


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    return rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(x * (1 << left), multiplier), right)


def multiply_by_quantized_multiplier_int64(x: int, multiplier: int, shift: int) -> int:
    """The int64-accumulator overload (int16x8 kernels)."""
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    return (x * reduced + (1 << (total_shift - 1))) >> total_shift


def tflite_requantize(x, in_scale, out_scale, in_zp, out_zp, dtype,
                      multiply=multiply_by_quantized_multiplier):
    real = float(np.float64(in_scale)) / float(np.float32(out_scale))
    multiplier, shift = quantize_multiplier(real)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    return np.array([min(hi, max(lo, multiply(int(v) - in_zp, multiplier, shift) + out_zp))
                     for v in np.ravel(x)], dtype).reshape(np.shape(x))


def requantize_call(x, in_scale, in_zp, out_scale, out_zp, **attrs):
    var = relay.var("x", shape=x.shape, dtype=str(x.dtype))
    scale = relay.const(np.asarray(in_scale))
    return var, qnn.requantize(var, scale, i32(in_zp), f32(out_scale), i32(out_zp), **attrs)


def run_both(var, call, x):
    """The kernel's result, checked equal to the canonical lowering's."""
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([var], call)))
    want = evaluate(mod, {"x": x})
    lowered = relay.transform.InferType()(relay.qnn.transform.CanonicalizeOps()(mod))
    np.testing.assert_array_equal(evaluate(lowered, {"x": x}), want)
    return want


# --- TFLITE -------------------------------------------------------------------------------
def test_quantize_multiplier_flushes_tiny_multipliers_to_zero():
    assert multiplier_and_shift(2.0 ** -40, flush_tiny=True) == (0, 0)
    assert multiplier_and_shift(2.0 ** -40) == (1 << 30, -39)
    assert multiplier_and_shift(1 - 2 ** -40, flush_tiny=True) == quantize_multiplier(1 - 2 ** -40)


@pytest.mark.parametrize("seed", range(6))
def test_tflite_rounding_matches_tflites_algorithm_on_random_values(seed):
    rng = np.random.default_rng(seed)
    in_scale = np.float32(rng.uniform(1e-5, 0.05))
    out_scale = np.float32(rng.uniform(1e-3, 0.2)) * (40 if seed == 5 else 1)  # seed 5: < 1
    if seed == 4:
        out_scale = np.float32(in_scale / 3.7)  # a multiplier above 1: a left shift
    x = rng.integers(-(1 << 20), 1 << 20, (4, 64)).astype("int32")
    var, call = requantize_call(x, in_scale, 3, out_scale, -2, rounding="TFLITE",
                                out_dtype="int8" if seed % 2 else "int16")
    got = run_both(var, call, x)
    np.testing.assert_array_equal(got, tflite_requantize(x, in_scale, out_scale, 3, -2,
                                                         got.dtype))


@pytest.mark.parametrize("in_scale, out_scale", [(1.0, 2.0), (1.0, 8.0), (3.0, 16.0),
                                                  (1.0, 1024.0), (5.0, 4.0), (1.0, 2.0 ** 31)])
def test_tflite_rounding_matches_on_every_tie(in_scale, out_scale):
    """Multipliers that are short binary fractions put every other x on a tie, in the
    doubling high multiply and in the divide by a power of two."""
    x = np.arange(-4096, 4097, dtype="int32")
    var, call = requantize_call(x, np.float32(in_scale), 0, out_scale, 0, rounding="TFLITE",
                                out_dtype="int32")
    got = run_both(var, call, x)
    np.testing.assert_array_equal(got, tflite_requantize(x, in_scale, out_scale, 0, 0,
                                                         "int32"))


def test_tflite_rounding_per_channel_with_a_float64_input_scale():
    x = RNG.integers(-50000, 50000, (2, 3, 5)).astype("int32")
    input_scale, weight_scales = np.float32(0.0123), np.array([0.001, 0.0347, 0.25], "float32")
    call = qnn.requantize_as("tflite", relay.var("x", shape=x.shape, dtype="int32"),
                             [input_scale, weight_scales], 0, np.float32(0.05), 7, axis=1,
                             out_dtype="int8")
    assert call.args[1].data.numpy().dtype == np.float64
    got = run_both(call.args[0], call, x)
    for c in range(3):
        exact = np.float64(input_scale) * np.float64(weight_scales[c])
        np.testing.assert_array_equal(got[:, c], tflite_requantize(x[:, c], exact, 0.05, 0, 7,
                                                                   "int8"))


@pytest.mark.parametrize("in_scale, out_scale", [(1.0, 2.0), (3.0, 16.0), (0.0123, 0.7),
                                                  (2.0 ** -30, 1.0), (5.0, 4.0)])
def test_tflite_int16_rounding_matches_the_int64_accumulator_algorithm(in_scale, out_scale):
    x = np.concatenate([np.arange(-2048, 2049), RNG.integers(-(1 << 40), 1 << 40, 500)])
    var, call = requantize_call(x.astype("int64"), np.float32(in_scale), 0, out_scale, 0,
                                rounding="TFLITE_INT16", out_dtype="int32")
    got = run_both(var, call, x.astype("int64"))
    want = tflite_requantize(x, np.float32(in_scale), out_scale, 0, 0, "int32",
                             multiply_by_quantized_multiplier_int64)
    np.testing.assert_array_equal(got, want)


# --- float32 (onnxruntime) ----------------------------------------------------------------
def test_float32_compute_rounds_half_to_even():
    x = np.array([1, 3, 5, -1, -3, 7, 100], "int32")
    var, call = requantize_call(x, np.float32(0.5), 0, 1.0, 0, compute_dtype="float32",
                                out_dtype="int8")
    np.testing.assert_array_equal(run_both(var, call, x), [0, 2, 2, 0, -2, 4, 50])


def ort_qlinear_matmul(a, b, a_scale, b_scale, y_scale, a_zp, b_zp, y_zp):
    nodes = [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                              ["y"])]
    inits = [helper.make_tensor("as", TensorProto.FLOAT, [], [a_scale]),
             helper.make_tensor("az", TensorProto.UINT8, [], [a_zp]),
             helper.make_tensor("b", TensorProto.UINT8, b.shape, b.ravel().tolist()),
             helper.make_tensor("bs", TensorProto.FLOAT, [len(b_scale)], b_scale.tolist()),
             helper.make_tensor("bz", TensorProto.UINT8, [len(b_scale)], [b_zp] * len(b_scale)),
             helper.make_tensor("ys", TensorProto.FLOAT, [], [y_scale]),
             helper.make_tensor("yz", TensorProto.UINT8, [], [y_zp])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "a", TensorProto.UINT8, a.shape)], [helper.make_tensor_value_info(
            "y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"a": a})[0]


def test_float32_compute_is_onnxruntimes_qlinear_matmul():
    a = RNG.integers(0, 256, (16, 48)).astype("uint8")
    b = RNG.integers(0, 256, (48, 24)).astype("uint8")
    a_scale, y_scale = np.float32(0.0371), np.float32(0.4119)
    b_scale = RNG.uniform(0.001, 0.02, 24).astype("float32")
    acc = (a.astype("int32") - 131) @ (b.astype("int32") - 120)
    var = relay.var("x", shape=acc.shape, dtype="int32")
    call = qnn.requantize_as("onnxruntime", var, [a_scale, b_scale], 0, y_scale, 118, axis=1,
                             out_dtype="uint8")
    got = run_both(var, call, acc.astype("int32"))
    want = ort_qlinear_matmul(a, b, a_scale, b_scale, y_scale, 131, 120, 118)
    np.testing.assert_array_equal(got, want)


# --- the helper and bad input ------------------------------------------------------------
def test_requantize_as_names_the_runtime_attributes():
    x = relay.var("x", shape=(3,), dtype="int32")
    ort_call = qnn.requantize_as("onnxruntime", x, [0.5, 0.25], 0, 1.0, 0)
    assert ort_call.attrs.compute_dtype == "float32"
    assert ort_call.args[1].data.numpy().dtype == np.float32
    assert qnn.requantize_as("tflite", x, [0.5], 0, 1.0, 0).attrs.rounding == "TFLITE"
    with pytest.raises(ValueError, match="unknown requantize convention 'tf'"):
        qnn.requantize_as("tf", x, [0.5], 0, 1.0, 0)


def test_bad_compute_dtype_and_float64_zero_point_are_rejected():
    x = relay.var("x", shape=(3,), dtype="int32")
    with pytest.raises(ValueError, match="compute_dtype 'float16'"):
        qnn.requantize(x, f32(1), i32(0), f32(1), i32(0), compute_dtype="float16")
    bad = qnn.requantize(x, f32(1), i32(0), Constant(NDArray(np.float64(1))), i32(0))
    with pytest.raises(TypeInferenceError, match="'output_scale': a scale must be float32"):
        infer_type(bad)
