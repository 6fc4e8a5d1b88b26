"""TFLite's quantized HARD_SWISH (`reference_ops::HardSwish`), evaluated in numpy for every
input value: the importer turns it into a lookup table, bit for bit.

The input is moved to a "high-resolution" int16 scale (x - zp) * 128; a "reluish" gate
relu6(x + 3) / 6 is computed on the 3 / 32768 scale with int16 fixed-point multipliers
(QuantizeMultiplier's significand rounded to 16 bits) and mapped to [0, 32767]; the
product with the input rescaled to the output takes the high half (truncating), then a
rounding right shift to the output scale.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from engine.relay.frontend.tflite.fixed_point import quantize_multiplier

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


class _Params(Protocol):
    @property
    def s(self) -> float: ...
    @property
    def zp(self) -> int: ...
    @property
    def limits(self) -> tuple[int, int]: ...


def _multiplier16(real: np.float32) -> tuple[int, int]:
    """QuantizeMultiplier then DownScaleInt32ToInt16Multiplier."""
    sig, exponent = quantize_multiplier(float(real))
    if sig >= (1 << 31) - 1 - (1 << 15):
        return INT16_MAX, exponent
    return (sig + (1 << 15)) >> 16, exponent


def _rounding_high_mul(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp's int16 SaturatingRoundingDoublingHighMul (ties toward +inf)."""
    out = (a * b + (1 << 14)) >> 15
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, out)


def _high_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SaturatingDoublingHighMul: the product's high half, truncated toward zero."""
    product = a * b
    out = np.sign(product) * (np.abs(product) >> 15)
    return np.where((a == b) & (a == INT16_MIN), INT16_MAX, out)


def _left_shift(a: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(a * (1 << amount), INT16_MIN, INT16_MAX)


def _divide_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    if exponent <= 0:
        return x
    half = 1 << (exponent - 1)
    return (x + np.where(x < 0, half - 1, half)) >> exponent


def hard_swish_table(values: np.ndarray, xq: _Params, out: _Params) -> np.ndarray:
    """The output for each int64 input value in `values`, in the output's dtype."""
    hires_scale = np.float32(1.0 / 128.0) * np.float32(xq.s)
    out_mul, out_exp = _multiplier16(hires_scale / np.float32(out.s))
    relu_mul, relu_exp = _multiplier16(hires_scale / np.float32(3.0 / 32768.0))
    hires = (values.astype("int64") - xq.zp) * 128
    on_output = _rounding_high_mul(hires, out_mul)
    reluish = hires
    if relu_exp > 0:
        reluish = _left_shift(reluish, relu_exp - 1)
    reluish = _rounding_high_mul(reluish, relu_mul)
    if relu_exp > 0:
        reluish = _left_shift(reluish, 1)
    if relu_exp < 0:
        reluish = _divide_pot(reluish, -relu_exp)
    reluish = (reluish + (1 << 15)) >> 1
    result = _divide_pot(_high_mul(reluish, on_output), -out_exp) + out.zp
    lo, hi = out.limits
    return np.clip(result, lo, hi).astype(_dtype_of(lo))


def _dtype_of(low: int) -> str:
    return {-128: "int8", 0: "uint8", INT16_MIN: "int16"}[low]
