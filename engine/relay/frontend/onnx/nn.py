"""ONNX neural-network layers: convolutions, normalization, pooling, activations, Gemm/MatMul."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis, relay_padding, spatial_pads

_CONV = {1: "conv1d", 2: "conv2d", 3: "conv3d"}
_CONV_T = {1: "conv1d_transpose", 2: "conv2d_transpose", 3: "conv3d_transpose"}
_MAX_POOL = {1: "max_pool1d", 2: "max_pool2d", 3: "max_pool3d"}
_AVG_POOL = {1: "avg_pool1d", 2: "avg_pool2d", 3: "avg_pool3d"}


def _nn(ctx: NodeContext, table: dict[int, str], nd: int) -> Callable[..., Any]:
    if nd not in table:
        raise ctx.fail(f"{nd}-D inputs are not supported (1-D to 3-D are)")
    return getattr(relay.nn, table[nd])


def _window(ctx: NodeContext, kernel: list[int]) -> tuple[list[int], list[int], list[int]]:
    nd = len(kernel)
    strides = [int(s) for s in ctx.attr("strides", [1] * nd)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * nd)]
    return strides, dilations, spatial_pads(ctx, kernel, strides, dilations)


def _with_bias(ctx: NodeContext, out: Expr) -> Expr:
    return relay.nn.bias_add(out, ctx.input(2), axis=1) if ctx.has(2) else out


def conv_window(ctx: NodeContext, w_index: int = 1) -> dict[str, Any]:
    """The node's convolution attributes as Relay conv keyword arguments (`w_index`: the
    input holding the weight, whose shape gives the kernel and the channels)."""
    w_shape = ctx.static_shape(w_index)
    kernel = [int(k) for k in ctx.attr("kernel_shape", w_shape[2:])]
    strides, dilations, pads = _window(ctx, kernel)
    return {"strides": strides, "padding": relay_padding(pads), "dilation": dilations,
            "groups": int(ctx.attr("group", 1)), "channels": w_shape[0], "kernel_size": kernel}


def conv_of(ctx: NodeContext, x: Expr, w: Expr, w_index: int = 1) -> Expr:
    """The convolution of `x` by `w` under the node's attributes (`w_index`: the input
    whose shape `w` has), without the bias."""
    window = conv_window(ctx, w_index)
    return _nn(ctx, _CONV, len(window["kernel_size"]))(x, w, **window)


@converter("Conv")
def conv(ctx: NodeContext) -> ConvertResult:
    return _with_bias(ctx, conv_of(ctx, ctx.input(0), ctx.input(1)))


@converter("DeformConv", since=19)
def deform_conv(ctx: NodeContext) -> ConvertResult:
    """Inputs X, W, offset, optional B and mask (2-D only, as Relay's deformable conv)."""
    w_shape = ctx.static_shape(1)
    kernel = [int(k) for k in ctx.attr("kernel_shape", w_shape[2:])]
    if len(kernel) != 2:
        raise ctx.fail(f"{len(kernel)}-D deformable convolution is not supported (2-D is)")
    strides, dilations, pads = _window(ctx, kernel)
    kwargs: dict[str, Any] = {
        "strides": strides, "padding": relay_padding(pads), "dilation": dilations,
        "deformable_groups": int(ctx.attr("offset_group", 1)),
        "groups": int(ctx.attr("group", 1)), "channels": w_shape[0], "kernel_size": kernel}
    x, offset, w = ctx.input(0), ctx.input(2), ctx.input(1)
    out = relay.nn.modulated_deformable_conv2d(x, offset, w, ctx.input(4), **kwargs) \
        if ctx.has(4) else relay.nn.deformable_conv2d(x, offset, w, **kwargs)
    return relay.nn.bias_add(out, ctx.input(3), axis=1) if ctx.has(3) else out


@converter("ConvTranspose")
def conv_transpose(ctx: NodeContext) -> ConvertResult:
    w_shape = ctx.static_shape(1)
    kernel = [int(k) for k in ctx.attr("kernel_shape", w_shape[2:])]
    nd, groups = len(kernel), int(ctx.attr("group", 1))
    strides = [int(s) for s in ctx.attr("strides", [1] * nd)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * nd)]
    out_pad = [int(p) for p in ctx.attr("output_padding", [0] * nd)]
    pads, grow = _transpose_pads(ctx, kernel, strides, dilations, out_pad)
    fn = _nn(ctx, _CONV_T, nd)
    out = fn(ctx.input(0), ctx.input(1), strides=strides, padding=relay_padding(pads),
             dilation=dilations, groups=groups, channels=w_shape[1] * groups, kernel_size=kernel,
             output_padding=out_pad)
    if any(grow):  # an output_shape beyond the full output: zeros (then the bias) at the end
        out = relay.nn.pad(out, [(0, 0), (0, 0)] + [(0, g) for g in grow])
    return _with_bias(ctx, out)


def _transpose_pads(ctx: NodeContext, kernel: list[int], strides: list[int],
                    dilations: list[int], out_pad: list[int]) -> tuple[list[int], list[int]]:
    """The pads (begins then ends) and how far to grow each spatial axis at its end. With
    `output_shape` (or SAME auto_pad) the pads are derived from the wanted output size: the
    odd one goes to the end for SAME_UPPER, to the begin otherwise (the spec's rule); an
    output larger than the full, unpadded one grows at the end (as onnxruntime does)."""
    output_shape = ctx.attr("output_shape")
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    nd = len(kernel)
    if output_shape is None and auto_pad in ("NOTSET", "", "VALID"):
        return [int(p) for p in ctx.attr("pads", [0] * (2 * nd))], [0] * nd
    spatial = ctx.static_shape(0)[2:]
    targets = list(output_shape)[-nd:] if output_shape is not None else [
        s * st for s, st in zip(spatial, strides)]
    begins, ends, grow = [], [], []
    for size, k, s, d, op, target in zip(spatial, kernel, strides, dilations, out_pad, targets):
        total = s * (size - 1) + op + (k - 1) * d + 1 - int(target)
        if -total >= s:
            raise ctx.fail(f"output_shape {list(output_shape or [])} does not fit the input "
                           f"(size {size}, kernel {k}, stride {s}): a transposed convolution "
                           f"of it is at most {target + total + s - 1} long")
        grow.append(max(0, -total))
        total = max(0, total)
        small, big = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else big)
        ends.append(big if auto_pad == "SAME_UPPER" else small)
    return begins + ends, grow


@converter("BatchNormalization")
def batch_norm(ctx: NodeContext) -> ConvertResult:
    training = bool(ctx.attr("training_mode", 0)) and ctx.opset >= 14
    if training:
        return _batch_norm_training(ctx)
    out = relay.nn.batch_norm(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                              ctx.input(4), axis=1, epsilon=float(ctx.attr("epsilon", 1e-5)))
    return [out[0]]  # the optional outputs of older opsets: unavailable (used in training)


def _batch_norm_training(ctx: NodeContext) -> ConvertResult:
    """opset 14+ training_mode: normalise by the batch's statistics; the optional outputs
    are the updated running mean and variance (momentum-weighted)."""
    x = ctx.input(0)
    axes = [a for a in range(ctx.rank(0)) if a != 1]
    mean = relay.mean(x, axis=axes)
    var = relay.variance(x, axis=axes)
    out = relay.nn.batch_norm(x, ctx.input(1), ctx.input(2), mean, var, axis=1,
                              epsilon=float(ctx.attr("epsilon", 1e-5)))
    momentum = float(ctx.attr("momentum", 0.9))
    dtype = ctx.dtype(0)

    def running(old: Expr, current: Expr) -> Expr:
        return relay.add(relay.multiply(old, relay.const(momentum, dtype)),
                         relay.multiply(current, relay.const(1.0 - momentum, dtype)))

    return [out[0], running(ctx.input(3), mean), running(ctx.input(4), var)]


@converter("Relu")
def relu(ctx: NodeContext) -> ConvertResult:
    return relay.nn.relu(ctx.input(0))


@converter("LeakyRelu")
def leaky_relu(ctx: NodeContext) -> ConvertResult:
    return relay.nn.leaky_relu(ctx.input(0), alpha=float(ctx.attr("alpha", 0.01)))


@converter("PRelu")
def prelu(ctx: NodeContext) -> ConvertResult:
    x, slope = ctx.input(0), ctx.input(1)
    rank, s_shape = ctx.rank(0), ctx.shape(1)
    channels = ctx.shape(0)[1] if rank >= 2 else None
    squeezable = [d for d in s_shape if d != 1]
    if channels is not None and len(squeezable) <= 1 and (
            int(np.prod([d or 0 for d in s_shape])) == channels) and len(s_shape) in (1, rank - 1):
        if len(s_shape) != 1:
            slope = relay.reshape(slope, newshape=[channels])
        return relay.nn.prelu(x, slope, axis=1)
    zero = relay.const(0, ctx.dtype(0))
    return relay.where(relay.less(x, zero), relay.multiply(x, slope), x)


@converter("Sigmoid")
def sigmoid(ctx: NodeContext) -> ConvertResult:
    return relay.sigmoid(ctx.input(0))


@converter("HardSigmoid")
def hard_sigmoid(ctx: NodeContext) -> ConvertResult:
    dtype = ctx.dtype(0)
    alpha = relay.const(float(ctx.attr("alpha", 0.2)), dtype)
    beta = relay.const(float(ctx.attr("beta", 0.5)), dtype)
    return relay.clip(relay.add(relay.multiply(ctx.input(0), alpha), beta), 0.0, 1.0)


@converter("Tanh")
def tanh(ctx: NodeContext) -> ConvertResult:
    return relay.tanh(ctx.input(0))


@converter("Erf")
def erf(ctx: NodeContext) -> ConvertResult:
    return relay.erf(ctx.input(0))


@converter("Gelu", since=20)
def gelu(ctx: NodeContext) -> ConvertResult:
    x, dtype = ctx.input(0), ctx.dtype(0)

    def c(v: float) -> Expr:
        return relay.const(v, dtype)

    if ctx.attr("approximate", "none") == "tanh":
        cube = relay.multiply(relay.multiply(x, x), x)
        inner = relay.multiply(c(math.sqrt(2.0 / math.pi)),
                               relay.add(x, relay.multiply(c(0.044715), cube)))
        return relay.multiply(relay.multiply(c(0.5), x), relay.add(c(1.0), relay.tanh(inner)))
    half_x = relay.multiply(x, c(0.5))
    return relay.multiply(half_x, relay.add(c(1.0), relay.erf(relay.multiply(x, c(0.5 ** 0.5)))))


def _softmax_family(ctx: NodeContext, fn_name: str) -> ConvertResult:
    fn = getattr(relay.nn, fn_name)
    x = ctx.input(0)
    default_axis = -1 if ctx.opset >= 13 else 1
    rank = ctx.rank(0)
    axis = norm_axis(int(ctx.attr("axis", default_axis)), rank)
    if ctx.opset >= 13 or axis == rank - 1:
        return fn(x, axis=axis)
    # opset < 13: softmax over the input coerced to 2-D at `axis`
    shape = ctx.static_shape(0)
    flat = relay.reshape(x, newshape=[int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
    return relay.reshape(fn(flat, axis=1), newshape=list(shape))


@converter("Softmax")
def softmax(ctx: NodeContext) -> ConvertResult:
    return _softmax_family(ctx, "softmax")


@converter("LogSoftmax")
def log_softmax(ctx: NodeContext) -> ConvertResult:
    return _softmax_family(ctx, "log_softmax")


@converter("MaxPool")
def max_pool(ctx: NodeContext) -> ConvertResult:
    """The maxima, and when read the Indices output: each maximum's flat index into the
    input (nn.max_pool_argmax, row- or column-major by storage_order)."""
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides, dilations, pads = _window(ctx, kernel)
    fn = _nn(ctx, _MAX_POOL, len(kernel))
    ceil_mode = bool(ctx.attr("ceil_mode", 0))
    out = fn(ctx.input(0), pool_size=kernel, strides=strides, dilation=dilations,
             padding=relay_padding(pads), ceil_mode=ceil_mode)
    if len(ctx.output_names) < 2 or not ctx.output_names[1]:
        return out
    indices = relay.nn.max_pool_argmax(ctx.input(0), kernel, strides, dilations,
                                       relay_padding(pads), ceil_mode,
                                       int(ctx.attr("storage_order", 0)))
    return [out, indices]


@converter("MaxUnpool", since=9)
def max_unpool(ctx: NodeContext) -> ConvertResult:
    """Zeros with each value of X put at its flat index (MaxPool's Indices) into the output:
    output_shape when given (the indices count in it, as onnxruntime reads them), else
    (in - 1) * stride + kernel - pads per spatial axis."""
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    nd = len(kernel)
    strides = [int(s) for s in ctx.attr("strides", [1] * nd)]
    pads = [int(p) for p in ctx.attr("pads", [0] * (2 * nd))]
    indices = relay.reshape(ctx.input(1), newshape=[-1])
    updates = relay.reshape(ctx.input(0), newshape=[-1])
    if ctx.has(2) and ctx.value(2) is None:  # output_shape computed at run time
        target = relay.cast(ctx.input(2), "int64")
        size = relay.reshape(relay.prod(target, keepdims=True), newshape=[1])
        flat = relay.dyn.zeros(size, ctx.dtype(0))
        return relay.dyn.reshape(relay.scatter_elements(flat, indices, updates, axis=0), target)
    if ctx.has(2):
        out_shape = ctx.ints(2, "output_shape")
    else:
        shape = ctx.static_shape(0)
        out_shape = [*shape[:2], *((shape[2 + a] - 1) * strides[a] + kernel[a] - pads[a]
                                   - pads[a + nd] for a in range(nd))]
    flat = relay.zeros([int(np.prod(out_shape))], ctx.dtype(0))
    return relay.reshape(relay.scatter_elements(flat, indices, updates, axis=0),
                         newshape=out_shape)


def average_pool_of(ctx: NodeContext, x: Expr) -> Expr:
    """The average pool of `x` under the node's AveragePool attributes."""
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides, dilations, pads = _window(ctx, kernel)
    fn = _nn(ctx, _AVG_POOL, len(kernel))
    return fn(x, pool_size=kernel, strides=strides, dilation=dilations,
              padding=relay_padding(pads), ceil_mode=bool(ctx.attr("ceil_mode", 0)),
              count_include_pad=bool(ctx.attr("count_include_pad", 0)))


@converter("AveragePool")
def avg_pool(ctx: NodeContext) -> ConvertResult:
    return average_pool_of(ctx, ctx.input(0))


@converter("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx: NodeContext) -> ConvertResult:
    rank = ctx.rank(0)
    is_avg = ctx.op_type == "GlobalAveragePool"
    if rank == 4:
        fn = relay.nn.global_avg_pool2d if is_avg else relay.nn.global_max_pool2d
        return fn(ctx.input(0))
    reduce = relay.mean if is_avg else relay.max
    return reduce(ctx.input(0), axis=list(range(2, rank)), keepdims=True)


@converter("LRN")
def lrn(ctx: NodeContext) -> ConvertResult:
    return relay.nn.lrn(ctx.input(0), size=int(ctx.attr("size")), axis=1,
                        alpha=float(ctx.attr("alpha", 1e-4)), beta=float(ctx.attr("beta", 0.75)),
                        bias=float(ctx.attr("bias", 1.0)))


@converter("Dropout")
def dropout(ctx: NodeContext) -> ConvertResult:
    """Inference: the identity; the optional mask keeps every element (all true)."""
    x = ctx.input(0)
    training = ctx.value(2) if ctx.has(2) else np.zeros(1, "bool")
    if training is None or bool(np.asarray(training).reshape(-1)[0]):
        raise ctx.fail("training-mode Dropout (random, or decided at run time) is not supported")
    mask_dtype = "bool" if ctx.opset >= 10 else ctx.dtype(0)
    return [x, relay.cast(relay.ones_like(x), mask_dtype)]


@converter("Gemm")
def gemm(ctx: NodeContext) -> ConvertResult:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.attr("transA", 0):
        a = relay.transpose(a, axes=[1, 0])
    if not ctx.attr("transB", 0):
        b = relay.transpose(b, axes=[1, 0])
    units = ctx.shape(1)[0 if ctx.attr("transB", 0) else 1]
    out = relay.nn.dense(a, b, units=units)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    dtype = ctx.dtype(0)
    if alpha != 1.0:
        out = relay.multiply(out, relay.const(alpha, dtype))
    if not ctx.has(2):
        return out
    c = ctx.input(2)
    if beta != 1.0:
        c = relay.multiply(c, relay.const(beta, dtype))
    if len(ctx.shape(2)) == 1 and units is not None and ctx.shape(2)[0] == units:
        return relay.nn.bias_add(out, c, axis=1)
    return relay.add(out, c)


@converter("MatMul")
def matmul(ctx: NodeContext) -> ConvertResult:
    return matmul_of(ctx, ctx.input(0), ctx.input(1))


@dataclass(frozen=True, slots=True)
class MatmulKernels:
    """What `matmul_of` multiplies with: `dense(a, weight, units)` for a 2-D a and an
    [N, K] weight (a 2-D b transposed), `batch(a, b)` for (B, M, K) @ (B, K, N); the float
    Relay ops by default, qnn.dense / qnn.batch_matmul for the integer ops."""

    dense: Callable[[Expr, Expr, Any], Expr]
    batch: Callable[[Expr, Expr], Expr]


FLOAT_MATMUL = MatmulKernels(
    lambda a, w, units: relay.nn.dense(a, w, units=units),
    lambda a, b: relay.nn.batch_matmul(a, b, transpose_a=False, transpose_b=False))


def matmul_of(ctx: NodeContext, a: Expr, b: Expr, b_index: int = 1,
              kernels: MatmulKernels = FLOAT_MATMUL) -> Expr:
    """numpy.matmul of `a` and `b`, shaped as inputs 0 and `b_index`: a 2-D b as a dense
    over a flattened to 2-D, otherwise a batch matmul over the broadcast leading dims."""
    a_shape, b_shape = ctx.shape(0), ctx.shape(b_index)
    if len(a_shape) == 1 or len(b_shape) == 1:
        return _matmul_vector(ctx, a, b, a_shape, b_shape, kernels)
    if len(b_shape) == 2:
        return _matmul_dense(ctx, a, b, a_shape, b_shape, kernels)
    return _matmul_batch(a, b, ctx.static_shape(0), ctx.static_shape(b_index), kernels)


def _matmul_dense(ctx: NodeContext, a: Expr, b: Expr, a_shape: tuple, b_shape: tuple,
                  kernels: MatmulKernels) -> Expr:
    units = b_shape[1]
    weight = relay.transpose(b, axes=[1, 0])
    if len(a_shape) == 2:
        return kernels.dense(a, weight, units)
    static = ctx.static_shape(0)
    flat = relay.reshape(a, newshape=[int(np.prod(static[:-1])), static[-1]])
    out = kernels.dense(flat, weight, units)
    return relay.reshape(out, newshape=[*static[:-1], -1 if units is None else int(units)])


def _matmul_batch(a: Expr, b: Expr, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                  kernels: MatmulKernels) -> Expr:
    batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    size = int(np.prod(batch)) if batch else 1
    a3 = _as_batch3(a, a_shape, batch, size)
    b3 = _as_batch3(b, b_shape, batch, size)
    out = kernels.batch(a3, b3)
    return relay.reshape(out, newshape=[*batch, a_shape[-2], b_shape[-1]])


def _as_batch3(x: Expr, shape: tuple[int, ...], batch: tuple[int, ...], size: int) -> Expr:
    if tuple(shape[:-2]) != batch:
        x = relay.broadcast_to(x, shape=[*batch, *shape[-2:]])
    if len(shape) == 3 and tuple(shape[:-2]) == batch:
        return x
    return relay.reshape(x, newshape=[size, *shape[-2:]])


def _matmul_vector(ctx: NodeContext, a: Expr, b: Expr, a_shape: tuple, b_shape: tuple,
                   kernels: MatmulKernels) -> Expr:
    squeeze = []
    if len(a_shape) == 1:
        a = relay.expand_dims(a, axis=0)
        a_shape = (1, *a_shape)
        squeeze.append(-2)
    if len(b_shape) == 1:
        b = relay.expand_dims(b, axis=1)
        b_shape = (*b_shape, 1)
        squeeze.append(-1)
    if len(b_shape) == 2:
        out = _matmul_dense(ctx, a, b, a_shape, b_shape, kernels)
    else:
        out = _matmul_batch(a, b, tuple(int(d) for d in a_shape),
                            tuple(int(d) for d in b_shape), kernels)
    rank = max(len(a_shape), len(b_shape))
    return relay.squeeze(out, axis=[rank + s for s in squeeze])
