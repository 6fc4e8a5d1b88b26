"""TFLite's full-integer kernels as the importer composes them, against a plain-Python
transcription of TFLite's integer arithmetic (gemmlowp's SaturatingRoundingDoublingHighMul
and RoundingDivideByPOT on Python ints, C's truncating division spelled out)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_frontend_tflite_ops import Graph

from engine.relay.frontend.tflite.fixed_point import quantize_multiplier
from engine.relay.frontend.tflite.hard_swish import hard_swish_table
from engine.relay.frontend.tflite.integer import QParams
from engine.relay.frontend.tflite.model import Quantization


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def high_mul(a: int, b: int) -> int:
    product = a * b
    return _c_div(product + ((1 << 30) if product >= 0 else 1 - (1 << 30)), 1 << 31)


def divide_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


def multiply(x: int, real: float) -> int:
    sig, shift = quantize_multiplier(real)
    return divide_pot(high_mul(x * (1 << max(shift, 0)), sig), max(-shift, 0))


def _quant(scale: float, zero: int) -> Quantization:
    return Quantization(np.asarray([scale], dtype="float32"), np.asarray([zero]), 0)


def _f32(value: float) -> float:
    return float(np.float32(value))


def tflite_add(a: int, b: int, qa: tuple[float, int], qb: tuple[float, int],
               qo: tuple[float, int], sign: int = 1) -> int:
    twice_max = 2.0 * max(qa[0], qb[0])
    left = [multiply((v - q[1]) << 20, q[0] / twice_max) for v, q in ((a, qa), (b, qb))]
    out = multiply(left[0] + sign * left[1], twice_max / ((1 << 20) * qo[0])) + qo[1]
    return min(127, max(-128, out))


def tflite_mul(a: int, b: int, qa: tuple[float, int], qb: tuple[float, int],
               qo: tuple[float, int]) -> int:
    out = multiply((a - qa[1]) * (b - qb[1]), qa[0] * qb[0] / qo[0]) + qo[1]
    return min(127, max(-128, out))


QA, QB, QO = (_f32(0.021), 3), (_f32(0.047), -7), (_f32(0.061), -2)


def _operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=200).astype("int8")
    b = rng.integers(-128, 128, size=200).astype("int8")
    a[:4], b[:4] = [-128, 127, -128, 127], [-128, 127, 127, -128]
    return a, b


@pytest.mark.parametrize("op_type", ["ADD", "SUB", "MUL"])
def test_binary_ops_compute_as_tflite(op_type: str) -> None:
    a, b = _operands()
    g = Graph()
    args = [g.tensor(a, runtime=True, quant=_quant(*QA)),
            g.tensor(b, runtime=True, quant=_quant(*QB))]
    (got,) = g.run(op_type, args, [(a.shape, "int8")], out_quant=_quant(*QO),
                   FusedActivationFunction=0)
    if op_type == "MUL":
        expected = [tflite_mul(int(x), int(y), QA, QB, QO) for x, y in zip(a, b)]
    else:
        sign = 1 if op_type == "ADD" else -1
        expected = [tflite_add(int(x), int(y), QA, QB, QO, sign) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, np.asarray(expected, dtype="int8"))


def test_add_with_fused_relu6_clamps_in_output_steps() -> None:
    a, b = _operands()
    g = Graph()
    args = [g.tensor(a, runtime=True, quant=_quant(*QA)),
            g.tensor(b, runtime=True, quant=_quant(*QB))]
    (got,) = g.run("ADD", args, [(a.shape, "int8")], out_quant=_quant(*QO),
                   FusedActivationFunction=3)
    top = QO[1] + round(6.0 / QO[0])
    expected = [min(top, max(QO[1], tflite_add(int(x), int(y), QA, QB, QO)))
                for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, np.asarray(expected, dtype="int8"))


def tflite_mean(total: int, count: int, qi: tuple[float, int], qo: tuple[float, int]) -> int:
    sig, shift = quantize_multiplier(qi[0] / qo[0])
    fold = min(int(math.log2(count)), 32, 31 + shift)
    sig, shift = (sig << fold) // count, shift - fold
    out = divide_pot(high_mul((total - qi[1] * count) * (1 << max(shift, 0)), sig),
                     max(-shift, 0)) + qo[1]
    return min(127, max(-128, out))


def test_mean_folds_the_count_into_the_multiplier() -> None:
    x = np.random.default_rng(1).integers(-128, 128, size=(1, 3, 3, 40)).astype("int8")
    qi, qo = (_f32(0.0282), -128), (_f32(0.0279), -128)
    g = Graph()
    args = [g.tensor(x, runtime=True, quant=_quant(*qi)),
            g.tensor(np.asarray([1, 2], dtype="int32"))]
    (got,) = g.run("MEAN", args, [((1, 40), "int8")], out_quant=_quant(*qo), KeepDims=False)
    sums = x.astype(np.int64).sum(axis=(1, 2)).reshape(-1)
    expected = [tflite_mean(int(s), 9, qi, qo) for s in sums]
    np.testing.assert_array_equal(got.reshape(-1), np.asarray(expected, dtype="int8"))


@pytest.mark.parametrize(("in_scale", "out_scale"), [(0.05, 0.03), (0.2, 0.02), (0.01, 0.04)])
def test_hard_swish_table_is_within_one_step_of_float(in_scale: float, out_scale: float
                                                       ) -> None:
    xq = QParams(np.asarray([in_scale], "float32"), np.asarray([5]), 0, "int8")
    out = QParams(np.asarray([out_scale], "float32"), np.asarray([-100]), 0, "int8")
    values = np.arange(-128, 128)
    table = hard_swish_table(values, xq, out).astype(np.int64)
    real = (values - 5) * np.float32(in_scale)
    ideal = np.clip(np.round(real * np.clip(real + 3, 0, 6) / 6 / out_scale) - 100, -128, 127)
    assert np.abs(table - ideal).max() <= 1
    assert np.all(np.diff(table[values >= 0]) >= 0)  # monotone where hard swish is


def test_lookup_table_ops_take_every_int8_value() -> None:
    x = np.arange(-128, 128, dtype="int8")
    qi, qo = (_f32(0.05), 4), (_f32(1.0 / 256), -128)
    g = Graph()
    (got,) = g.run("LOGISTIC", [g.tensor(x, runtime=True, quant=_quant(*qi))],
                   [(x.shape, "int8")], out_quant=_quant(*qo))
    real = np.float32(qi[0]) * (x.astype("float32") - np.float32(qi[1]))
    sigmoid = np.float32(1) / (np.float32(1) + np.exp(-real))
    ideal = np.clip(np.trunc(sigmoid * np.float32(256) + np.float32(0.5)) - 128, -128, 127)
    np.testing.assert_array_equal(got, ideal.astype("int8"))


def test_uint8_fully_connected_with_weight_zero_point() -> None:
    """A uint8 model's layer (TFLite 1.x style: uint8 weights with a zero point, int32
    bias): sum((x - zx) * (w - zw)) + bias, rescaled, + output zero point, saturated."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, size=(3, 16)).astype("uint8")
    w = rng.integers(0, 256, size=(5, 16)).astype("uint8")
    bias = rng.integers(-3000, 3000, size=5).astype("int32")
    qx, qw, qo = (_f32(0.02), 120), (_f32(0.004), 131), (_f32(0.09), 110)
    g = Graph()
    args = [g.tensor(x, runtime=True, quant=_quant(*qx)), g.tensor(w, quant=_quant(*qw)),
            g.tensor(bias, quant=_quant(qx[0] * qw[0], 0))]
    (got,) = g.run("FULLY_CONNECTED", args, [((3, 5), "uint8")], out_quant=_quant(*qo),
                   FusedActivationFunction=0)
    acc = (x.astype(np.int64) - qx[1]) @ (w.astype(np.int64) - qw[1]).T + bias
    real = float(np.float64(qx[0]) * np.float64(qw[0]) / np.float64(qo[0]))
    expected = [[min(255, max(0, multiply(int(a), real) + qo[1])) for a in row] for row in acc]
    np.testing.assert_array_equal(got, np.asarray(expected, dtype="uint8"))
