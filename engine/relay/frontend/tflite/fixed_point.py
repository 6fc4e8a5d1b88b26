"""TFLite's integer rescaling, composed from integer Relay ops (bit for bit).

TFLite turns a real multiplier into `QuantizeMultiplier`'s (int32 significand, shift) and
multiplies with `MultiplyByQuantizedMultiplier`: gemmlowp's
`SaturatingRoundingDoublingHighMul` (the high half of 2 * x * significand, ties toward
+inf: `(x * sig + 2**30) >> 31` in int64) and then `RoundingDivideByPOT` (a right shift
rounding half away from zero).

The kernels rescale with `qnn.requantize(rounding="TFLITE")` (or "TFLITE_INT16"); what it
does not express is composed here from ordinary integer Relay ops (every pass and
relay.build handle them): ADD/SUB's pre-shifted inputs, the mean's integer-folded
multiplier, int16 MUL's float32 multiplier, per-channel FULLY_CONNECTED's single rounding.
"""

from __future__ import annotations

import math

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: (significand in [2**30, 2**31), shift), real ~=
    significand * 2**(shift - 31); frexp, then C's round (half away from zero)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    sig = int(math.floor(abs(q) * (1 << 31) + 0.5))
    if sig == 1 << 31:
        sig //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return sig, shift


def multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise `quantize_multiplier`: (significands, shifts) as int64 arrays."""
    pairs = [quantize_multiplier(float(r)) for r in np.asarray(reals, "float64").ravel()]
    shape = np.shape(reals)
    return (np.array([p[0] for p in pairs], "int64").reshape(shape),
            np.array([p[1] for p in pairs], "int64").reshape(shape))


def _i64(value: np.ndarray | int) -> Expr:
    return relay.const(np.asarray(value, dtype="int64"))


def rounding_shift(x: Expr, exponent: np.ndarray) -> Expr:
    """RoundingDivideByPOT: x / 2**exponent rounded half away from zero (int64)."""
    exponent = np.asarray(exponent, "int64")
    if not exponent.any():
        return x
    half = np.left_shift(np.int64(1), exponent) >> 1
    nudge = relay.where(relay.less(x, _i64(0)), _i64(np.maximum(half - 1, 0)), _i64(half))
    return relay.right_shift(relay.add(x, nudge), _i64(exponent))


def multiply_by_quantized(x: Expr, real: np.ndarray) -> Expr:
    """MultiplyByQuantizedMultiplier(x, QuantizeMultiplier(real)) on an int32 or int64
    tensor x, as int64; `real` is a scalar or broadcasts against x (per channel)."""
    return multiply_by_fixed(x, *multipliers(real))


def multiply_by_fixed(x: Expr, sig: np.ndarray, shift: np.ndarray) -> Expr:
    """MultiplyByQuantizedMultiplier with a given (significand, shift)."""
    x = relay.cast(x, "int64")
    left = np.maximum(shift, 0)
    if left.any():
        x = relay.left_shift(x, _i64(left))
    high = relay.right_shift(relay.add(relay.multiply(x, _i64(sig)), _i64(1 << 30)), _i64(31))
    return rounding_shift(high, np.maximum(-shift, 0))


def multiply_single_rounding(x: Expr, real: np.ndarray) -> Expr:
    """The single-rounding form TFLite's per-channel FULLY_CONNECTED reference kernel uses:
    `(x * significand + 2**(30 - shift)) >> (31 - shift)` in int64."""
    sig, shift = multipliers(real)
    total = 31 - shift
    rounding = np.left_shift(np.int64(1), total - 1)
    scaled = relay.add(relay.multiply(relay.cast(x, "int64"), _i64(sig)), _i64(rounding))
    return relay.right_shift(scaled, _i64(total))
