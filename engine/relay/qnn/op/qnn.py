"""QNN ops with TVM's names and semantics (`tvm.relay.qnn.op`): quantize, dequantize,
requantize, conv2d, dense, add, mul.

Scales (float32) and zero points (int32) are operands (expressions), per tensor (a
scalar) or per axis (a 1-D tensor along `axis`). The kernels compute in exact integers
the way TVM's canonical lowering does (`qnn.transform.CanonicalizeOps`); rounding of the
fixed-point multiplier is in `engine.relay.qnn.fixed_point`. `quantize` rounds half to
even (as ONNX QuantizeLinear and onnxruntime; TFLite rounds half away from zero: 1 LSB
on exact ties).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.op import Op
from engine.ir.type import Dim, TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, is_any, tensor_arg, type_str
from engine.relay.op.attrs_defaults import REQUIRED, declare
from engine.relay.op.nn._layout import pad_tuple2d, pair, pair_or_none
from engine.relay.op.op import (
    BROADCAST,
    ELEMWISE,
    OUT_ELEMWISE_FUSABLE,
    TypeRelationError,
    define_op,
    make_call,
)
from engine.relay.qnn.fixed_point import (
    dtype_range,
    fixed_point,
    fixed_point_multiply,
    float_multiplier,
    float_requantize,
    rounding_mode,
    tflite_fixed_point,
    tflite_int16_multiply,
    tflite_multiply,
)

QUANTIZE_KEY = "relay.attrs.QuantizeAttrs"
DEQUANTIZE_KEY = "relay.attrs.DequantizeAttrs"
REQUANTIZE_KEY = "relay.attrs.RequantizeAttrs"
BROADCAST_KEY = "relay.attrs.BroadcastAttrs"
CONV2D_KEY = "relay.attrs.Conv2DAttrs"
DENSE_KEY = "relay.attrs.DenseAttrs"

declare(QUANTIZE_KEY, out_dtype=REQUIRED, axis=-1)
declare(DEQUANTIZE_KEY, axis=-1, out_dtype="float32")
declare(REQUANTIZE_KEY, axis=-1, rounding="None", compute_dtype="None", out_dtype=REQUIRED)
declare(BROADCAST_KEY, lhs_axis=-1, rhs_axis=-1)

QUANTIZED = ("int8", "uint8", "int16", "int32")
KERNEL_INPUTS = ("int8", "uint8", "int16")


# --- type relation helpers -------------------------------------------------------------
def check_in(ty: TensorType, index: int, dtypes: Sequence[str], what: str) -> None:
    if ty.dtype not in dtypes:
        raise TypeRelationError(f"{what} must be one of {', '.join(dtypes)}", arg=index,
                                expected=" or ".join(dtypes), actual=type_str(ty))


def check_qparam(arg_types: Sequence[Type], index: int, dtype: str, channels: Dim | None,
                 also: str | None = None) -> None:
    """A scale or zero point: `dtype` (or `also`), a scalar (or one element), or one per
    channel."""
    ty = tensor_arg(arg_types, index)
    what = "scale" if dtype == "float32" else "zero point"
    if ty.dtype != dtype and ty.dtype != also:
        expected = dtype if also is None else f"{dtype} or {also}"
        raise TypeRelationError(f"a {what} must be {expected}", arg=index, expected=expected,
                                actual=type_str(ty))
    if ty.ndim == 0 or (ty.ndim == 1 and not is_any(ty.shape[0]) and int(ty.shape[0]) == 1):
        return
    if ty.ndim != 1 or channels is None:
        raise TypeRelationError(f"a {what} must be a scalar or 1-D along the quantization axis",
                                arg=index, expected="() or (C,)", actual=type_str(ty))
    check_dim(ty.shape[0], channels, index, f"{what} length (the axis size)", ty)


def check_unary_qparams(arg_types: Sequence[Type], dtypes: Sequence[str]) -> TensorType:
    """(data, in_scale, in_zp, out_scale, out_zp), all per tensor: the data's type."""
    check_arity(arg_types, 5)
    data = tensor_arg(arg_types, 0)
    check_in(data, 0, dtypes, "the input")
    for index in range(1, 5):
        check_qparam(arg_types, index, "float32" if index % 2 else "int32", None)
    return data


def axis_dim(ty: TensorType, axis: int, index: int = 0) -> Dim | None:
    if ty.ndim == 0:
        return None
    if not -ty.ndim <= axis < ty.ndim:
        raise TypeRelationError(f"axis {axis} is out of range", arg=index,
                                expected=f"an axis in [{-ty.ndim}, {ty.ndim})",
                                actual=type_str(ty))
    return ty.shape[axis]


# --- numpy helpers ---------------------------------------------------------------------
def along(param: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A scalar or per-axis parameter shaped to broadcast at `axis` of an ndim tensor."""
    param = np.asarray(param)
    if param.size == 1:
        return param.reshape(())
    if param.ndim == ndim:  # already shaped
        return param
    shape = [1] * ndim
    shape[axis % ndim] = param.size
    return param.reshape(shape)


def saturate(x: np.ndarray, dtype: str) -> np.ndarray:
    lo, hi = dtype_range(dtype)
    return np.clip(x, lo, hi).astype(dtype)


def requantize_values(x: np.ndarray, in_scale: np.ndarray, in_zp: np.ndarray,
                      out_scale: np.ndarray, out_zp: np.ndarray, axis: int, rounding: str,
                      out_dtype: str, compute_dtype: str = "int64") -> np.ndarray:
    """Requantize: (x - in_zp) * in_scale / out_scale, + out_zp, saturated to out_dtype;
    all integer work in int64. The multiply is TVM's fixed point (UPWARD, TONEAREST),
    TFLite's (TFLITE), or onnxruntime's float32 one (compute_dtype "float32")."""
    nd = x.ndim
    in_scale, out_scale = along(in_scale, nd, axis), along(out_scale, nd, axis)
    shifted = x.astype("int64") - along(in_zp, nd, axis).astype("int64")
    if compute_dtype == "float32":
        scaled = float_requantize(shifted, float_multiplier(in_scale, out_scale))
    elif rounding == "TFLITE":
        scaled = tflite_multiply(shifted, tflite_fixed_point(in_scale, out_scale))
    elif rounding == "TFLITE_INT16":
        scaled = tflite_int16_multiply(shifted, tflite_fixed_point(in_scale, out_scale))
    else:
        scaled = fixed_point_multiply(shifted, fixed_point(in_scale, out_scale), rounding)
    return saturate(scaled + along(out_zp, nd, axis).astype("int64"), out_dtype)


COMPUTE_DTYPES = ("None", "int64", "float32")


def compute_dtype_of(value: str | None) -> str:
    """The requantize compute dtype ("None" means int64 fixed point)."""
    dtype = "int64" if value in (None, "", "None") else str(value)
    if dtype not in COMPUTE_DTYPES:
        raise ValueError(f"qnn.requantize: compute_dtype {value!r} is not supported "
                         f"(one of {', '.join(COMPUTE_DTYPES)})")
    return dtype


# --- quantize / dequantize / requantize -----------------------------------------------
def _quantize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    data = tensor_arg(arg_types, 0)
    check_in(data, 0, ("float32",), "the input")
    channels = axis_dim(data, int(attrs.axis))
    check_qparam(arg_types, 1, "float32", channels)
    check_qparam(arg_types, 2, "int32", channels)
    if attrs.out_dtype not in QUANTIZED:
        raise TypeRelationError("out_dtype must be a quantized dtype", arg=0,
                                expected=" or ".join(QUANTIZED), actual=str(attrs.out_dtype))
    return TensorType(data.shape, attrs.out_dtype)


def _quantize_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, scale, zp = xs
    axis, nd = int(attrs.axis), data.ndim
    scaled = np.round(data.astype("float32") / along(scale, nd, axis).astype("float32"))
    return saturate(scaled + along(zp, nd, axis).astype("float32"), attrs.out_dtype)


def _dequantize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    data = tensor_arg(arg_types, 0)
    check_in(data, 0, QUANTIZED, "the input")
    channels = axis_dim(data, int(attrs.axis))
    check_qparam(arg_types, 1, "float32", channels)
    check_qparam(arg_types, 2, "int32", channels)
    return TensorType(data.shape, attrs.get("out_dtype") or "float32")


def _dequantize_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, scale, zp = xs
    axis, nd = int(attrs.axis), data.ndim
    shifted = (data.astype("int32") - along(zp, nd, axis).astype("int32")).astype("float32")
    return (shifted * along(scale, nd, axis).astype("float32")).astype(
        attrs.get("out_dtype") or "float32")


def _requantize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 5)
    data = tensor_arg(arg_types, 0)
    check_in(data, 0, (*QUANTIZED, "int64"), "the input")
    channels = axis_dim(data, int(attrs.axis))
    check_qparam(arg_types, 1, "float32", channels, also="float64")
    for index, dtype in ((2, "int32"), (3, "float32"), (4, "int32")):
        check_qparam(arg_types, index, dtype, channels)
    if attrs.out_dtype not in QUANTIZED:
        raise TypeRelationError("out_dtype must be a quantized dtype", arg=0,
                                expected=" or ".join(QUANTIZED), actual=str(attrs.out_dtype))
    return TensorType(data.shape, attrs.out_dtype)


def _requantize_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, in_scale, in_zp, out_scale, out_zp = xs
    return requantize_values(data, in_scale, in_zp, out_scale, out_zp, int(attrs.axis),
                             rounding_mode(attrs.get("rounding")), attrs.out_dtype,
                             compute_dtype_of(attrs.get("compute_dtype")))


define_op("qnn.quantize", ("data", "output_scale", "output_zero_point"), _quantize_rel,
          ELEMWISE, _quantize_compute, attrs_type_key=QUANTIZE_KEY)
define_op("qnn.dequantize", ("data", "input_scale", "input_zero_point"), _dequantize_rel,
          ELEMWISE, _dequantize_compute, attrs_type_key=DEQUANTIZE_KEY)
define_op("qnn.requantize", ("data", "input_scale", "input_zero_point", "output_scale",
                             "output_zero_point"), _requantize_rel, ELEMWISE,
          _requantize_compute, attrs_type_key=REQUANTIZE_KEY)


def quantize(data: Expr, output_scale: Expr, output_zero_point: Expr, axis: int = -1,
             out_dtype: str = "int8") -> Call:
    """clip(round(data / scale) + zero_point) as out_dtype (TVM's relay.qnn.op.quantize)."""
    return make_call("qnn.quantize", (data, output_scale, output_zero_point),
                     {"out_dtype": str(out_dtype), "axis": int(axis)}, QUANTIZE_KEY)


def dequantize(data: Expr, input_scale: Expr, input_zero_point: Expr, axis: int = -1,
               out_dtype: str = "float32") -> Call:
    """(data - zero_point) * scale (TVM's relay.qnn.op.dequantize)."""
    return make_call("qnn.dequantize", (data, input_scale, input_zero_point),
                     {"axis": int(axis), "out_dtype": str(out_dtype)}, DEQUANTIZE_KEY)


def requantize(data: Expr, input_scale: Expr, input_zero_point: Expr, output_scale: Expr,
               output_zero_point: Expr, axis: int = -1, rounding: str = "None",
               compute_dtype: str = "None", out_dtype: str = "int8") -> Call:
    """From one (scale, zero point) to another (TVM's relay.qnn.op.requantize).

    rounding: "UPWARD" (the default) or "TONEAREST" (TVM's fixed point), "TFLITE"
    (TFLite's MultiplyByQuantizedMultiplier), "TFLITE_INT16" (its int64-accumulator form
    in the int16x8 kernels; the data may then be int64); compute_dtype "float32": onnxruntime's
    float requantize (rounding is then unused). input_scale may be float64: the exact
    product of two float32 scales, as TFLite computes its multiplier (see
    `engine.relay.qnn.op.convention` for requantizing like a given runtime)."""
    rounding_mode(rounding)
    compute_dtype_of(compute_dtype)
    return make_call("qnn.requantize", (data, input_scale, input_zero_point, output_scale,
                                        output_zero_point),
                     {"axis": int(axis), "rounding": str(rounding),
                      "compute_dtype": str(compute_dtype), "out_dtype": str(out_dtype)},
                     REQUANTIZE_KEY)


# --- conv2d / dense --------------------------------------------------------------------
def _compute_of(name: str) -> Any:
    return Op.get(name).get_attr("FNumpyCompute")


def _type_rel_of(name: str) -> Any:
    return Op.get(name).get_attr("FTVMTypeRelation")


def check_kernel_qparams(arg_types: Sequence[Type], out_channels: Dim | None) -> None:
    data, weight = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_in(data, 0, KERNEL_INPUTS, "the data")
    check_in(weight, 1, KERNEL_INPUTS, "the weight")
    check_qparam(arg_types, 2, "int32", None)
    check_qparam(arg_types, 3, "int32", out_channels)
    check_qparam(arg_types, 4, "float32", None)
    check_qparam(arg_types, 5, "float32", out_channels)


def _qnn_conv2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 6)
    weight = tensor_arg(arg_types, 1)
    check_kernel_qparams(arg_types, weight.shape[kernel_out_axis(attrs)])
    return _type_rel_of("nn.conv2d")(arg_types[:2], attrs)


def kernel_out_axis(attrs: Attrs) -> int:
    """The output-channel axis of a conv2d kernel (where per-channel parameters go)."""
    layout = str(attrs.kernel_layout)
    return layout.index("O") if "O" in layout else 0


def integer_product(float_op: str, weight_axis: Callable[[Attrs], int]
                    ) -> Callable[[list[np.ndarray], Attrs], np.ndarray]:
    """The kernel of a qnn product op: `float_op` (its integer form) of `data - zp` and
    `weight - kernel_zp` (the kernel zero point per tensor or along `weight_axis`)."""
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        data, weight, in_zp, k_zp = xs[:4]
        x = data.astype("int32") - np.asarray(in_zp).astype("int32").reshape(())
        axis = weight_axis(attrs)
        w = weight.astype("int32") - along(k_zp, weight.ndim, axis).astype("int32")
        return _compute_of(float_op)([x, w], attrs)

    return compute


_qnn_conv2d_compute = integer_product("nn.conv2d", kernel_out_axis)


def _qnn_dense_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 6)
    weight = tensor_arg(arg_types, 1)
    check_kernel_qparams(arg_types, weight.shape[0] if weight.ndim else None)
    return _type_rel_of("nn.dense")(arg_types[:2], attrs)


_qnn_dense_compute = integer_product("nn.dense", lambda attrs: 0)


KERNEL_ARGS = ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
               "kernel_scale")
define_op("qnn.conv2d", KERNEL_ARGS, _qnn_conv2d_rel, OUT_ELEMWISE_FUSABLE, _qnn_conv2d_compute,
          attrs_type_key=CONV2D_KEY)
define_op("qnn.dense", KERNEL_ARGS, _qnn_dense_rel, OUT_ELEMWISE_FUSABLE, _qnn_dense_compute,
          attrs_type_key=DENSE_KEY)


def conv2d(data: Expr, kernel: Expr, input_zero_point: Expr, kernel_zero_point: Expr,
           input_scale: Expr, kernel_scale: Expr, kernel_size: Any, channels: int | None,
           strides: Any = (1, 1), padding: Any = (0, 0), dilation: Any = (1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
           out_layout: str = "", out_dtype: str = "int32") -> Call:
    """sum((data - input_zp) * (kernel - kernel_zp)) as a convolution, int32 out (TVM's
    relay.qnn.op.conv2d); the scales travel along for the requantize that follows."""
    return make_call("qnn.conv2d", (data, kernel, input_zero_point, kernel_zero_point,
                                    input_scale, kernel_scale), {
        "strides": pair(strides), "padding": pad_tuple2d(padding), "dilation": pair(dilation),
        "groups": int(groups), "channels": None if channels is None else int(channels),
        "kernel_size": pair_or_none(kernel_size), "data_layout": data_layout,
        "kernel_layout": kernel_layout, "out_layout": out_layout, "out_dtype": out_dtype,
    }, CONV2D_KEY)


def dense(data: Expr, weight: Expr, input_zero_point: Expr, kernel_zero_point: Expr,
          input_scale: Expr, kernel_scale: Expr, units: int | None = None,
          out_dtype: str = "int32") -> Call:
    """(data - input_zp) @ (weight - kernel_zp).T, int32 out (TVM's relay.qnn.op.dense)."""
    return make_call("qnn.dense", (data, weight, input_zero_point, kernel_zero_point,
                                   input_scale, kernel_scale),
                     {"units": None if units is None else int(units), "out_dtype": out_dtype},
                     DENSE_KEY)


# --- add / mul -------------------------------------------------------------------------
BINARY_ARGS = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point",
               "output_scale", "output_zero_point")


def _qnn_binary_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 8)
    lhs, rhs = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_in(lhs, 0, QUANTIZED, "lhs")
    if rhs.dtype != lhs.dtype:
        raise TypeRelationError("lhs and rhs must have one dtype", arg=1, expected=lhs.dtype,
                                actual=type_str(rhs))
    out = _type_rel_of("add")(arg_types[:2], Attrs({}))
    channels = (axis_dim(lhs, int(attrs.lhs_axis)), axis_dim(rhs, int(attrs.rhs_axis), 1), None)
    for index in range(2, 8):
        check_qparam(arg_types, index, "float32" if index % 2 == 0 else "int32",
                     channels[(index - 2) // 2])
    return out


def binary_params(xs: list[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    lhs, rhs, ls, lz, rs, rz, os, oz = xs
    nl, nr = lhs.ndim, rhs.ndim
    la, ra = int(attrs.lhs_axis), int(attrs.rhs_axis)
    return (lhs, rhs, along(ls, nl, la), along(lz, nl, la), along(rs, nr, ra),
            along(rz, nr, ra), np.asarray(os), np.asarray(oz))


def _requantized_sides(xs: list[np.ndarray], attrs: Attrs
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both sides requantized to the output parameters (UPWARD, int32 range), as int64."""
    lhs, rhs, ls, lz, rs, rz, os, oz = binary_params(xs, attrs)
    a = requantize_values(lhs, ls, lz, os, oz, -1, "UPWARD", "int32").astype("int64")
    b = requantize_values(rhs, rs, rz, os, oz, -1, "UPWARD", "int32").astype("int64")
    return a, b, oz.astype("int64")


def _qnn_add_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    """TVM: requantize both sides to the output parameters (int32), add, take one output
    zero point off, saturate."""
    a, b, oz = _requantized_sides(xs, attrs)
    return saturate(a + b - oz, xs[0].dtype.name)


def _qnn_subtract_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    """TVM: requantize both sides to the output parameters (int32), subtract, put one
    output zero point back, saturate."""
    a, b, oz = _requantized_sides(xs, attrs)
    return saturate(a - b + oz, xs[0].dtype.name)


def _qnn_mul_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    """TVM: (lhs - lz) * (rhs - rz) in int32, requantized from lhs_scale * rhs_scale."""
    lhs, rhs, ls, lz, rs, rz, os, oz = binary_params(xs, attrs)
    prod = (lhs.astype("int32") - lz.astype("int32")) * (rhs.astype("int32") - rz.astype("int32"))
    scale = ls.astype("float32") * rs.astype("float32")
    fp = fixed_point(scale, os)
    scaled = fixed_point_multiply(prod, fp, "UPWARD")
    return saturate(scaled + oz.astype("int64"), lhs.dtype.name)


define_op("qnn.add", BINARY_ARGS, _qnn_binary_rel, BROADCAST, _qnn_add_compute,
          attrs_type_key=BROADCAST_KEY)
define_op("qnn.subtract", BINARY_ARGS, _qnn_binary_rel, BROADCAST, _qnn_subtract_compute,
          attrs_type_key=BROADCAST_KEY)
define_op("qnn.mul", BINARY_ARGS, _qnn_binary_rel, BROADCAST, _qnn_mul_compute,
          attrs_type_key=BROADCAST_KEY)


def _binary_ctor(name: str) -> Any:
    def ctor(lhs: Expr, rhs: Expr, lhs_scale: Expr, lhs_zero_point: Expr, rhs_scale: Expr,
             rhs_zero_point: Expr, output_scale: Expr, output_zero_point: Expr,
             lhs_axis: int = -1, rhs_axis: int = -1) -> Call:
        return make_call(f"qnn.{name}", (lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale,
                                         rhs_zero_point, output_scale, output_zero_point),
                         {"lhs_axis": int(lhs_axis), "rhs_axis": int(rhs_axis)}, BROADCAST_KEY)

    ctor.__name__ = name
    ctor.__doc__ = f"Quantized {name} (TVM's relay.qnn.op.{name}), output in lhs's dtype."
    return ctor


add = _binary_ctor("add")
subtract = _binary_ctor("subtract")
mul = _binary_ctor("mul")

__all__ = ["add", "conv2d", "dense", "dequantize", "mul", "quantize", "requantize", "subtract"]
