"""QNN passes (TVM's `relay.qnn.transform`).

`CanonicalizeOps` lowers every qnn op to integer Relay ops the standard pipeline and
`relay.build` handle, computing what the interpreter kernels compute, to the bit:

- `qnn.quantize`: `clip(round(x / scale) + zp)`, cast;
- `qnn.dequantize`: `cast(x - zp, float32) * scale`;
- `qnn.requantize`: in int64, `x - in_zp`, then TVM's fixed-point multiply by
  `in_scale / out_scale` (`left_shift`, `multiply`, add the rounding bit, `right_shift`),
  `+ out_zp`, clip, cast; the scales must be constants (as TVM requires);
- `qnn.conv2d` / `qnn.dense`: the int32 op on `cast(x) - zp` and `cast(w) - kernel_zp`
  (zero padding of `x - zp` is padding `x` with zp: TVM's four-term expansion computes the
  same sum);
- `qnn.add`: both sides requantized to the output parameters in int32, added, one output
  zero point taken off, saturated; `qnn.mul`: `(lhs - lz) * (rhs - rz)` requantized from
  `lhs_scale * rhs_scale`.

Every call made carries the span of the qnn call it replaces (one-to-many), so a
requantize's integer ops name the layers they serve.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import engine.relay as relay
from engine.ir.errors import EngineError
from engine.ir.expr import Call, Constant, Expr, Function
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.relay.op.op import make_call
from engine.relay.qnn.fixed_point import (
    dtype_range,
    fixed_point,
    float_multiplier,
    rounding_mode,
    tflite_fixed_point,
)
from engine.relay.qnn.op.qnn import along, compute_dtype_of, kernel_out_axis
from engine.relay.transform._rewrite import (
    CallRewriter,
    Rewrite,
    ensure_typed,
    expand_to_axis,
    fill_span,
    normalize_axis,
    op_name,
    rewrite_function,
    tensor_type,
)
from engine.relay.transform.pass_infra import function_pass
from engine.runtime.ndarray import NDArray
from engine.transform import Pass, PassContext, register_pass


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


# --- one rule per op -------------------------------------------------------------------
def canonicalize_quantize(pre: Call, post: Call) -> Expr:
    data, scale, zp = post.args
    ndim, axis = ndim_of(pre.args[0]), int(post.attrs.axis)
    scaled = relay.round(relay.divide(data, param_along(scale, pre.args[1], ndim, axis)))
    shifted = relay.add(scaled, relay.cast(param_along(zp, pre.args[2], ndim, axis),
                                           "float32"))
    return saturate(shifted, post.attrs.out_dtype)


def canonicalize_dequantize(pre: Call, post: Call) -> Expr:
    data, scale, zp = post.args
    ndim, axis = ndim_of(pre.args[0]), int(post.attrs.axis)
    shifted = minus_zero_point(data, param_along(zp, pre.args[2], ndim, axis), "int32")
    out = relay.multiply(relay.cast(shifted, "float32"),
                         param_along(scale, pre.args[1], ndim, axis))
    dtype = post.attrs.get("out_dtype") or "float32"
    return out if dtype == "float32" else relay.cast(out, dtype)


def canonicalize_requantize(pre: Call, post: Call) -> Expr:
    data, _, in_zp, _, out_zp = post.args
    scales = (constant_value(post, 1), constant_value(post, 3))
    return lower_requantize(data, pre, in_zp, out_zp, scales, ndim_of(pre.args[0]),
                            int(post.attrs.axis), rounding_mode(post.attrs.get("rounding")),
                            post.attrs.out_dtype, (2, 4),
                            compute_dtype_of(post.attrs.get("compute_dtype")))


def integer_operands(pre: Call, post: Call, out_axis: int) -> tuple[Expr, Expr]:
    data, weight, in_zp, k_zp = post.args[:4]
    x = minus_zero_point(data, in_zp, "int32")
    w = minus_zero_point(weight, param_along(k_zp, pre.args[3], ndim_of(pre.args[1]),
                                             out_axis), "int32")
    return x, w


def canonicalize_conv2d(pre: Call, post: Call) -> Expr:
    x, w = integer_operands(pre, post, kernel_out_axis(post.attrs))
    attrs = dict(post.attrs.replace(out_dtype=post.attrs.get("out_dtype") or "int32"))
    return make_call("nn.conv2d", (x, w), attrs, post.attrs.type_key)


def canonicalize_dense(pre: Call, post: Call) -> Expr:
    x, w = integer_operands(pre, post, 0)
    return relay.nn.dense(x, w, post.attrs.get("units"), post.attrs.get("out_dtype") or "int32")


def canonicalize_add(pre: Call, post: Call) -> Expr:
    lhs, rhs, _, lz, _, rz, _, oz = post.args
    out_scale = constant_value(post, 6)
    sides = []
    for side, (arg, zp, axis) in enumerate(((lhs, lz, post.attrs.lhs_axis),
                                            (rhs, rz, post.attrs.rhs_axis))):
        scales = (constant_value(post, 2 + 2 * side), out_scale)
        requantized = lower_requantize(arg, pre, zp, oz, scales, ndim_of(pre.args[side]),
                                       int(axis), "UPWARD", "int32", (3 + 2 * side, 7))
        sides.append(relay.cast(requantized, "int64"))
    total = relay.subtract(relay.add(sides[0], sides[1]), relay.cast(oz, "int64"))
    return saturate(total, pre_dtype(pre))


def canonicalize_mul(pre: Call, post: Call) -> Expr:
    lhs, rhs, _, lz, _, rz, _, oz = post.args
    axes = (int(post.attrs.lhs_axis), int(post.attrs.rhs_axis))
    nds = (ndim_of(pre.args[0]), ndim_of(pre.args[1]))
    a = minus_zero_point(lhs, param_along(lz, pre.args[3], nds[0], axes[0]), "int32")
    b = minus_zero_point(rhs, param_along(rz, pre.args[5], nds[1], axes[1]), "int32")
    product = relay.cast(relay.multiply(a, b), "int64")
    ndim = ndim_of(pre)
    scale = (along(constant_value(post, 2), nds[0], axes[0]).astype("float32")
             * along(constant_value(post, 4), nds[1], axes[1]).astype("float32"))
    scaled = fixed_point_multiply(product, scale, constant_value(post, 6), ndim, -1, "UPWARD")
    if not is_zero(oz):
        scaled = relay.add(scaled, relay.cast(oz, "int64"))
    return saturate(scaled, pre_dtype(pre))


def pre_dtype(pre: Call) -> str:
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


RULES: dict[str, Rewrite] = {
    "qnn.quantize": spanned(canonicalize_quantize),
    "qnn.dequantize": spanned(canonicalize_dequantize),
    "qnn.requantize": spanned(canonicalize_requantize),
    "qnn.conv2d": spanned(canonicalize_conv2d),
    "qnn.dense": spanned(canonicalize_dense),
    "qnn.add": spanned(canonicalize_add),
    "qnn.mul": spanned(canonicalize_mul),
}


class QnnCanonicalizer(CallRewriter):
    rewrites = RULES  # type: ignore[assignment]


def canonicalize_qnn(func: Function, mod: IRModule | None = None) -> Function:
    ensure_typed(func, mod)
    return rewrite_function(QnnCanonicalizer(mod), func)


@register_pass("qnn.CanonicalizeOps")
def CanonicalizeOps() -> Pass:  # TVM's name (relay.qnn.transform.CanonicalizeOps)
    """Lower every qnn op to integer Relay ops (bit-exact with the qnn kernels)."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return canonicalize_qnn(func, mod)

    return function_pass(transform, opt_level=0, required=["InferType"])


__all__ = ["RULES", "CanonicalizeOps", "QnnCanonicalizeError", "QnnCanonicalizer",
           "canonicalize_qnn"]
