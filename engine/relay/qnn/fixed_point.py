"""TVM's QNN fixed-point arithmetic (`src/relay/qnn/utils.{h,cc}`), shared by the
interpreter kernels and `qnn.transform.CanonicalizeOps`, so both agree to the bit.

A real multiplier `m = input_scale / output_scale` (float32 scales, divided in double)
becomes `significand * 2**(shift - 31)`: `frexp` gives `m = q * 2**shift` with q in
[0.5, 1), `significand = round(q * 2**31)` (half away from zero, as `std::round`).
Then `x * m` is `(x << left) * significand + rounding >> (right + 31)` in int64, with
`rounding = 2**(total - 1)` (UPWARD: ties toward +inf) or that minus one for negative x
(TONEAREST: ties away from zero).

Against the other integer runtimes (measured in quantization steps, LSBs):
- TFLite (gemmlowp `SaturatingRoundingDoublingHighMul` then `RoundingDivideByPOT`) rounds
  twice, each half away from zero: TONEAREST matches it except for rare double-rounding
  cases, which differ by 1 LSB; UPWARD also differs by 1 LSB on negative exact ties.
- onnxruntime's QLinear* kernels requantize in float (`x * scale` in float32, then
  round half to even): on ties and where float32 loses bits of a large accumulator the
  result can differ by 1 LSB.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ROUNDINGS = ("UPWARD", "TONEAREST")


def rounding_mode(value: str | None) -> str:
    """TVM's attribute value ("None" means the default, UPWARD) as a rounding mode."""
    mode = "UPWARD" if value in (None, "", "None") else str(value)
    if mode not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, got {value!r}")
    return mode


def multiplier_and_shift(multiplier: float) -> tuple[int, int]:
    """(significand as int32, shift) with multiplier ~= significand * 2**(shift - 31)."""
    if multiplier == 0.0:
        return 0, 0
    q, shift = math.frexp(multiplier)
    fixed = math.floor(abs(q) * (1 << 31) + 0.5) * (1 if q >= 0 else -1)
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
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


def fixed_point(input_scale: np.ndarray | float, output_scale: np.ndarray | float
                ) -> FixedPoint:
    """The fixed-point form of input_scale / output_scale, elementwise (float32 scales)."""
    num = np.asarray(input_scale, dtype="float32").astype("float64")
    den = np.asarray(output_scale, dtype="float32").astype("float64")
    ratio = np.broadcast_to(num / den, np.broadcast_shapes(num.shape, den.shape))
    pairs: Sequence[tuple[int, int]] = [multiplier_and_shift(float(m)) for m in ratio.ravel()]
    sig = np.array([p[0] for p in pairs], dtype="int64").reshape(ratio.shape)
    shift = np.array([p[1] for p in pairs], dtype="int64").reshape(ratio.shape)
    return FixedPoint(sig, np.maximum(shift, 0), np.maximum(-shift, 0) + 31)


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


__all__ = ["ROUNDINGS", "FixedPoint", "dtype_range", "fixed_point", "fixed_point_multiply",
           "multiplier_and_shift", "rounding_mode"]
