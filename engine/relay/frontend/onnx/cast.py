"""ONNX Cast, CastLike and BitCast, with the float8 rules of the spec.

`relay.cast` converts as numpy does with ml_dtypes' types: round to nearest even; a value
out of range becomes inf where the type has one (float8_e5m2) and NaN where it has not;
float4_e2m1fn saturates. ONNX's `saturate` (default 1) instead clamps out-of-range values and
infinities of the float8 types to +-max, which is a clip before the cast. Casting to
float8_e8m0fnu (a bare power of two: the 8 exponent bits of a float32) follows its own
`round_mode` and is composed from the float32 bits.
"""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.dtype import FLOAT8_WITH_FINITE_MAX, bit_width, finfo, iinfo, is_float
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import onnx_dtype

E8M0 = "float8_e8m0fnu"
E8M0_NAN, E8M0_MAX = 0xFF, 0xFE
MANTISSA_MASK, MANTISSA_HALF = 0x7FFFFF, 0x400000
ROUND_MODES = ("up", "down", "nearest")


def cast_to(x: Expr, src: str, dtype: str, saturate: bool = True,
            round_mode: str = "up") -> Expr:
    """`x` (of dtype `src`) converted to `dtype` as ONNX's Cast does."""
    if dtype == E8M0:
        return _to_e8m0(x, src, saturate, round_mode)
    if saturate and dtype in FLOAT8_WITH_FINITE_MAX and src != "bool":
        limit = float(finfo(dtype).max)
        if is_float(src) or iinfo(src).max > limit:
            x = relay.clip(x, -limit, limit)
    return relay.cast(x, dtype)


def _u32(value: int) -> Expr:
    return relay.const(np.uint32(value), "uint32")


def _to_e8m0(x: Expr, src: str, saturate: bool, round_mode: str) -> Expr:
    """The exponent field of `x` as a float32, rounded by its mantissa: `up` (any fraction
    adds one), `down` (truncated), `nearest` (half or more adds one). NaN stays NaN;
    saturating, infinities and overflows become the largest power 2^127, else NaN. The sign
    is ignored (negative values are undefined for this type); what is below 2^-127 becomes
    2^-127, as onnx's reference does."""
    as_f32 = x if src == "float32" else relay.cast(x, "float32")
    bits = relay.reinterpret(as_f32, "uint32")
    exponent = relay.bitwise_and(relay.right_shift(bits, _u32(23)), _u32(0xFF))
    mantissa = relay.bitwise_and(bits, _u32(MANTISSA_MASK))
    special = relay.equal(exponent, _u32(0xFF))
    if round_mode == "down":
        code = exponent
    else:
        threshold = 1 if round_mode == "up" else MANTISSA_HALF
        rounds = relay.greater_equal(mantissa, _u32(threshold))
        code = relay.add(exponent, relay.cast(rounds, "uint32"))
    is_nan = relay.logical_and(special, relay.not_equal(mantissa, _u32(0)))
    too_big = relay.greater(code, _u32(E8M0_MAX))  # an infinity, or rounded past 2^127
    limit = E8M0_MAX if saturate else E8M0_NAN
    code = relay.where(too_big, _u32(limit), code)
    code = relay.where(is_nan, _u32(E8M0_NAN), code)
    return relay.reinterpret(relay.cast(code, "uint8"), E8M0)


def _cast_attrs(ctx: NodeContext) -> tuple[bool, str]:
    round_mode = str(ctx.attr("round_mode", "up"))
    if round_mode not in ROUND_MODES:
        raise ctx.fail(f"round_mode {round_mode!r} is not one of {ROUND_MODES}")
    return bool(ctx.attr("saturate", 1)), round_mode


@converter("Cast")
def cast(ctx: NodeContext) -> ConvertResult:
    saturate, round_mode = _cast_attrs(ctx)
    return cast_to(ctx.input(0), ctx.dtype(0), onnx_dtype(int(ctx.attr("to"))), saturate,
                   round_mode)


@converter("CastLike", since=15)
def cast_like(ctx: NodeContext) -> ConvertResult:
    saturate, round_mode = _cast_attrs(ctx)
    return cast_to(ctx.input(0), ctx.dtype(0), ctx.dtype(1), saturate, round_mode)


@converter("BitCast", since=26)
def bit_cast(ctx: NodeContext) -> ConvertResult:
    src, dtype = ctx.dtype(0), onnx_dtype(int(ctx.attr("to")))
    if bit_width(src) != bit_width(dtype):
        raise ctx.fail(f"cannot reinterpret {src} ({bit_width(src)} bits) as {dtype} "
                       f"({bit_width(dtype)} bits)")
    return relay.reinterpret(ctx.input(0), dtype)
