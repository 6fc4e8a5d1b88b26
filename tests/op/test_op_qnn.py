"""QNN ops (relay.qnn.op): type relations, kernels against hand-computed integers (rounding
ties, per-channel), TVM's fixed-point multiplier, and Relay text round trips."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.ir.structural import structural_equal
from engine.relay.interpreter import evaluate
from engine.relay.parser import parse
from engine.relay.qnn.fixed_point import multiplier_and_shift
from engine.relay.testing.qnn import f32, i32
from engine.relay.type_infer import infer_type

qnn = relay.qnn.op
RNG = np.random.default_rng(15)


def typed(expr):
    infer_type(expr)
    return expr.checked_type


# --- the fixed-point multiplier ---------------------------------------------------------------
@pytest.mark.parametrize("ratio", [0.5, 1.0, 0.0003, 0.7071067811865476, 3.999999999, 1e-9])
def test_multiplier_is_the_ratio_to_31_bits(ratio):
    sig, shift = multiplier_and_shift(ratio)
    assert 1 << 30 <= sig < 1 << 31
    assert abs(Fraction(sig, 1 << 31) * Fraction(2) ** shift - Fraction(ratio)) \
        <= Fraction(ratio) * Fraction(1, 1 << 31)


def test_a_significand_that_rounds_up_to_one_moves_the_shift():
    assert multiplier_and_shift(1 - 2 ** -40) == (1 << 30, 1)


def exact_requantize(x, ratio, rounding):
    """Python-int reference: x * (the 31-bit multiplier), rounded as TVM rounds."""
    sig, shift = multiplier_and_shift(ratio)
    value = Fraction(int(x) * sig, 1 << 31) * Fraction(2) ** shift
    half = Fraction(1, 2)
    if rounding == "TONEAREST" and value < 0:
        return -int((-value + half) // 1)
    return int((value + half) // 1)


# --- requantize -------------------------------------------------------------------------------
@pytest.mark.parametrize("rounding, want", [
    ("UPWARD", [2, -1, 3, -2, 0, 0, 1, -1]),
    ("TONEAREST", [2, -2, 3, -3, 0, -1, 1, -1]),
])
def test_requantize_rounds_ties_as_tvm(rounding, want):
    data = np.array([3, -3, 5, -5, 0, -1, 1, -2], "int32")  # x * 0.5: every odd x is a tie
    call = qnn.requantize(relay.var("x", shape=(8,), dtype="int32"), f32(0.5), i32(0), f32(1.0),
                          i32(0), rounding=rounding, out_dtype="int8")
    np.testing.assert_array_equal(evaluate(call, {"x": data}), want)


@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
def test_requantize_matches_the_exact_reference(rounding):
    data = RNG.integers(-50000, 50000, 64).astype("int32")
    in_scale, out_scale, in_zp, out_zp = 0.0013, 0.071, 7, -4
    ratio = float(np.float32(in_scale)) / float(np.float32(out_scale))
    want = [np.clip(exact_requantize(v - in_zp, ratio, rounding) + out_zp, -128, 127)
            for v in data]
    call = qnn.requantize(relay.var("x", shape=(64,), dtype="int32"), f32(in_scale),
                          i32(in_zp), f32(out_scale), i32(out_zp), rounding=rounding)
    got = evaluate(call, {"x": data})
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_requantize_per_channel_is_per_tensor_per_channel():
    data = RNG.integers(-3000, 3000, (2, 3, 4)).astype("int32")
    scales, zps = np.array([0.01, 0.02, 0.5], "float32"), np.array([1, -2, 3], "int32")
    x = relay.var("x", shape=data.shape, dtype="int32")
    per_channel = evaluate(qnn.requantize(x, f32(scales), i32(zps), f32(0.25), i32(5), axis=1,
                                          out_dtype="uint8"), {"x": data})
    for c in range(3):
        xc = relay.var("x", shape=(2, 4), dtype="int32")
        one = evaluate(qnn.requantize(xc, f32(scales[c]), i32(zps[c]), f32(0.25), i32(5),
                                      out_dtype="uint8"), {"x": data[:, c]})
        np.testing.assert_array_equal(per_channel[:, c], one)


# --- quantize / dequantize --------------------------------------------------------------------
def test_quantize_rounds_half_to_even_and_saturates():
    data = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 1000.0, -1000.0], "float32")
    call = qnn.quantize(relay.var("x", shape=(7,)), f32(0.5), i32(1), out_dtype="int8")
    assert typed(call) == relay.TensorType((7,), "int8")
    np.testing.assert_array_equal(evaluate(call, {"x": data}), [1, 3, 1, -1, 3, 127, -128])


def test_quantize_and_dequantize_per_axis():
    data = RNG.standard_normal((2, 3)).astype("float32")
    scale, zp = np.array([0.1, 0.2, 0.05], "float32"), np.array([0, 10, 250], "int32")
    x = relay.var("x", shape=(2, 3))
    q = qnn.quantize(x, f32(scale), i32(zp), axis=1, out_dtype="uint8")
    want = np.clip(np.round(data / scale) + zp, 0, 255).astype("uint8")
    np.testing.assert_array_equal(evaluate(q, {"x": data}), want)
    dq = qnn.dequantize(q, f32(scale), i32(zp), axis=1)
    assert typed(dq) == relay.TensorType((2, 3), "float32")
    np.testing.assert_array_equal(evaluate(dq, {"x": data}),
                                  (want.astype("int32") - zp).astype("float32") * scale)


# --- conv2d / dense / add / mul ---------------------------------------------------------------
def test_qnn_conv2d_is_the_convolution_of_the_shifted_integers():
    data = RNG.integers(-128, 128, (1, 2, 4, 4)).astype("int8")
    weight = RNG.integers(-128, 128, (3, 2, 3, 3)).astype("int8")
    kzp = np.array([0, 3, -1], "int32")
    call = qnn.conv2d(relay.var("x", shape=data.shape, dtype="int8"), relay.const(weight), i32(2),
                      i32(kzp), f32(0.1), f32([0.1, 0.2, 0.3]), kernel_size=(3, 3), channels=3,
                      padding=(1, 1))
    assert typed(call) == relay.TensorType((1, 3, 4, 4), "int32")
    xs = np.pad(data.astype(np.int64) - 2, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ws = weight.astype(np.int64) - kzp[:, None, None, None]
    want = np.zeros((1, 3, 4, 4), np.int64)
    for o in range(3):
        for i in range(4):
            for j in range(4):
                want[0, o, i, j] = (xs[0, :, i:i + 3, j:j + 3] * ws[o]).sum()
    np.testing.assert_array_equal(evaluate(call, {"x": data}), want)


def test_qnn_dense_per_channel_kernel_zero_point():
    data = RNG.integers(0, 256, (2, 5)).astype("uint8")
    weight = RNG.integers(-128, 128, (4, 5)).astype("int8")
    kzp = np.array([1, 0, -3, 7], "int32")
    call = qnn.dense(relay.var("x", shape=(2, 5), dtype="uint8"), relay.const(weight), i32(128),
                     i32(kzp), f32(0.1), f32([0.1] * 4), units=4)
    assert typed(call) == relay.TensorType((2, 4), "int32")
    want = (data.astype(np.int64) - 128) @ (weight.astype(np.int64) - kzp[:, None]).T
    np.testing.assert_array_equal(evaluate(call, {"x": data}), want)


def test_qnn_add_requantizes_both_sides_to_the_output():
    a, b = np.array([10, -20, 127], "int8"), np.array([4, 4, 127], "int8")
    call = qnn.add(relay.var("a", shape=(3,), dtype="int8"), relay.var("b", shape=(3,),
                                                                        dtype="int8"),
                   f32(0.5), i32(0), f32(0.25), i32(2), f32(1.0), i32(-1))
    assert typed(call) == relay.TensorType((3,), "int8")
    # a * 0.5 (ties up) - 1 and (b - 2) * 0.25 - 1, summed, plus -1 again taken off once
    np.testing.assert_array_equal(evaluate(call, {"a": a, "b": b}), [5, -10, 94])


def test_qnn_mul_requantizes_the_product():
    a, b = np.array([10, -20, 3], "int8"), np.array([4, 4, -128], "int8")
    call = qnn.mul(relay.var("a", shape=(3,), dtype="int8"), relay.var("b", shape=(3,),
                                                                        dtype="int8"),
                   f32(0.5), i32(0), f32(0.25), i32(2), f32(1.0), i32(0))
    # (a * (b - 2)) * 0.125, rounded upward: 2.5 -> 3, -5 -> -5, -48.75 -> -49
    np.testing.assert_array_equal(evaluate(call, {"a": a, "b": b}), [3, -5, -49])


# --- type relations ---------------------------------------------------------------------------
@pytest.mark.parametrize("make, match", [
    (lambda: qnn.requantize(relay.var("x", shape=(3,)), f32(1), i32(0), f32(1), i32(0)),
     "qnn.requantize, argument 'data': the input must be one of"),
    (lambda: qnn.quantize(relay.var("x", shape=(3,)), i32(1), i32(0)),
     "qnn.quantize, argument 'output_scale': a scale must be float32"),
    (lambda: qnn.dequantize(relay.var("x", shape=(2, 3), dtype="int8"), f32([1, 2]), i32(0),
                            axis=1),
     "qnn.dequantize, argument 'input_scale': scale length"),
    (lambda: qnn.dense(relay.var("x", shape=(2, 3), dtype="int8"), relay.var("w", shape=(4, 3)),
                       i32(0), i32(0), f32(1), f32(1)),
     "qnn.dense, argument 'weight': the weight must be one of"),
    (lambda: qnn.add(relay.var("a", shape=(3,), dtype="int8"),
                     relay.var("b", shape=(3,), dtype="uint8"),
                     f32(1), i32(0), f32(1), i32(0), f32(1), i32(0)),
     "qnn.add, argument 'rhs': lhs and rhs must have one dtype"),
])
def test_type_relations_reject_bad_operands(make, match):
    with pytest.raises(TypeInferenceError, match=match):
        infer_type(make())


def test_requantize_rejects_an_unknown_rounding():
    with pytest.raises(ValueError, match="rounding"):
        qnn.requantize(relay.var("x", shape=(3,), dtype="int32"), f32(1), i32(0), f32(1), i32(0),
                       rounding="DOWNWARD")


# --- Relay text -------------------------------------------------------------------------------
QNN_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 4, 4), int8], %w: Tensor[(3, 2, 3, 3), int8]) {
  %0 = qnn.conv2d(%x, %w, 2, 0, 0.1f, 0.2f, padding=[1, 1, 1, 1], channels=3,
                  kernel_size=[3, 3], out_dtype="int32");
  qnn.requantize(%0, 0.02f, 0, 0.5f, -3, rounding="TONEAREST", out_dtype="int8")
}
"""


def test_qnn_ops_print_and_parse():
    mod = parse(QNN_TEXT)
    again = parse(mod.astext())
    assert structural_equal(mod, again)
    call = mod["main"].body
    assert call.op.name == "qnn.requantize" and call.attrs.rounding == "TONEAREST"
    assert call.attrs.axis == -1 and call.args[0].attrs.groups == 1
