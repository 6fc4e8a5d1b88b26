"""qnn.concatenate, qnn.batch_matmul, qnn.conv2d_transpose and qnn.avg_pool2d with TVM's
names and operands, their kernels and canonical forms.

- `qnn.concatenate((x...), (scales...), (zero points...), out_scale, out_zp, axis)`: each
  input requantized to the output parameters (TVM's fixed point, UPWARD; the identity
  when they are equal), then concatenated.
- `qnn.batch_matmul(x, y, x_zp, y_zp, x_scale, y_scale)`: int32 batch matmul of
  `x - x_zp` and `y - y_zp` (y is (B, N, K) unless transpose_b=False); per-tensor zero
  points, as TVM.
- `qnn.conv2d_transpose(x, w, x_zp, w_zp, x_scale, w_scale, ...)`: the int32 transposed
  convolution of `x - x_zp` and `w - w_zp` (w_zp per tensor or per output channel, the
  kernel layout's O axis; a transposed conv crops instead of padding, so shifting first
  is exact).
- `qnn.avg_pool2d(x, in_scale, in_zp, out_scale, out_zp, ...)`: the int32 average of
  `(x - in_zp) * 256` (an integer nn.avg_pool2d: divided, truncated toward zero), then
  requantized from `in_scale / 256` to the output (UPWARD). The 8 extra bits make the
  truncation 1/256 of an input step, so the result is the float average rounded once
  (within 1 LSB of dequantize -> avg_pool2d -> quantize). TVM averages `x - in_zp`
  directly, truncating a whole input step away (up to 2 LSB when the output scale is
  half the input's). TFLite's int8 average pool (same input and output parameters)
  rounds the sum / count half away from zero: 1 LSB apart on ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Constant, Expr, Tuple
from engine.ir.op import Op
from engine.ir.type import TensorType, TupleType, Type
from engine.relay.op._typing import check_arity, tensor_arg, type_str
from engine.relay.op.op import (
    INJECTIVE,
    OUT_ELEMWISE_FUSABLE,
    TypeRelationError,
    define_op,
    make_call,
)
from engine.relay.qnn.lowering import (
    QnnCanonicalizeError,
    minus_zero_point,
    ndim_of,
    param_along,
    pre_dtype,
    register_canonicalize,
    requantize_tensor,
)
from engine.relay.qnn.op.qnn import (
    KERNEL_ARGS as QNN_KERNEL_ARGS,
)
from engine.relay.qnn.op.qnn import (
    KERNEL_INPUTS,
    QUANTIZED,
    check_in,
    check_kernel_qparams,
    check_qparam,
    check_unary_qparams,
    integer_product,
    kernel_out_axis,
    requantize_values,
)

CONCAT_KEY = "relay.attrs.ConcatenateAttrs"
BATCH_MATMUL_KEY = "relay.attrs.BatchMatmulAttrs"
AVG_POOL_KEY = "relay.attrs.AvgPool2DAttrs"


def compute_of(name: str) -> Any:
    return Op.get(name).get_attr("FNumpyCompute")


def type_rel_of(name: str) -> Any:
    return Op.get(name).get_attr("FTVMTypeRelation")


def scalar(value: np.ndarray) -> np.ndarray:
    return np.asarray(value).reshape(())


# --- concatenate --------------------------------------------------------------------------
def tuple_arg(arg_types: Sequence[Type], index: int, what: str) -> tuple[Type, ...]:
    ty = arg_types[index]
    if not isinstance(ty, TupleType):
        raise TypeRelationError(f"{what} must be a tuple", arg=index, expected="a tuple",
                                actual=str(ty))
    return ty.fields


def _concat_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 5)
    data = tuple_arg(arg_types, 0, "the data")
    for index, what, dtype in ((1, "the input scales", "float32"),
                               (2, "the input zero points", "int32")):
        fields = tuple_arg(arg_types, index, what)
        if len(fields) != len(data):
            raise TypeRelationError(f"{what} must have one entry per input", arg=index,
                                    expected=str(len(data)), actual=str(len(fields)))
        for field in fields:
            check_qparam([field], 0, dtype, None)
    for field in data:
        check_in(tensor_arg([field], 0), 0, QUANTIZED, "each input")
    check_qparam(arg_types, 3, "float32", None)
    check_qparam(arg_types, 4, "int32", None)
    return type_rel_of("concatenate")([arg_types[0]], attrs)


def _concat_compute(xs: list[Any], attrs: Attrs) -> np.ndarray:
    data, scales, zps, out_scale, out_zp = xs
    dtype = data[0].dtype.name
    parts = [requantize_values(x, scalar(s), scalar(z), scalar(out_scale), scalar(out_zp), -1,
                               "UPWARD", dtype) for x, s, z in zip(data, scales, zps)]
    return np.concatenate(parts, axis=int(attrs.axis))


define_op("qnn.concatenate", ("data", "input_scales", "input_zero_points", "output_scale",
                              "output_zero_point"), _concat_rel, INJECTIVE, _concat_compute,
          attrs_type_key=CONCAT_KEY)


def constant_fields(expr: Expr, what: str) -> tuple[Expr, ...]:
    if not isinstance(expr, Tuple):
        raise QnnCanonicalizeError(f"qnn.transform.CanonicalizeOps: qnn.concatenate needs "
                                   f"{what} as a tuple literal, got a {type(expr).__name__}")
    return expr.fields


@register_canonicalize("qnn.concatenate")
def canonicalize_concatenate(pre: Call, post: Call) -> Expr:
    data, scales, zps, out_scale, out_zp = post.args
    out_type = pre.checked_type
    assert isinstance(out_type, TensorType)
    fields = constant_fields(data, "the data")
    parts = []
    for x, s, z in zip(fields, constant_fields(scales, "the input scales"),
                       constant_fields(zps, "the input zero points")):
        values = [constant_scalar(e, "a scale or zero point") for e in (s, out_scale)]
        parts.append(requantize_tensor(x, z, out_zp, values[0], values[1],
                                       out_type.ndim, out_type.dtype))
    return relay.concatenate(parts, int(post.attrs.axis))


def constant_scalar(expr: Expr, what: str) -> np.ndarray:
    if not isinstance(expr, Constant):
        raise QnnCanonicalizeError(f"qnn.transform.CanonicalizeOps: qnn.concatenate needs "
                                   f"{what} as a constant, got a {type(expr).__name__}")
    return expr.data.numpy()


def concatenate(data: Any, input_scales: Any, input_zero_points: Any, output_scale: Expr,
                output_zero_point: Expr, axis: int) -> Call:
    """Quantized concatenate (TVM's relay.qnn.op.concatenate)."""
    def as_tuple(value: Any) -> Expr:
        return value if isinstance(value, Expr) else Tuple(tuple(value))

    return make_call("qnn.concatenate", (as_tuple(data), as_tuple(input_scales),
                                         as_tuple(input_zero_points), output_scale,
                                         output_zero_point), {"axis": int(axis)}, CONCAT_KEY)


# --- batch_matmul -------------------------------------------------------------------------
KERNEL_ARGS = ("x", "y", "x_zero_point", "y_zero_point", "x_scale", "y_scale")


def _batch_matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 6)
    check_in(tensor_arg(arg_types, 0), 0, KERNEL_INPUTS, "x")
    check_in(tensor_arg(arg_types, 1), 1, KERNEL_INPUTS, "y")
    for index, dtype in ((2, "int32"), (3, "int32"), (4, "float32"), (5, "float32")):
        check_qparam(arg_types, index, dtype, None)
    return type_rel_of("nn.batch_matmul")(arg_types[:2], attrs)


define_op("qnn.batch_matmul", KERNEL_ARGS, _batch_matmul_rel, OUT_ELEMWISE_FUSABLE,
          integer_product("nn.batch_matmul", lambda attrs: 0),
          attrs_type_key=BATCH_MATMUL_KEY)


@register_canonicalize("qnn.batch_matmul")
def canonicalize_batch_matmul(pre: Call, post: Call) -> Expr:
    x, y, xz, yz = post.args[:4]
    return relay.nn.batch_matmul(minus_zero_point(x, xz, "int32"),
                                 minus_zero_point(y, yz, "int32"),
                                 post.attrs.get("out_dtype") or "int32",
                                 bool(post.attrs.transpose_a), bool(post.attrs.transpose_b))


def batch_matmul(x: Expr, y: Expr, x_zero_point: Expr, y_zero_point: Expr, x_scale: Expr,
                 y_scale: Expr, out_dtype: str = "int32", transpose_a: bool = False,
                 transpose_b: bool = True) -> Call:
    """(x - x_zp) @ (y - y_zp)^T per batch, int32 out (TVM's relay.qnn.op.batch_matmul)."""
    return make_call("qnn.batch_matmul", (x, y, x_zero_point, y_zero_point, x_scale, y_scale),
                     {"out_dtype": out_dtype, "transpose_a": bool(transpose_a),
                      "transpose_b": bool(transpose_b)}, BATCH_MATMUL_KEY)


# --- conv2d_transpose ----------------------------------------------------------------------
CONV_T_KEY = "relay.attrs.Conv2DTransposeAttrs"


def _conv_t_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 6)
    weight = tensor_arg(arg_types, 1)
    check_kernel_qparams(arg_types, weight.shape[kernel_out_axis(attrs)])
    return type_rel_of("nn.conv2d_transpose")(arg_types[:2], attrs)


define_op("qnn.conv2d_transpose", QNN_KERNEL_ARGS, _conv_t_rel, OUT_ELEMWISE_FUSABLE,
          integer_product("nn.conv2d_transpose", kernel_out_axis), attrs_type_key=CONV_T_KEY)


@register_canonicalize("qnn.conv2d_transpose")
def canonicalize_conv2d_transpose(pre: Call, post: Call) -> Expr:
    x, w, xz, wz = post.args[:4]
    kzp = param_along(wz, pre.args[3], ndim_of(pre.args[1]), kernel_out_axis(post.attrs))
    attrs = dict(post.attrs.replace(out_dtype=post.attrs.get("out_dtype") or "int32"))
    return make_call("nn.conv2d_transpose", (minus_zero_point(x, xz, "int32"),
                                             minus_zero_point(w, kzp, "int32")), attrs,
                     CONV_T_KEY)


def conv2d_transpose(data: Expr, weight: Expr, input_zero_point: Expr,
                     kernel_zero_point: Expr, input_scale: Expr, kernel_scale: Expr,
                     kernel_size: Any, channels: int | None, strides: Any = (1, 1),
                     padding: Any = (0, 0), dilation: Any = (1, 1), groups: int = 1,
                     data_layout: str = "NCHW", kernel_layout: str = "IOHW",
                     out_layout: str = "", output_padding: Any = (0, 0),
                     out_dtype: str = "int32") -> Call:
    """Quantized transposed 2-D convolution, int32 out (TVM's
    relay.qnn.op.conv2d_transpose)."""
    float_call = relay.nn.conv2d_transpose(data, weight, strides, padding, dilation, groups,
                                           channels, kernel_size, data_layout, kernel_layout,
                                           out_layout, output_padding, out_dtype)
    return make_call("qnn.conv2d_transpose", (data, weight, input_zero_point,
                                              kernel_zero_point, input_scale, kernel_scale),
                     dict(float_call.attrs), CONV_T_KEY)


# --- avg_pool2d ---------------------------------------------------------------------------
POOL_ARGS = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")


def _avg_pool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = check_unary_qparams(arg_types, QUANTIZED)
    out = type_rel_of("nn.avg_pool2d")(arg_types[:1], attrs)
    if not isinstance(out, TensorType):
        raise TypeRelationError("avg_pool2d gives a tensor", arg=0, actual=type_str(data))
    return TensorType(out.shape, data.dtype)


POOL_BITS = 8  # the fraction bits kept by the integer average


def _avg_pool_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, scale, zp, out_scale, out_zp = xs
    shifted = (x.astype("int32") - scalar(zp).astype("int32")) << POOL_BITS
    pooled = compute_of("nn.avg_pool2d")([shifted], attrs)
    return requantize_values(pooled, pool_scale(scale), np.zeros((), "int32"),
                             scalar(out_scale), scalar(out_zp), -1, "UPWARD", x.dtype.name)


def pool_scale(scale: np.ndarray) -> np.ndarray:
    """The scale of the widened average (exact: a power of two)."""
    return (scalar(scale).astype("float32") / np.float32(1 << POOL_BITS)).astype("float32")


define_op("qnn.avg_pool2d", POOL_ARGS, _avg_pool_rel, OUT_ELEMWISE_FUSABLE, _avg_pool_compute,
          attrs_type_key=AVG_POOL_KEY)


@register_canonicalize("qnn.avg_pool2d")
def canonicalize_avg_pool2d(pre: Call, post: Call) -> Expr:
    x, scale, zp, out_scale, out_zp = post.args
    widened = relay.left_shift(minus_zero_point(x, zp, "int32"),
                               relay.const(np.int32(POOL_BITS)))
    pooled = make_call("nn.avg_pool2d", (widened,), dict(post.attrs), AVG_POOL_KEY)
    dtype = pre_dtype(pre.args[0])
    zero = relay.const(np.int32(0))
    in_scale = pool_scale(constant_scalar(scale, "a scale"))
    return requantize_tensor(pooled, zero, out_zp, in_scale,
                             constant_scalar(out_scale, "a scale"), ndim_of(pre), dtype)


def avg_pool2d(data: Expr, input_scale: Expr, input_zero_point: Expr, output_scale: Expr,
               output_zero_point: Expr, pool_size: Any, strides: Any = (1, 1),
               padding: Any = (0, 0), dilation: Any = (1, 1), ceil_mode: bool = False,
               count_include_pad: bool = True, layout: str = "NCHW",
               out_layout: str = "") -> Call:
    """Quantized 2-D average pool (TVM's relay.qnn.op.avg_pool2d)."""
    float_call = relay.nn.avg_pool2d(data, pool_size, strides, dilation, padding, layout,
                                     out_layout, ceil_mode, count_include_pad)
    return make_call("qnn.avg_pool2d", (data, input_scale, input_zero_point, output_scale,
                                        output_zero_point), dict(float_call.attrs),
                     AVG_POOL_KEY)


__all__ = ["avg_pool2d", "batch_matmul", "concatenate", "conv2d_transpose"]
