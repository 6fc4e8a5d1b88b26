"""TFLite operator converters (NHWC kept as NHWC, as TVM's tflite frontend does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Constant, Expr
from engine.relay.frontend.tflite.context import OpContext, converter, fused
from engine.relay.frontend.tflite.quantize import (
    is_hybrid,
    quantize_rows,
    rescale,
    weight_scale,
)


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


def strides_of(ctx: OpContext) -> tuple[int, int]:
    return int(ctx.options.get("StrideH", 1)), int(ctx.options.get("StrideW", 1))


def dilation_of(ctx: OpContext) -> tuple[int, int]:
    return int(ctx.options.get("DilationHFactor", 1)), int(ctx.options.get("DilationWFactor", 1))


def _bias(ctx: OpContext, out: Expr, index: int = 2) -> Expr:
    return relay.nn.bias_add(out, ctx.input(index), axis=-1) if ctx.has(index) else out


def _kernel(ctx: OpContext, axes: tuple[int, ...] | None, shape: list[int] | None = None,
            dtype: str | None = None) -> Expr:
    """The kernel transposed (or reshaped) to TVM's layout and cast to `dtype`: folded when
    constant (as TVM does), keeping the constant's own span (its tensor or DEQUANTIZE layer)."""
    expr = ctx.input(1)
    if isinstance(expr, Constant):
        data = expr.data.numpy()
        data = data.transpose(axes) if axes else data.reshape(shape)
        data = np.ascontiguousarray(data, dtype=dtype or data.dtype)
        return relay.const(data, span=expr.span)
    out = relay.transpose(expr, axes=list(axes)) if axes else relay.reshape(expr, newshape=shape)
    return relay.cast(out, dtype) if dtype else out


def _hybrid(ctx: OpContext, compute: Callable[[Expr], Expr], x: Expr, axes: list[int],
            asymmetric: bool, channel_axis: int) -> Expr:
    """Dynamic-range arithmetic (see `quantize`): `compute` maps the int32 input to the int32
    accumulator; the result is rescaled to float before the bias."""
    q, input_scale = quantize_rows(x, axes, asymmetric)
    scale = weight_scale(ctx, 1, channel_axis)
    return _bias(ctx, rescale(compute(q), input_scale, scale))


def _per_channel(ctx: OpContext) -> bool:
    quant = ctx.tensor(1).quant
    return quant is not None and quant.scale.size > 1


def _nhwc_conv(ctx: OpContext, weight: Expr, kernel: tuple[int, int], groups: int,
               channels: int, kernel_layout: str, hybrid: bool) -> Callable[[Expr], Expr]:
    """The layer's conv2d on NHWC data (int32 accumulation for a hybrid layer)."""
    strides, dilation = strides_of(ctx), dilation_of(ctx)
    padding = window_padding(ctx, kernel, strides, dilation)

    def conv(x: Expr) -> Expr:
        return relay.nn.conv2d(x, weight, strides=strides, padding=padding, dilation=dilation,
                               groups=groups, channels=channels, kernel_size=kernel,
                               data_layout="NHWC", kernel_layout=kernel_layout,
                               out_dtype="int32" if hybrid else "")

    return conv


@converter("CONV_2D")
def conv2d(ctx: OpContext) -> Expr:
    out_c, kh, kw, in_c = ctx.tensor(1).shape
    hybrid = is_hybrid(ctx)
    weight = _kernel(ctx, (1, 2, 3, 0), dtype="int32" if hybrid else None)
    conv = _nhwc_conv(ctx, weight, (kh, kw), ctx.shape(0)[3] // in_c, out_c, "HWIO", hybrid)
    if hybrid:  # per-channel weights quantize the input asymmetrically (EvalHybridPerChannel)
        return fused(ctx, _hybrid(ctx, conv, ctx.input(0), [1, 2, 3], _per_channel(ctx), 0))
    return fused(ctx, _bias(ctx, conv(ctx.input(0))))


@converter("DEPTHWISE_CONV_2D")
def depthwise_conv2d(ctx: OpContext) -> Expr:
    _, kh, kw, total = ctx.tensor(1).shape
    in_c = ctx.shape(0)[3]
    hybrid = is_hybrid(ctx)
    weight = _kernel(ctx, None, [kh, kw, in_c, total // in_c], "int32" if hybrid else None)
    conv = _nhwc_conv(ctx, weight, (kh, kw), in_c, total, "HWOI", hybrid)
    if hybrid:  # always asymmetric, per channel
        return fused(ctx, _hybrid(ctx, conv, ctx.input(0), [1, 2, 3], True, 3))
    return fused(ctx, _bias(ctx, conv(ctx.input(0))))


def fc_operands(ctx: OpContext) -> tuple[int, int, Expr]:
    """FULLY_CONNECTED's (units, input depth, input as rows of that depth)."""
    units, in_dim = ctx.tensor(1).shape
    x, in_shape = ctx.input(0), ctx.shape(0)
    if len(in_shape) != 2 or in_shape[1] != in_dim:
        x = relay.reshape(x, newshape=[-1, in_dim])
    return units, in_dim, x


def fc_keep_dims(ctx: OpContext, out: Expr, units: int) -> Expr:
    """The output reshaped to the input's leading dims when KeepNumDims asks for it."""
    if ctx.option("KeepNumDims", False) and len(ctx.out_tensor().shape) != 2:
        return relay.reshape(out, newshape=[*ctx.shape(0)[:-1], units])
    return out


@converter("FULLY_CONNECTED")
def fully_connected(ctx: OpContext) -> Expr:
    units, in_dim, x = fc_operands(ctx)
    if is_hybrid(ctx):  # one (scale, zero point) per input row
        weight = _kernel(ctx, None, [units, in_dim], "int32")
        asymmetric = bool(ctx.option("AsymmetricQuantizeInputs", False))
        out = _hybrid(ctx, lambda q: relay.nn.dense(q, weight, units=units, out_dtype="int32"),
                      x, [1], asymmetric, 0)
    else:
        out = _bias(ctx, relay.nn.dense(x, ctx.input(1), units=units))
    return fused(ctx, fc_keep_dims(ctx, out, units))


def _pool(ctx: OpContext, fn: Callable[..., Expr], **extra: Any) -> Expr:
    kernel = int(ctx.options["FilterHeight"]), int(ctx.options["FilterWidth"])
    strides = strides_of(ctx)
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


def batched(x: Expr, shape: tuple[int, ...], batch: tuple[int, ...]) -> Expr:
    """`x` as (prod(batch), rows, cols), broadcast along the batch where it differs; a batch
    of one stays one (nn.batch_matmul broadcasts it)."""
    if int(np.prod(shape[:-2], dtype=np.int64)) == 1:
        return relay.reshape(x, newshape=[1, *shape[-2:]]) if len(shape) != 3 else x
    if tuple(shape[:-2]) != batch:
        x = relay.broadcast_to(x, shape=[*batch, *shape[-2:]])
    return x if len(batch) == 1 else relay.reshape(x, newshape=[-1, *shape[-2:]])


@converter("BATCH_MATMUL")
def batch_matmul(ctx: OpContext) -> Expr:
    if ctx.tensor(1).dtype in ("int8", "uint8"):
        raise ctx.fail("dynamic-range BATCH_MATMUL (int8 right-hand side) is not supported")
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    adj_x, adj_y = bool(ctx.option("AdjX", False)), bool(ctx.option("AdjY", False))
    batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    out = relay.nn.batch_matmul(batched(ctx.input(0), a_shape, batch),
                                batched(ctx.input(1), b_shape, batch),
                                transpose_a=adj_x, transpose_b=adj_y)
    rows = a_shape[-1] if adj_x else a_shape[-2]
    cols = b_shape[-2] if adj_y else b_shape[-1]
    return out if len(batch) == 1 else relay.reshape(out, newshape=[*batch, rows, cols])
