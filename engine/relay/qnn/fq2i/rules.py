"""The integer form of each float op FakeQuantizationToInteger can rewrite.

Each rule takes a `Region` (the float call, its integer arguments and their affine types,
and the affine type asked of the region's root) and returns the integer expression and
its affine type.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import engine.relay as relay
from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType
from engine.relay.op.op import make_call
from engine.relay.qnn import op as qnn
from engine.relay.qnn.fixed_point import dtype_range
from engine.relay.qnn.fq2i.affine import (
    Affine,
    AffineType,
    Region,
    TupleAffineType,
    Unconvertible,
    const,
)
from engine.relay.qnn.fq2i.registry import register_fake_quantization_to_integer as register
from engine.relay.qnn.op.qnn import KERNEL_INPUTS, kernel_out_axis
from engine.relay.transform._rewrite import op_name, tensor_type

EIGHT_BIT = ("int8", "uint8")
TABLE_INPUTS = ("int8", "uint8", "int16", "uint16")
ZERO = np.zeros((), "int32")


# --- helpers ------------------------------------------------------------------------------
def out_type(region: Region) -> TensorType:
    ty = region.pre.checked_type
    if not isinstance(ty, TensorType):
        raise Unconvertible(f"{name_of(region)} does not give one tensor")
    return ty


def per_tensor(affine: AffineType, what: str) -> AffineType:
    if affine.per_axis:
        raise Unconvertible(f"{what} is quantized per axis")
    return affine


def dtype_in(affine: AffineType, dtypes: Sequence[str], what: str) -> AffineType:
    if affine.dtype not in dtypes:
        raise Unconvertible(f"{what} is {affine.dtype}, not {' or '.join(dtypes)}")
    return affine


def product_type(region: Region, a: AffineType, b: AffineType, axis: int) -> AffineType:
    """The int32 accumulator of a product of a and b: scale a * b (as the convention
    multiplies them), zero point 0."""
    scale = region.input_scale([a.scale_value(), b.scale_value()])
    return AffineType(const(scale, str(scale.dtype)), const(ZERO, "int32"), "int32", axis)


def rank(expr: Expr) -> int:
    ty = tensor_type(expr)
    if ty is None:
        raise Unconvertible("an operand that is not a typed tensor")
    return ty.ndim


def name_of(region: Region) -> str:
    return op_name(region.pre) or "?"


def normalized(axis: int, ndim: int) -> int:
    return axis % ndim if ndim else -1


def requantized(region: Region, expr: Expr, source: AffineType, target: AffineType,
                ndim: int) -> Expr:
    """`expr` moved from `source` to `target` parameters (target's dtype), rounded as the
    pass's convention rounds."""
    if source.same_params(target) and source.dtype == target.dtype:
        return expr
    axis = source.axis if source.per_axis else target.axis
    conv = region.convention
    return qnn.requantize(expr, source.scale, source.zero_point, target.scale,
                          target.zero_point, axis=normalized(axis, ndim) if ndim else -1,
                          rounding=conv.rounding, compute_dtype=conv.compute_dtype,
                          out_dtype=target.dtype)


def root_target(region: Region) -> AffineType:
    """The quantize's parameters: an op whose result range is not its inputs' (a sum, a
    product, a concatenation of differently quantized tensors) is converted only right
    before the quantize, where the output parameters are known (elsewhere the choice
    would saturate what the float graph keeps)."""
    if region.out is None:
        raise Unconvertible(f"{name_of(region)} inside a region (its output parameters are "
                            "only known right before a quantize)")
    return region.out


# --- products -----------------------------------------------------------------------------
@register("nn.conv2d", "nn.conv2d_transpose", quantized_args=(0, 1))
def conv2d(region: Region) -> tuple[Expr, Affine]:
    """qnn.conv2d (qnn.conv2d_transpose) with the same attributes, int32 out."""
    x, w = region.args
    xt = dtype_in(per_tensor(region.arg_type(0), "the data"), KERNEL_INPUTS, "the data")
    wt = dtype_in(region.arg_type(1), KERNEL_INPUTS, "the weight")
    attrs = region.pre.attrs
    o_axis = kernel_out_axis(attrs)
    if wt.per_axis and wt.axis % 4 != o_axis:
        raise Unconvertible(f"the weight is quantized along axis {wt.axis}, not its output "
                            f"channels ({o_axis})")
    call = make_call(f"qnn.{name_of(region).removeprefix('nn.')}",
                     (x, w, xt.zero_point, wt.zero_point, xt.scale, wt.scale),
                     dict(attrs.replace(out_dtype="int32")), attrs.type_key)
    channel = (attrs.get("out_layout") or attrs.data_layout).index("C")
    return call, product_type(region, xt, wt, channel)


@register("nn.dense", quantized_args=(0, 1))
def dense(region: Region) -> tuple[Expr, Affine]:
    x, w = region.args
    xt = dtype_in(per_tensor(region.arg_type(0), "the data"), KERNEL_INPUTS, "the data")
    wt = dtype_in(region.arg_type(1), KERNEL_INPUTS, "the weight")
    if wt.per_axis and wt.axis % 2 != 0:
        raise Unconvertible("the weight is quantized along its input axis")
    call = qnn.dense(x, w, xt.zero_point, wt.zero_point, xt.scale, wt.scale,
                     units=region.pre.attrs.get("units"))
    return call, product_type(region, xt, wt, out_type(region).ndim - 1)


@register("nn.batch_matmul", quantized_args=(0, 1))
def batch_matmul(region: Region) -> tuple[Expr, Affine]:
    x, y = region.args
    xt = dtype_in(per_tensor(region.arg_type(0), "x"), KERNEL_INPUTS, "x")
    yt = dtype_in(per_tensor(region.arg_type(1), "y"), KERNEL_INPUTS, "y")
    attrs = region.pre.attrs
    call = qnn.batch_matmul(x, y, xt.zero_point, yt.zero_point, xt.scale, yt.scale,
                            transpose_a=bool(attrs.transpose_a),
                            transpose_b=bool(attrs.transpose_b))
    return call, product_type(region, xt, yt, -1)


# --- sums ---------------------------------------------------------------------------------
def accumulate(region: Region, op: str) -> tuple[Expr, Affine]:
    """int32 + int32 (an accumulator and a bias): the right side requantized to the left's
    parameters when they differ."""
    lhs, rhs = region.args
    lt, rt = region.arg_type(0), region.arg_type(1)
    ndim = rank(region.pre.args[1])
    if op == "nn.bias_add":
        rt_axis = 0
        target = lt.with_axis(0)
    else:
        rt_axis, target = rt.axis, lt
    if lt.per_axis and op != "nn.bias_add" and ndim != out_type(region).ndim:
        raise Unconvertible("a per-axis accumulator added to a lower-rank operand")
    rhs = requantized(region, rhs, rt.with_axis(rt_axis), target.with_dtype("int32"), ndim)
    return make_call(op, (lhs, rhs), dict(region.pre.attrs), region.pre.attrs.type_key), lt


def binary(region: Region, name: str) -> tuple[Expr, Affine]:
    lt, rt = region.arg_type(0), region.arg_type(1)
    if lt.dtype == "int32" and rt.dtype == "int32" and name != "mul":
        return accumulate(region, "add" if name == "add" else "subtract")
    dtype_in(lt, EIGHT_BIT, "lhs")
    dtype_in(rt, (lt.dtype,), "rhs")
    out = root_target(region)
    if out.dtype != lt.dtype or out.per_axis:
        raise Unconvertible(f"qnn.{name} gives the operands' dtype, per tensor")
    ndims = [rank(a) for a in region.pre.args[:2]]
    call = getattr(qnn, name)(*region.args, lt.scale, lt.zero_point, rt.scale, rt.zero_point,
                              out.scale, out.zero_point, lhs_axis=normalized(lt.axis, ndims[0]),
                              rhs_axis=normalized(rt.axis, ndims[1]))
    return call, out


@register("add", quantized_args=(0, 1))
def add(region: Region) -> tuple[Expr, Affine]:
    return binary(region, "add")


@register("subtract", quantized_args=(0, 1))
def subtract(region: Region) -> tuple[Expr, Affine]:
    return binary(region, "subtract")


@register("multiply", quantized_args=(0, 1))
def multiply(region: Region) -> tuple[Expr, Affine]:
    return binary(region, "mul")


@register("nn.bias_add", quantized_args=(0, 1))
def bias_add(region: Region) -> tuple[Expr, Affine]:
    lt, rt = region.arg_type(0), region.arg_type(1)
    if lt.dtype != "int32" or rt.dtype != "int32":
        raise Unconvertible("a bias added to an 8-bit value")
    return accumulate(region, "nn.bias_add")


# --- ops that keep the affine type ---------------------------------------------------------
def same_call(region: Region) -> Call:
    return make_call(name_of(region), region.args, dict(region.pre.attrs),
                     region.pre.attrs.type_key)


@register("reshape", "squeeze", "expand_dims", "strided_slice", "nn.batch_flatten",
          quantized_args=(0,))
def reshaping(region: Region) -> tuple[Expr, Affine]:
    return same_call(region), per_tensor(region.arg_type(0), "a reshaped tensor")


@register("nn.max_pool2d", "nn.global_max_pool2d", "nn.adaptive_max_pool2d", "copy",
          quantized_args=(0,))
def keeping(region: Region) -> tuple[Expr, Affine]:
    """Max pools pick values (the channel axis stays): the same affine type."""
    return same_call(region), region.arg_type(0)


@register("transpose", quantized_args=(0,))
def transpose(region: Region) -> tuple[Expr, Affine]:
    xt = region.arg_type(0)
    if not xt.per_axis:
        return same_call(region), xt
    ndim = out_type(region).ndim
    axes = region.pre.attrs.get("axes") or list(reversed(range(ndim)))
    return same_call(region), xt.with_axis([a % ndim for a in axes].index(xt.axis % ndim))


def quantized_bound(value: float, affine: AffineType) -> int:
    lo, hi = dtype_range(affine.dtype)
    scale = float(affine.scale_value().reshape(()))
    zp = int(affine.zero_point_value().reshape(()))
    q = np.round(np.float32(value) / np.float32(scale)) + zp
    if not np.isfinite(q):
        return hi if q > 0 else lo
    return int(np.clip(q, lo, hi))


@register("nn.relu", quantized_args=(0,))
def relu(region: Region) -> tuple[Expr, Affine]:
    xt = region.arg_type(0)
    zps = xt.zero_point_value()
    if not np.any(zps):
        return relay.nn.relu(region.args[0]), xt
    zp = int(per_tensor(xt, "a relu input with zero points").zero_point_value().reshape(()))
    return relay.maximum(region.args[0], const(zp, xt.dtype)), xt


@register("clip", quantized_args=(0,))
def clip(region: Region) -> tuple[Expr, Affine]:
    xt = per_tensor(region.arg_type(0), "a clip input")
    attrs = region.pre.attrs
    lo, hi = quantized_bound(attrs.a_min, xt), quantized_bound(attrs.a_max, xt)
    return relay.clip(region.args[0], lo, hi), xt


@register("nn.pad", quantized_args=(0,))
def pad(region: Region) -> tuple[Expr, Affine]:
    xt = per_tensor(region.arg_type(0), "a padded tensor")
    value = float(np.asarray(region.pre.args[1].data.numpy()).reshape(()))  # type: ignore
    padded = make_call("nn.pad", (region.args[0], const(quantized_bound(value, xt), xt.dtype)),
                       dict(region.pre.attrs), region.pre.attrs.type_key)
    return padded, xt


@register("concatenate")
def concatenate(region: Region) -> tuple[Expr, Affine]:
    types = region.types[0]
    if not isinstance(types, TupleAffineType):
        raise Unconvertible("concatenate of a value that is not a tuple")
    fields = [per_tensor(t, "a concatenated tensor") for t in types.fields]
    first = fields[0]
    axis = int(region.pre.attrs.axis)
    if all(f.same_params(first) and f.dtype == first.dtype for f in fields) and (
            region.out is None or region.out.same_params(first)):
        return relay.concatenate(region.args[0], axis), first
    out = root_target(region)
    if out.dtype != first.dtype:
        raise Unconvertible("qnn.concatenate gives its inputs' dtype")
    call = qnn.concatenate(region.args[0], [f.scale for f in fields],
                           [f.zero_point for f in fields], out.scale, out.zero_point, axis)
    return call, out


# --- average pools ------------------------------------------------------------------------
def avg_pool(region: Region, attrs: dict) -> tuple[Expr, Affine]:
    xt = dtype_in(per_tensor(region.arg_type(0), "a pooled tensor"), EIGHT_BIT, "the input")
    out = xt if region.out is None else region.out  # an average stays in range
    if out.dtype != xt.dtype or out.per_axis:
        raise Unconvertible("qnn.avg_pool2d gives its input's dtype, per tensor")
    call = make_call("qnn.avg_pool2d", (region.args[0], xt.scale, xt.zero_point, out.scale,
                                        out.zero_point), attrs, "relay.attrs.AvgPool2DAttrs")
    return call, out


@register("nn.avg_pool2d", quantized_args=(0,))
def avg_pool2d(region: Region) -> tuple[Expr, Affine]:
    return avg_pool(region, dict(region.pre.attrs))


@register("nn.global_avg_pool2d", "nn.adaptive_avg_pool2d", quantized_args=(0,))
def global_avg_pool2d(region: Region) -> tuple[Expr, Affine]:
    attrs = region.pre.attrs
    if name_of(region) == "nn.adaptive_avg_pool2d" and \
            tuple(attrs.get("output_size") or (1, 1)) not in ((1, 1), (1,)):
        raise Unconvertible("an adaptive average pool to more than 1x1")
    ty = region.pre.args[0].checked_type
    layout = str(attrs.layout)
    if not isinstance(ty, TensorType) or not ty.is_static:
        raise Unconvertible("a global pool of a dynamic shape")
    shape = ty.concrete_shape
    pool = relay.nn.avg_pool2d(region.args[0], (shape[layout.index("H")],
                                                shape[layout.index("W")]), layout=layout,
                               out_layout=str(attrs.get("out_layout") or ""))
    return avg_pool(region, dict(pool.attrs))


# --- table lookups ------------------------------------------------------------------------
TABLE_OPS = {"sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "erf": "erf", "sqrt": "sqrt",
             "rsqrt": "rsqrt", "log": "log", "abs": "abs", "nn.leaky_relu": "leaky_relu"}


def table_operands(region: Region) -> tuple[AffineType, AffineType]:
    xt = dtype_in(per_tensor(region.arg_type(0), "the input"), TABLE_INPUTS, "the input")
    out = per_tensor(root_target(region), "the output")
    if out.dtype != xt.dtype:
        raise Unconvertible("a table op gives its input's dtype")
    return xt, out


@register(*TABLE_OPS, quantized_args=(0,))
def table(region: Region) -> tuple[Expr, Affine]:
    xt, out = table_operands(region)
    name = TABLE_OPS[name_of(region)]
    attrs: Attrs | dict = region.pre.attrs if name == "leaky_relu" else {}
    call = make_call(f"qnn.{name}", (region.args[0], xt.scale, xt.zero_point, out.scale,
                                     out.zero_point), dict(attrs),
                     "relay.attrs.LeakyReluAttrs" if name == "leaky_relu" else "DictAttrs")
    return call, out


@register("nn.softmax", quantized_args=(0,), optional=True)
def softmax(region: Region) -> tuple[Expr, Affine]:
    xt, out = table_operands(region)
    return qnn.softmax(region.args[0], xt.scale, xt.zero_point, out.scale, out.zero_point,
                       axis=int(region.pre.attrs.axis)), out
