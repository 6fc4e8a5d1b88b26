"""qnn.concatenate, qnn.batch_matmul and qnn.avg_pool2d with TVM's names and operands,
their kernels and canonical forms.

- `qnn.concatenate((x...), (scales...), (zero points...), out_scale, out_zp, axis)`: each
  input requantized to the output parameters (TVM's fixed point, UPWARD; the identity
  when they are equal), then concatenated.
- `qnn.batch_matmul(x, y, x_zp, y_zp, x_scale, y_scale)`: int32 batch matmul of
  `x - x_zp` and `y - y_zp` (y is (B, N, K) unless transpose_b=False); per-tensor zero
  points, as TVM.
- `qnn.avg_pool2d(x, in_scale, in_zp, out_scale, out_zp, ...)`: the int32 average of
  `x - in_zp` (divided and truncated toward zero, as an integer nn.avg_pool2d), requantized
  to the output (UPWARD). TFLite's int8 average pool rounds the division half away from
  zero instead: 1 LSB apart on about half the windows whose sum is not a multiple of the
  count; importers wanting TFLite's bits compose it themselves.
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
    pre_dtype,
    register_canonicalize,
    requantize_tensor,
)
from engine.relay.qnn.op.qnn import (
    KERNEL_INPUTS,
    QUANTIZED,
    check_in,
    check_qparam,
    check_unary_qparams,
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


def _batch_matmul_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, y, xz, yz = xs[:4]
    a = x.astype("int32") - scalar(xz).astype("int32")
    b = y.astype("int32") - scalar(yz).astype("int32")
    return compute_of("nn.batch_matmul")([a, b], attrs)


define_op("qnn.batch_matmul", KERNEL_ARGS, _batch_matmul_rel, OUT_ELEMWISE_FUSABLE,
          _batch_matmul_compute, attrs_type_key=BATCH_MATMUL_KEY)


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


# --- avg_pool2d ---------------------------------------------------------------------------
POOL_ARGS = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")


def _avg_pool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = check_unary_qparams(arg_types, QUANTIZED)
    out = type_rel_of("nn.avg_pool2d")(arg_types[:1], attrs)
    if not isinstance(out, TensorType):
        raise TypeRelationError("avg_pool2d gives a tensor", arg=0, actual=type_str(data))
    return TensorType(out.shape, data.dtype)


def _avg_pool_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, scale, zp, out_scale, out_zp = xs
    shifted = x.astype("int32") - scalar(zp).astype("int32")
    pooled = compute_of("nn.avg_pool2d")([shifted], attrs)
    return requantize_values(pooled, scalar(scale), np.zeros((), "int32"), scalar(out_scale),
                             scalar(out_zp), -1, "UPWARD", x.dtype.name)


define_op("qnn.avg_pool2d", POOL_ARGS, _avg_pool_rel, OUT_ELEMWISE_FUSABLE, _avg_pool_compute,
          attrs_type_key=AVG_POOL_KEY)


@register_canonicalize("qnn.avg_pool2d")
def canonicalize_avg_pool2d(pre: Call, post: Call) -> Expr:
    x, scale, zp, out_scale, out_zp = post.args
    pooled = make_call("nn.avg_pool2d", (minus_zero_point(x, zp, "int32"),), dict(post.attrs),
                       AVG_POOL_KEY)
    dtype = pre_dtype(pre.args[0])
    zero = relay.const(np.int32(0))
    values = [constant_scalar(e, "a scale") for e in (scale, out_scale)]
    return requantize_tensor(pooled, zero, out_zp, values[0], values[1], ndim_of(pre), dtype)


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


__all__ = ["avg_pool2d", "batch_matmul", "concatenate"]
