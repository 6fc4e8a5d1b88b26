"""Canonical forms (integer Relay) of quantize, dequantize, requantize, conv2d, dense,
add, subtract and mul; registered with `qnn.transform.CanonicalizeOps`.

- `qnn.quantize`: `clip(round(x / scale) + zp)`, cast;
- `qnn.dequantize`: `cast(x - zp, float32) * scale`;
- `qnn.requantize`: in int64, `x - in_zp`, the multiply by `in_scale / out_scale` its mode
  names (`lowering.scale_multiply`), `+ out_zp`, clip, cast; the scales must be constants
  (as TVM requires);
- `qnn.conv2d` / `qnn.dense`: the int32 op on `cast(x) - zp` and `cast(w) - kernel_zp`
  (zero padding of `x - zp` is padding `x` with zp: TVM's four-term expansion computes the
  same sum);
- `qnn.add` / `qnn.subtract`: both sides requantized to the output parameters in int32,
  added (subtracted), one output zero point taken off (put back), saturated; `qnn.mul`:
  `(lhs - lz) * (rhs - rz)` requantized from `lhs_scale * rhs_scale`.
"""

from __future__ import annotations

import engine.relay as relay
from engine.ir.expr import Call, Expr
from engine.relay.op.op import make_call
from engine.relay.qnn.fixed_point import rounding_mode
from engine.relay.qnn.lowering import (
    constant_value,
    fixed_point_multiply,
    is_zero,
    lower_requantize,
    minus_zero_point,
    ndim_of,
    param_along,
    pre_dtype,
    register_canonicalize,
    saturate,
)
from engine.relay.qnn.op.qnn import along, compute_dtype_of, kernel_out_axis


@register_canonicalize("qnn.quantize")
def canonicalize_quantize(pre: Call, post: Call) -> Expr:
    data, scale, zp = post.args
    ndim, axis = ndim_of(pre.args[0]), int(post.attrs.axis)
    scaled = relay.round(relay.divide(data, param_along(scale, pre.args[1], ndim, axis)))
    shifted = relay.add(scaled, relay.cast(param_along(zp, pre.args[2], ndim, axis),
                                           "float32"))
    return saturate(shifted, post.attrs.out_dtype)


@register_canonicalize("qnn.dequantize")
def canonicalize_dequantize(pre: Call, post: Call) -> Expr:
    data, scale, zp = post.args
    ndim, axis = ndim_of(pre.args[0]), int(post.attrs.axis)
    shifted = minus_zero_point(data, param_along(zp, pre.args[2], ndim, axis), "int32")
    out = relay.multiply(relay.cast(shifted, "float32"),
                         param_along(scale, pre.args[1], ndim, axis))
    dtype = post.attrs.get("out_dtype") or "float32"
    return out if dtype == "float32" else relay.cast(out, dtype)


@register_canonicalize("qnn.requantize")
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


@register_canonicalize("qnn.conv2d")
def canonicalize_conv2d(pre: Call, post: Call) -> Expr:
    x, w = integer_operands(pre, post, kernel_out_axis(post.attrs))
    attrs = dict(post.attrs.replace(out_dtype=post.attrs.get("out_dtype") or "int32"))
    return make_call("nn.conv2d", (x, w), attrs, post.attrs.type_key)


@register_canonicalize("qnn.dense")
def canonicalize_dense(pre: Call, post: Call) -> Expr:
    x, w = integer_operands(pre, post, 0)
    return relay.nn.dense(x, w, post.attrs.get("units"), post.attrs.get("out_dtype") or "int32")


def requantized_sides(pre: Call, post: Call) -> tuple[Expr, Expr]:
    """lhs and rhs requantized to the output parameters (UPWARD, int32 range), as int64."""
    lhs, rhs, _, lz, _, rz, _, oz = post.args
    out_scale = constant_value(post, 6)
    sides = []
    for side, (arg, zp, axis) in enumerate(((lhs, lz, post.attrs.lhs_axis),
                                            (rhs, rz, post.attrs.rhs_axis))):
        scales = (constant_value(post, 2 + 2 * side), out_scale)
        requantized = lower_requantize(arg, pre, zp, oz, scales, ndim_of(pre.args[side]),
                                       int(axis), "UPWARD", "int32", (3 + 2 * side, 7))
        sides.append(relay.cast(requantized, "int64"))
    return sides[0], sides[1]


@register_canonicalize("qnn.add")
def canonicalize_add(pre: Call, post: Call) -> Expr:
    a, b = requantized_sides(pre, post)
    total = relay.subtract(relay.add(a, b), relay.cast(post.args[7], "int64"))
    return saturate(total, pre_dtype(pre))


@register_canonicalize("qnn.subtract")
def canonicalize_subtract(pre: Call, post: Call) -> Expr:
    a, b = requantized_sides(pre, post)
    total = relay.add(relay.subtract(a, b), relay.cast(post.args[7], "int64"))
    return saturate(total, pre_dtype(pre))


@register_canonicalize("qnn.mul")
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
