"""TFLite operator converters (NHWC kept as NHWC, as TVM's tflite frontend does)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

import engine.relay as relay
from engine.ir.expr import Constant, Expr
from engine.relay.frontend.common import ConversionError
from engine.relay.frontend.tflite.model import OpRecord, TensorRecord, TFLiteGraph

Converter = Callable[["OpContext"], Expr | list[Expr]]


class ImporterView(Protocol):
    """What a converter may ask the importer (`importer.TFLiteImporter` implements it)."""

    graph: TFLiteGraph

CONVERTERS: dict[str, Converter] = {}


def converter(*names: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS[name] = fn
        return fn
    return register


@dataclass
class OpContext:
    name: str
    op: OpRecord
    inputs: list[Expr | None]
    importer: ImporterView = field(repr=False)

    @property
    def options(self) -> dict[str, Any]:
        return self.op.options

    def tensor(self, index: int) -> TensorRecord:
        return self.importer.graph.tensors[self.op.inputs[index]]

    def out_tensor(self, index: int = 0) -> TensorRecord:
        return self.importer.graph.tensors[self.op.outputs[index]]

    def input(self, index: int) -> Expr:
        expr = self.inputs[index] if index < len(self.inputs) else None
        if expr is None:
            raise self.fail(f"input {index} is missing")
        return expr

    def has(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def value(self, index: int) -> np.ndarray:
        expr = self.input(index)
        if isinstance(expr, Constant):
            return expr.data.numpy()
        raise self.fail(f"input {index} ({self.tensor(index).name!r}) must be a constant")

    def fail(self, message: str) -> ConversionError:
        return ConversionError(self.name, self.op.op_type, message)


_ACTIVATIONS: dict[int, Callable[[Expr], Expr]] = {
    0: lambda x: x,
    1: lambda x: relay.nn.relu(x),
    2: lambda x: relay.clip(x, -1.0, 1.0),
    3: lambda x: relay.clip(x, 0.0, 6.0),
    4: lambda x: relay.tanh(x),
}


def fused(ctx: OpContext, out: Expr) -> Expr:
    code = int(ctx.options.get("FusedActivationFunction", 0))
    if code not in _ACTIVATIONS:
        raise ctx.fail(f"fused activation {code} is not supported")
    return _ACTIVATIONS[code](out)


def same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


def window_padding(ctx: OpContext, kernel: tuple[int, int], strides: tuple[int, int],
                   dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    if int(ctx.options.get("Padding", 1)) == 1:  # VALID
        return (0, 0, 0, 0)
    _, h, w, _ = ctx.tensor(0).shape
    top, bottom = same_pads(h, kernel[0], strides[0], dilation[0])
    left, right = same_pads(w, kernel[1], strides[1], dilation[1])
    return (top, left, bottom, right)


def _strides(ctx: OpContext) -> tuple[int, int]:
    return int(ctx.options.get("StrideH", 1)), int(ctx.options.get("StrideW", 1))


def _dilation(ctx: OpContext) -> tuple[int, int]:
    return int(ctx.options.get("DilationHFactor", 1)), int(ctx.options.get("DilationWFactor", 1))


def _bias(ctx: OpContext, out: Expr, index: int = 2) -> Expr:
    return relay.nn.bias_add(out, ctx.input(index), axis=-1) if ctx.has(index) else out


def _weight(ctx: OpContext, axes: tuple[int, ...]) -> Expr:
    """The kernel transposed to TVM's layout: folded when constant (as TVM does), keeping the
    constant's own span (its weight tensor or DEQUANTIZE layer)."""
    expr = ctx.input(1)
    if isinstance(expr, Constant):
        data = np.ascontiguousarray(expr.data.numpy().transpose(axes))
        return relay.const(data, span=expr.span)
    return relay.transpose(expr, axes=list(axes))


@converter("CONV_2D")
def conv2d(ctx: OpContext) -> Expr:
    out_c, kh, kw, _ = ctx.tensor(1).shape
    strides, dilation = _strides(ctx), _dilation(ctx)
    out = relay.nn.conv2d(ctx.input(0), _weight(ctx, (1, 2, 3, 0)), strides=strides,
                          padding=window_padding(ctx, (kh, kw), strides, dilation),
                          dilation=dilation, channels=out_c, kernel_size=(kh, kw),
                          data_layout="NHWC", kernel_layout="HWIO")
    return fused(ctx, _bias(ctx, out))


@converter("DEPTHWISE_CONV_2D")
def depthwise_conv2d(ctx: OpContext) -> Expr:
    _, kh, kw, total = ctx.tensor(1).shape
    in_c = ctx.tensor(0).shape[3]
    multiplier = total // in_c
    strides, dilation = _strides(ctx), _dilation(ctx)
    weight = ctx.input(1)
    if isinstance(weight, Constant):
        weight = relay.const(weight.data.numpy().reshape(kh, kw, in_c, multiplier),
                             span=weight.span)
    else:
        weight = relay.reshape(weight, newshape=[kh, kw, in_c, multiplier])
    out = relay.nn.conv2d(ctx.input(0), weight, strides=strides,
                          padding=window_padding(ctx, (kh, kw), strides, dilation),
                          dilation=dilation, groups=in_c, channels=total, kernel_size=(kh, kw),
                          data_layout="NHWC", kernel_layout="HWOI")
    return fused(ctx, _bias(ctx, out))


@converter("FULLY_CONNECTED")
def fully_connected(ctx: OpContext) -> Expr:
    units, in_dim = ctx.tensor(1).shape
    x = ctx.input(0)
    in_shape = ctx.tensor(0).shape
    if len(in_shape) != 2 or in_shape[1] != in_dim:
        x = relay.reshape(x, newshape=[-1, in_dim])
    out = _bias(ctx, relay.nn.dense(x, ctx.input(1), units=units))
    out_shape = ctx.out_tensor().shape
    if ctx.options.get("KeepNumDims") and len(out_shape) != 2:
        out = relay.reshape(out, newshape=list(out_shape))
    return fused(ctx, out)


_BINARY = {"ADD": "add", "SUB": "subtract", "MUL": "multiply", "DIV": "divide",
           "MAXIMUM": "maximum", "MINIMUM": "minimum"}


@converter(*_BINARY)
def binary(ctx: OpContext) -> Expr:
    return fused(ctx, getattr(relay, _BINARY[ctx.op.op_type])(ctx.input(0), ctx.input(1)))


_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "RELU": lambda x: relay.nn.relu(x),
    "RELU6": lambda x: relay.clip(x, 0.0, 6.0),
    "RELU_N1_TO_1": lambda x: relay.clip(x, -1.0, 1.0),
    "LOGISTIC": lambda x: relay.sigmoid(x),
    "TANH": lambda x: relay.tanh(x),
}


@converter(*_UNARY)
def unary(ctx: OpContext) -> Expr:
    return _UNARY[ctx.op.op_type](ctx.input(0))


@converter("PRELU")
def prelu(ctx: OpContext) -> Expr:
    channels = ctx.tensor(0).shape[-1]
    alpha = ctx.input(1)
    if int(np.prod(ctx.tensor(1).shape)) == channels:
        return relay.nn.prelu(ctx.input(0), relay.reshape(alpha, newshape=[channels]), axis=-1)
    x = ctx.input(0)
    return relay.where(relay.less(x, relay.const(0.0)), relay.multiply(x, alpha), x)


def _pool(ctx: OpContext, fn: Callable[..., Expr], **extra: Any) -> Expr:
    kernel = int(ctx.options["FilterHeight"]), int(ctx.options["FilterWidth"])
    strides = _strides(ctx)
    out = fn(ctx.input(0), pool_size=kernel, strides=strides,
             padding=window_padding(ctx, kernel, strides, (1, 1)), layout="NHWC", **extra)
    return fused(ctx, out)


@converter("MAX_POOL_2D")
def max_pool(ctx: OpContext) -> Expr:
    return _pool(ctx, relay.nn.max_pool2d)


@converter("AVERAGE_POOL_2D")
def avg_pool(ctx: OpContext) -> Expr:
    return _pool(ctx, relay.nn.avg_pool2d, count_include_pad=False)


@converter("PAD", "PADV2")
def pad(ctx: OpContext) -> Expr:
    widths = [(int(b), int(e)) for b, e in ctx.value(1).reshape(-1, 2)]
    fill = float(ctx.value(2).reshape(-1)[0]) if ctx.has(2) and len(ctx.op.inputs) > 2 else 0.0
    return relay.nn.pad(ctx.input(0), pad_width=widths, pad_value=fill)


@converter("RESHAPE")
def reshape(ctx: OpContext) -> Expr:
    target = list(ctx.out_tensor().shape)
    if not target and ctx.options.get("NewShapeAsNumpy") is not None:
        target = [int(d) for d in np.asarray(ctx.options["NewShapeAsNumpy"]).reshape(-1)]
    return relay.reshape(ctx.input(0), newshape=target)


@converter("SQUEEZE")
def squeeze(ctx: OpContext) -> Expr:
    return relay.reshape(ctx.input(0), newshape=list(ctx.out_tensor().shape))


@converter("CONCATENATION")
def concatenation(ctx: OpContext) -> Expr:
    parts = [ctx.input(i) for i in range(len(ctx.inputs))]
    return fused(ctx, relay.concatenate(parts, axis=int(ctx.options.get("Axis", 0))))


def _resize(ctx: OpContext, method: str) -> Expr:
    size = [int(v) for v in ctx.value(1).reshape(-1)]
    if ctx.options.get("AlignCorners"):
        mode = "align_corners"
    elif ctx.options.get("HalfPixelCenters"):
        mode = "half_pixel" if method == "linear" else "tf_half_pixel_for_nn"
    else:
        mode = "asymmetric"
    rounding = "round" if ctx.options.get("AlignCorners") else "floor"
    return relay.image.resize2d(ctx.input(0), roi=[0.0, 0.0, 0.0, 0.0], size=size,
                                layout="NHWC", method=method,
                                coordinate_transformation_mode=mode,
                                rounding_method=rounding if method == "nearest_neighbor" else "")


@converter("RESIZE_BILINEAR")
def resize_bilinear(ctx: OpContext) -> Expr:
    return _resize(ctx, "linear")


@converter("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest(ctx: OpContext) -> Expr:
    return _resize(ctx, "nearest_neighbor")


@converter("SOFTMAX")
def softmax(ctx: OpContext) -> Expr:
    x = ctx.input(0)
    beta = float(ctx.options.get("Beta", 1.0))
    if beta != 1.0:
        x = relay.multiply(x, relay.const(beta, "float32"))
    return relay.nn.softmax(x, axis=-1)


_REDUCE = {"MEAN": "mean", "SUM": "sum", "REDUCE_MAX": "max", "REDUCE_MIN": "min"}


@converter(*_REDUCE)
def reduce_op(ctx: OpContext) -> Expr:
    axes = [int(a) for a in ctx.value(1).reshape(-1)]
    fn = getattr(relay, _REDUCE[ctx.op.op_type])
    return fn(ctx.input(0), axis=axes, keepdims=bool(ctx.options.get("KeepDims", False)))


@converter("TRANSPOSE")
def transpose(ctx: OpContext) -> Expr:
    return relay.transpose(ctx.input(0), axes=[int(a) for a in ctx.value(1).reshape(-1)])


@converter("DEQUANTIZE")
def dequantize(ctx: OpContext) -> Expr:
    """fp16 weights become float32 constants; int8/uint8 apply (q - zero_point) * scale.
    Constant inputs are folded at import (as TVM's tflite frontend prefetches them)."""
    tensor = ctx.tensor(0)
    expr = ctx.input(0)
    if tensor.dtype in ("float16", "float32"):
        if isinstance(expr, Constant):
            return relay.const(expr.data.numpy().astype("float32"))
        return relay.cast(expr, "float32")
    quant = tensor.quant
    if quant is None:
        raise ctx.fail(f"{tensor.dtype} tensor {tensor.name!r} has no quantization parameters")
    shape = [1] * len(tensor.shape)
    if quant.scale.size > 1:
        shape[quant.axis] = quant.scale.size
    scale = quant.scale.reshape(shape if quant.scale.size > 1 else ())
    zero = quant.zero_point.reshape(shape if quant.zero_point.size > 1 else ())
    if isinstance(expr, Constant):
        value = (expr.data.numpy().astype("float32") - zero.astype("float32")) * scale
        return relay.const(value.astype("float32"))
    shifted = relay.subtract(relay.cast(expr, "float32"), relay.const(zero.astype("float32")))
    return relay.multiply(shifted, relay.const(scale.astype("float32")))
