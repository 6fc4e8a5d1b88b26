"""What the qnn ops' canonical forms are built from: constants, zero-point shifts,
saturation, the three requantize multiplies (TVM's fixed point, TFLite's, onnxruntime's
float one), and the registry of canonicalization rules.

Each op module registers its rule with `@register_canonicalize("qnn.x")` (the op
attribute `FTVMQnnCanonicalize`, as TVM names it); `qnn.transform.CanonicalizeOps` applies
whatever is registered, and every call a rule creates carries the replaced call's span.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import engine.relay as relay
from engine.ir.errors import EngineError
from engine.ir.expr import Call, Constant, Expr
from engine.ir.op import Op, register_op_attr
from engine.relay.qnn.fixed_point import (
    dtype_range,
    fixed_point,
    float_multiplier,
    tflite_fixed_point,
    tflite_reduced,
)
from engine.relay.qnn.op.qnn import along
from engine.relay.transform._rewrite import (
    Rewrite,
    expand_to_axis,
    fill_span,
    normalize_axis,
    op_name,
    tensor_type,
)
from engine.runtime.ndarray import NDArray

CANONICALIZE_ATTR = "FTVMQnnCanonicalize"


class QnnCanonicalizeError(EngineError):
    """A qnn call CanonicalizeOps cannot lower (e.g. a scale that is not a constant)."""


def const(value: np.ndarray | int | float, dtype: str) -> Constant:
    return Constant(NDArray(np.asarray(value, dtype=dtype)))


def constant_value(call: Call, index: int) -> np.ndarray:
    """A scale operand's value: it must be a constant (run FoldConstant first)."""
    arg = call.args[index]
    if not isinstance(arg, Constant):
        op = call.op
        assert isinstance(op, Op)
        name = op.arguments[index] if index < len(op.arguments) else f"arg{index}"
        raise QnnCanonicalizeError(
            f"qnn.transform.CanonicalizeOps: {op_name(call)} needs a constant {name} to compute "
            f"its fixed-point multiplier, got a {type(arg).__name__}")
    return arg.data.numpy()


def is_zero(expr: Expr) -> bool:
    return isinstance(expr, Constant) and not np.any(expr.data.numpy())


def param_along(param: Expr, pre_param: Expr, ndim: int, axis: int) -> Expr:
    """A scalar or per-axis zero point shaped to broadcast at `axis` of an ndim tensor."""
    ty = tensor_type(pre_param)
    per_axis = ty is not None and ty.ndim == 1 and ty.is_static and ty.concrete_shape[0] > 1
    return expand_to_axis(param, ndim, normalize_axis(axis, ndim)) if per_axis else param


def minus_zero_point(data: Expr, zp: Expr, dtype: str) -> Expr:
    """`cast(data, dtype) - cast(zp, dtype)` (no subtract for a zero constant)."""
    wide = relay.cast(data, dtype)
    return wide if is_zero(zp) else relay.subtract(wide, relay.cast(zp, dtype))


def saturate(x: Expr, dtype: str) -> Expr:
    lo, hi = dtype_range(dtype)
    return relay.cast(relay.clip(x, lo, hi), dtype)


def fixed_point_multiply(x: Expr, in_scale: np.ndarray, out_scale: np.ndarray, ndim: int,
                         axis: int, rounding: str) -> Expr:
    """int64 `x * in_scale / out_scale` in TVM's fixed point (see `fixed_point`)."""
    fp = fixed_point(along(in_scale, ndim, axis), along(out_scale, ndim, axis))
    if fp.is_identity:
        return x
    if fp.needs_left_shift:
        x = relay.left_shift(x, const(fp.left_shift, "int64"))
    x = relay.multiply(x, const(fp.significand, "int64"))
    bit = const(fp.rounding_bit, "int64")
    if rounding == "TONEAREST":
        nonneg = relay.greater_equal(x, const(0, "int64"))
        bit = relay.where(nonneg, bit, const(fp.rounding_bit - 1, "int64"))
    return relay.right_shift(relay.add(x, bit), const(fp.right_shift, "int64"))


def tflite_multiply(x: Expr, in_scale: np.ndarray, out_scale: np.ndarray, ndim: int,
                    axis: int) -> Expr:
    """int64 TFLite MultiplyByQuantizedMultiplier (see `tflite_fixed_point`)."""
    fp = tflite_fixed_point(along(in_scale, ndim, axis), along(out_scale, ndim, axis))
    if np.any(fp.left_shift):
        x = relay.left_shift(x, const(fp.left_shift, "int64"))
    product = relay.multiply(x, const(fp.significand, "int64"))
    x = relay.right_shift(relay.add(product, const(fp.high_rounding, "int64")),
                          const(31, "int64"))
    if not np.any(fp.right_shift):
        return x
    nonneg = relay.greater_equal(x, const(0, "int64"))
    bit = relay.where(nonneg, const(fp.half, "int64"), const(fp.half_below, "int64"))
    return relay.right_shift(relay.add(x, bit), const(fp.right_shift, "int64"))


def tflite_int16_multiply(x: Expr, in_scale: np.ndarray, out_scale: np.ndarray, ndim: int,
                          axis: int) -> Expr:
    """int64 TFLite MultiplyByQuantizedMultiplier of an int64 accumulator."""
    fp = tflite_fixed_point(along(in_scale, ndim, axis), along(out_scale, ndim, axis))
    reduced, total_shift = tflite_reduced(fp)
    product = relay.multiply(x, const(reduced, "int64"))
    rounded = relay.add(product, const(np.left_shift(np.int64(1), total_shift - 1), "int64"))
    return relay.right_shift(rounded, const(total_shift, "int64"))


def float_multiply(x: Expr, in_scale: np.ndarray, out_scale: np.ndarray, ndim: int,
                   axis: int) -> Expr:
    """onnxruntime's float32 requantize multiply, rounded half to even, as int64."""
    multiplier = float_multiplier(along(in_scale, ndim, axis), along(out_scale, ndim, axis))
    product = relay.multiply(relay.cast(x, "float32"), const(multiplier, "float32"))
    return relay.cast(relay.round(product), "int64")


def scale_multiply(x: Expr, scales: tuple[np.ndarray, np.ndarray], ndim: int, axis: int,
                   rounding: str, compute_dtype: str = "int64") -> Expr:
    """`x * in_scale / out_scale` as the requantize mode computes it."""
    if compute_dtype == "float32":
        return float_multiply(x, scales[0], scales[1], ndim, axis)
    if rounding == "TFLITE":
        return tflite_multiply(x, scales[0], scales[1], ndim, axis)
    if rounding == "TFLITE_INT16":
        return tflite_int16_multiply(x, scales[0], scales[1], ndim, axis)
    return fixed_point_multiply(x, scales[0], scales[1], ndim, axis, rounding)


def lower_requantize(data: Expr, pre: Call, in_zp: Expr, out_zp: Expr,
                     scales: tuple[np.ndarray, np.ndarray], ndim: int, axis: int,
                     rounding: str, out_dtype: str, zp_index: tuple[int, int],
                     compute_dtype: str = "int64") -> Expr:
    x = minus_zero_point(data, param_along(in_zp, pre.args[zp_index[0]], ndim, axis), "int64")
    x = scale_multiply(x, scales, ndim, axis, rounding, compute_dtype)
    out = param_along(out_zp, pre.args[zp_index[1]], ndim, axis)
    if not is_zero(out_zp):
        x = relay.add(x, relay.cast(out, "int64"))
    return saturate(x, out_dtype)


def ndim_of(expr: Expr) -> int:
    ty = tensor_type(expr)
    if ty is None:
        raise QnnCanonicalizeError("qnn.transform.CanonicalizeOps: an operand is untyped")
    return ty.ndim


def pre_dtype(pre: Expr) -> str:
    """The dtype of a typed expression (the call before rewriting, or an operand)."""
    ty = tensor_type(pre)
    if ty is None:
        raise QnnCanonicalizeError(f"qnn.transform.CanonicalizeOps: {op_name(pre)} is untyped")
    return ty.dtype


def spanned(rule: Callable[[Call, Call], Expr]) -> Rewrite:
    """The rule with every call it creates carrying the replaced call's span."""
    def rewrite(pre: Call, post: Call) -> Expr:
        return fill_span(rule(pre, post), post.span, post.args)

    rewrite.__name__ = rule.__name__
    return rewrite


def register_canonicalize(name: str) -> Callable[[Callable[[Call, Call], Expr]],
                                                 Callable[[Call, Call], Expr]]:
    """Register `rule(pre, post) -> Expr` as the canonical form of qnn op `name`."""
    def register(rule: Callable[[Call, Call], Expr]) -> Callable[[Call, Call], Expr]:
        register_op_attr(name, CANONICALIZE_ATTR, spanned(rule))
        return rule

    return register


def canonicalize_rule(op: Op) -> Rewrite | None:
    return op.get_attr(CANONICALIZE_ATTR) if op.has_attr(CANONICALIZE_ATTR) else None


def requantize_tensor(data: Expr, in_zp: Expr, out_zp: Expr, in_scale: np.ndarray,
                      out_scale: np.ndarray, ndim: int, out_dtype: str,
                      rounding: str = "UPWARD") -> Expr:
    """A per-tensor requantize in integer ops (TVM's fixed point, UPWARD by default)."""
    x = minus_zero_point(data, in_zp, "int64")
    x = scale_multiply(x, (in_scale, out_scale), ndim, -1, rounding)
    if not is_zero(out_zp):
        x = relay.add(x, relay.cast(out_zp, "int64"))
    return saturate(x, out_dtype)
