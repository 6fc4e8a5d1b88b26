"""TVM's QNN fixed-point arithmetic (`src/relay/qnn/utils.{h,cc}`), shared by the
interpreter kernels and `qnn.transform.CanonicalizeOps`, so both agree to the bit.

A real multiplier `m = input_scale / output_scale` (float32 scales, divided in double)
becomes `significand * 2**(shift - 31)`: `frexp` gives `m = q * 2**shift` with q in
[0.5, 1), `significand = round(q * 2**31)` (half away from zero, as `std::round`).
Then `x * m` is `(x << left) * significand + rounding >> (right + 31)` in int64, with
`rounding = 2**(total - 1)` (UPWARD: ties toward +inf) or that minus one for negative x
(TONEAREST: ties away from zero).

Two more modes reproduce the other integer runtimes bit for bit:
- `TFLITE` (rounding="TFLITE"): TFLite's `QuantizeMultiplier` (the same significand, but a
  multiplier below 2**-32 becomes 0) and `MultiplyByQuantizedMultiplier`: a left shift for
  positive exponents, gemmlowp's `SaturatingRoundingDoublingHighMul` (the high half of
  `2 * x * q`, a tie rounded toward +inf) then `RoundingDivideByPOT` (a tie rounded away
  from zero): two roundings, where TVM's TONEAREST rounds once (1 LSB apart on rare
  double-rounding cases). TFLite computes `x << left` in int32; here it is int64, so an
  accumulator that would overflow int32 there (undefined behaviour in C++) does not wrap.
- `TFLITE_INT16` (rounding="TFLITE_INT16"): TFLite's int16x8 kernels, which multiply an
  int64 accumulator by the multiplier reduced to 16 bits (`(q + 2**15) >> 16`, at most
  0x7FFF) and shift right by `15 - shift` once, rounding half up.
- `float32` (compute_dtype="float32"): onnxruntime's QLinear* kernels (MLAS on x86)
  requantize in float: `float(x) * (in_scale / out_scale)` all in float32, rounded half to
  even, plus the zero point, saturated (`float_requantize`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ROUNDINGS = ("UPWARD", "TONEAREST", "TFLITE", "TFLITE_INT16")


def rounding_mode(value: str | None) -> str:
    """TVM's attribute value ("None" means the default, UPWARD) as a rounding mode."""
    mode = "UPWARD" if value in (None, "", "None") else str(value)
    if mode not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, got {value!r}")
    return mode


def multiplier_and_shift(multiplier: float, flush_tiny: bool = False) -> tuple[int, int]:
    """(significand as int32, shift) with multiplier ~= significand * 2**(shift - 31).

    `flush_tiny`: TFLite's QuantizeMultiplier, which makes a multiplier whose shift would
    be below -31 exactly 0 (every bit would be shifted out)."""
    if multiplier == 0.0:
        return 0, 0
    q, shift = math.frexp(multiplier)
    fixed = math.floor(abs(q) * (1 << 31) + 0.5) * (1 if q >= 0 else -1)
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if flush_tiny and shift < -31:
        return 0, 0
    return int(fixed), int(shift)


@dataclass(frozen=True, slots=True)
class FixedPoint:
    """Per-element (per-tensor: one element) integer parameters of a multiply by a real."""

    significand: np.ndarray  # int64
    left_shift: np.ndarray  # int64, >= 0
    right_shift: np.ndarray  # int64, the total right shift (>= 31)

    @property
    def rounding_bit(self) -> np.ndarray:
        return np.left_shift(np.int64(1), self.right_shift - 1)

    @property
    def needs_left_shift(self) -> bool:
        return bool(np.any(self.left_shift))

    @property
    def is_identity(self) -> bool:
        """A multiply by exactly 1 (TVM skips it: equal scales)."""
        return bool(np.all(self.significand == 1 << 30) and np.all(self.left_shift == 1)
                    and np.all(self.right_shift == 31))


def scale_ratio(input_scale: np.ndarray | float, output_scale: np.ndarray | float
                ) -> np.ndarray:
    """input_scale / output_scale in double, elementwise. A float32 scale is widened; a
    float64 one (an exact product of two float32 scales, as TFLite computes it) is kept."""
    num, den = np.asarray(input_scale), np.asarray(output_scale)
    num = num if num.dtype == np.float64 else num.astype("float32")
    den = den if den.dtype == np.float64 else den.astype("float32")
    ratio = num.astype("float64") / den.astype("float64")
    return np.broadcast_to(ratio, np.broadcast_shapes(num.shape, den.shape))


def significands_and_shifts(ratio: np.ndarray, flush_tiny: bool = False
                            ) -> tuple[np.ndarray, np.ndarray]:
    pairs: Sequence[tuple[int, int]] = [multiplier_and_shift(float(m), flush_tiny)
                                        for m in ratio.ravel()]
    sig = np.array([p[0] for p in pairs], dtype="int64").reshape(ratio.shape)
    shift = np.array([p[1] for p in pairs], dtype="int64").reshape(ratio.shape)
    return sig, shift


def fixed_point(input_scale: np.ndarray | float, output_scale: np.ndarray | float
                ) -> FixedPoint:
    """The fixed-point form of input_scale / output_scale, elementwise (TVM's)."""
    sig, shift = significands_and_shifts(scale_ratio(input_scale, output_scale))
    return FixedPoint(sig, np.maximum(shift, 0), np.maximum(-shift, 0) + 31)


@dataclass(frozen=True, slots=True)
class TfliteFixedPoint:
    """TFLite's quantized multiplier, elementwise: `q * 2**(shift - 31)`, applied as
    `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left_shift, q),
    right_shift)`."""

    significand: np.ndarray  # int64 in [0, 2**31)
    left_shift: np.ndarray  # int64, max(shift, 0)
    right_shift: np.ndarray  # int64, max(-shift, 0), at most 31

    @property
    def high_rounding(self) -> int:
        """What SaturatingRoundingDoublingHighMul adds before taking bits 31 and up (for
        either sign: its nudge `1 - 2**30` for a negative product, then truncation
        toward zero, equals adding 2**30 and flooring)."""
        return 1 << 30

    @property
    def half(self) -> np.ndarray:
        """RoundingDivideByPOT's rounding for a non-negative value (0 for no shift)."""
        return np.where(self.right_shift > 0,
                        np.left_shift(np.int64(1), np.maximum(self.right_shift - 1, 0)), 0)

    @property
    def half_below(self) -> np.ndarray:
        """Its rounding for a negative value: ties go away from zero."""
        return np.maximum(self.half - 1, 0)


def tflite_fixed_point(input_scale: np.ndarray | float, output_scale: np.ndarray | float
                       ) -> TfliteFixedPoint:
    """TFLite's QuantizeMultiplier of input_scale / output_scale (computed in double)."""
    sig, shift = significands_and_shifts(scale_ratio(input_scale, output_scale), True)
    return TfliteFixedPoint(sig, np.maximum(shift, 0), np.maximum(-shift, 0))


def tflite_multiply(x: np.ndarray, fp: TfliteFixedPoint) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier in int64 (the parameters broadcast against x).
    SaturatingRoundingDoublingHighMul saturates only for x == q == -2**31; q is never
    negative here."""
    x = np.left_shift(np.asarray(x, dtype="int64"), fp.left_shift)
    high = np.right_shift(x * fp.significand + fp.high_rounding, 31)
    bit = np.where(high >= 0, fp.half, fp.half_below)
    return np.right_shift(high + bit, fp.right_shift)


def tflite_int16_multiply(x: np.ndarray, fp: TfliteFixedPoint) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier for an int64 accumulator (int16x8 kernels)."""
    reduced, total_shift = tflite_reduced(fp)
    x = np.asarray(x, dtype="int64")
    return np.right_shift(x * reduced + np.left_shift(np.int64(1), total_shift - 1),
                          total_shift)


def tflite_reduced(fp: TfliteFixedPoint) -> tuple[np.ndarray, np.ndarray]:
    """(the multiplier reduced to 16 bits, the total right shift 15 - shift)."""
    reduced = np.where(fp.significand < 0x7FFF0000,
                       np.right_shift(fp.significand + (1 << 15), 16), 0x7FFF)
    return reduced.astype("int64"), 15 - (fp.left_shift - fp.right_shift)


def float_multiplier(input_scale: np.ndarray | float, output_scale: np.ndarray | float
                     ) -> np.ndarray:
    """onnxruntime's requantize multiplier: in_scale / out_scale divided in float32."""
    num = np.asarray(input_scale).astype("float32")
    return (num / np.asarray(output_scale).astype("float32")).astype("float32")


def float_requantize(x: np.ndarray, multiplier: np.ndarray) -> np.ndarray:
    """`round_half_even(float32(x) * multiplier)` in float32, as int64 (onnxruntime)."""
    product = np.asarray(x).astype("float32") * multiplier.astype("float32")
    return np.round(product).astype("int64")


def fixed_point_multiply(x: np.ndarray, fp: FixedPoint, rounding: str) -> np.ndarray:
    """`x * multiplier` rounded as TVM's FixedPointMultiply does, in int64 (wrapping as
    compiled int64 code would); the parameters broadcast against x."""
    x = np.asarray(x, dtype="int64")
    with np.errstate(over="ignore"):
        x = np.left_shift(x, fp.left_shift) * fp.significand
        bit = fp.rounding_bit
        round_by = np.where(x >= 0, bit, bit - 1) if rounding == "TONEAREST" else bit
        return np.right_shift(x + round_by, fp.right_shift)


def dtype_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


__all__ = ["ROUNDINGS", "FixedPoint", "TfliteFixedPoint", "dtype_range", "fixed_point",
           "fixed_point_multiply", "float_multiplier", "float_requantize", "multiplier_and_shift",
           "rounding_mode", "scale_ratio", "tflite_fixed_point", "tflite_int16_multiply",
           "tflite_multiply", "tflite_reduced"]
