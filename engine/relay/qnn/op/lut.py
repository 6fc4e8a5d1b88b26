"""Quantized elementwise functions by table lookup: qnn.sigmoid, tanh, exp, erf, sqrt,
rsqrt, log, abs, hardswish, leaky_relu (TVM's names and operands), and qnn.softmax.

For an 8- or 16-bit input every possible value is known, so the op is a table of
`quantize(f(dequantize(v)))` over the whole input range (256 or 65536 entries), `f` the
engine's own float32 kernel of the float op (so the table agrees bit for bit with the
dequantize -> float op -> quantize graph it replaces). Kernel and canonical form use the
same table: the canonical form is `take(table, cast(x, int32) - min)`.

Against the runtimes: onnxruntime's QLinearSigmoid / QLinearLeakyRelu and TFLite's int8
LOGISTIC / TANH kernels also build such a table, but from their own float functions
(MLAS's logistic and tanh are polynomial approximations) and TFLite quantizes the entries
rounding half away from zero where `qnn.quantize` rounds half to even: an entry can
differ by 1 LSB where the float result sits on a rounding boundary. TFLite's int16
LOGISTIC / TANH and HARD_SWISH kernels compute in fixed point, not by this table: up to
1 LSB apart. A non-finite result (log of 0 or less) saturates (NaN becomes 0 before the
zero point).

qnn.softmax is not elementwise: kernel and canonical form are dequantize -> softmax
(float32) -> quantize; TVM canonicalizes it to an integer-only approximation instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.attrs import EMPTY_ATTRS, Attrs
from engine.ir.expr import Call, Expr
from engine.ir.op import Op
from engine.ir.type import TensorType, Type
from engine.relay.op.op import ELEMWISE, OPAQUE, TypeRelationError, define_op, make_call
from engine.relay.qnn import lowering
from engine.relay.qnn.lowering import const, constant_value, pre_dtype, register_canonicalize
from engine.relay.qnn.op.qnn import check_unary_qparams, dtype_range, saturate

UNARY_ARGS = ("x", "scale", "zero_point", "output_scale", "output_zero_point")
LUT_INPUTS = ("int8", "uint8", "int16", "uint16")
LEAKY_KEY = "relay.attrs.LeakyReluAttrs"
SOFTMAX_KEY = "relay.attrs.SoftmaxAttrs"


def float_kernel(name: str) -> Callable[[np.ndarray, Attrs], np.ndarray]:
    compute = Op.get(name).get_attr("FNumpyCompute")
    return lambda x, attrs: compute([x], attrs)


def hardswish_float(x: np.ndarray, attrs: Attrs) -> np.ndarray:
    """x * relu6(x + 3) / 6 in float32."""
    x = x.astype("float32")
    return (x * np.clip(x + np.float32(3), 0, 6) / np.float32(6)).astype("float32")


# The float function of each table op: the engine's kernel of the float op it quantizes.
FUNCTIONS: dict[str, Callable[[np.ndarray, Attrs], np.ndarray]] = {
    "sigmoid": float_kernel("sigmoid"), "tanh": float_kernel("tanh"),
    "exp": float_kernel("exp"), "erf": float_kernel("erf"),
    "sqrt": float_kernel("sqrt"), "rsqrt": float_kernel("rsqrt"), "log": float_kernel("log"),
    "abs": float_kernel("abs"), "hardswish": hardswish_float,
    "leaky_relu": float_kernel("nn.leaky_relu"),
}


def quantize_float(y: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, dtype: str
                   ) -> np.ndarray:
    """qnn.quantize's arithmetic (half to even) with non-finite values saturated."""
    lo, hi = dtype_range(dtype)
    scaled = np.round(y.astype("float32") / np.float32(scale))
    shifted = np.nan_to_num(scaled + np.float32(zero_point), nan=float(zero_point),
                            posinf=hi, neginf=lo)
    return saturate(shifted, dtype)


def dequantize_float(v: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """qnn.dequantize's arithmetic: (v - zp) in int32, times the scale in float32."""
    shifted = (v.astype("int32") - np.int32(zero_point)).astype("float32")
    return (shifted * np.float32(scale)).astype("float32")


def lookup_table(function: str, attrs: Attrs, dtype: str, params: Sequence[np.ndarray]
                 ) -> np.ndarray:
    """quantize(f(dequantize(v))) for every v of `dtype`, in order from its minimum."""
    scale, zp, out_scale, out_zp = (np.asarray(p).reshape(()) for p in params)
    lo, hi = dtype_range(dtype)
    real = dequantize_float(np.arange(lo, hi + 1).astype(dtype), scale, zp)
    with np.errstate(all="ignore"):
        return quantize_float(FUNCTIONS[function](real, attrs), out_scale, out_zp, dtype)


def _unary_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = check_unary_qparams(arg_types, LUT_INPUTS)
    return TensorType(x.shape, x.dtype)


def _table_compute(function: str) -> Callable[[list[np.ndarray], Attrs], np.ndarray]:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = xs[0]
        table = lookup_table(function, attrs, x.dtype.name, xs[1:])
        return table[x.astype("int64") - dtype_range(x.dtype.name)[0]]

    return compute


def canonicalize_table(function: str) -> Callable[[Call, Call], Expr]:
    def rule(pre: Call, post: Call) -> Expr:
        dtype = pre_dtype(pre.args[0])
        table = lookup_table(function, post.attrs, dtype,
                             [constant_value(post, i) for i in range(1, 5)])
        index = relay.cast(post.args[0], "int32")
        lo = dtype_range(dtype)[0]
        if lo:
            index = relay.subtract(index, const(lo, "int32"))
        return relay.take(const(table, dtype), index, axis=0)

    rule.__name__ = f"canonicalize_{function}"
    return rule


def define_table_op(function: str, attrs_type_key: str = "DictAttrs") -> None:
    name = f"qnn.{function}"
    define_op(name, UNARY_ARGS, _unary_rel, ELEMWISE, _table_compute(function),
              attrs_type_key=attrs_type_key)
    register_canonicalize(name)(canonicalize_table(function))


for _function in FUNCTIONS:
    if _function != "leaky_relu":
        define_table_op(_function)
define_table_op("leaky_relu", LEAKY_KEY)


def _unary_ctor(function: str) -> Any:
    def ctor(x: Expr, scale: Expr, zero_point: Expr, output_scale: Expr,
             output_zero_point: Expr) -> Call:
        return Call(Op.get(f"qnn.{function}"), (x, scale, zero_point, output_scale,
                                                output_zero_point), EMPTY_ATTRS)

    ctor.__name__ = function
    ctor.__doc__ = (f"Quantized {function} by table lookup (TVM's relay.qnn.op.{function}), "
                    f"output in the input's dtype.")
    return ctor


sigmoid, tanh, exp, erf = (_unary_ctor(f) for f in ("sigmoid", "tanh", "exp", "erf"))
sqrt, rsqrt, log = (_unary_ctor(f) for f in ("sqrt", "rsqrt", "log"))
abs = _unary_ctor("abs")  # TVM's name (relay.qnn.op.abs)
hardswish = _unary_ctor("hardswish")


def leaky_relu(x: Expr, alpha: float, input_scale: Expr, input_zero_point: Expr,
               output_scale: Expr, output_zero_point: Expr) -> Call:
    """Quantized leaky ReLU (TVM's relay.qnn.op.leaky_relu), by table lookup."""
    return make_call("qnn.leaky_relu", (x, input_scale, input_zero_point, output_scale,
                                        output_zero_point), {"alpha": float(alpha)}, LEAKY_KEY)


# --- softmax ------------------------------------------------------------------------------
def _softmax_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, scale, zp, out_scale, out_zp = xs
    real = dequantize_float(x, np.asarray(scale).reshape(()), np.asarray(zp).reshape(()))
    y = Op.get("nn.softmax").get_attr("FNumpyCompute")([real], attrs)
    return quantize_float(y, np.asarray(out_scale).reshape(()),
                          np.asarray(out_zp).reshape(()), x.dtype.name)


def _softmax_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    out = _unary_rel(arg_types, attrs)
    assert isinstance(out, TensorType)
    if not -max(out.ndim, 1) <= int(attrs.axis) < max(out.ndim, 1):
        raise TypeRelationError(f"axis {attrs.axis} is out of range", arg=0)
    return out


define_op("qnn.softmax", UNARY_ARGS, _softmax_rel, OPAQUE, _softmax_compute,
          attrs_type_key=SOFTMAX_KEY)


@register_canonicalize("qnn.softmax")
def canonicalize_softmax(pre: Call, post: Call) -> Expr:
    x, scale, zp, out_scale, out_zp = post.args
    dtype = pre_dtype(pre.args[0])
    real = relay.multiply(relay.cast(lowering.minus_zero_point(x, zp, "int32"), "float32"),
                          scale)
    y = relay.round(relay.divide(relay.nn.softmax(real, axis=int(post.attrs.axis)), out_scale))
    return lowering.saturate(relay.add(y, relay.cast(out_zp, "float32")), dtype)


def softmax(x: Expr, scale: Expr, zero_point: Expr, output_scale: Expr,
            output_zero_point: Expr, axis: int = -1) -> Call:
    """Quantized softmax (TVM's relay.qnn.op.softmax): dequantize, softmax, quantize."""
    return make_call("qnn.softmax", (x, scale, zero_point, output_scale, output_zero_point),
                     {"axis": int(axis)}, SOFTMAX_KEY)


__all__ = ["abs", "erf", "exp", "hardswish", "leaky_relu", "log", "rsqrt", "sigmoid", "softmax",
           "sqrt", "tanh"]
