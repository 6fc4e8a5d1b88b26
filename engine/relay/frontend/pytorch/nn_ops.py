"""Network layers: convolution, matmul, normalization, pooling, attention, resampling."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.pytorch.ops import (
    AtenCall,
    cast,
    const,
    converter,
    ints,
    operand,
    tensor,
)

_CONV: dict[int, Callable[..., Expr]] = {1: relay.nn.conv1d, 2: relay.nn.conv2d, 3: relay.nn.conv3d}
_CONV_T: dict[int, Callable[..., Expr]] = {1: relay.nn.conv1d_transpose, 2: relay.nn.conv2d_transpose,
           3: relay.nn.conv3d_transpose}


def _conv(call: AtenCall, bias: Any, stride: Any, padding: Any, dilation: Any, transposed: bool,
          output_padding: Any, groups: int) -> Expr:
    x, w = tensor(call, 0), tensor(call, 1)
    w_shape = call.shape(1)
    nd = len(w_shape) - 2
    if nd not in _CONV:
        raise call.fail(f"{nd}-D convolution is not supported")
    if isinstance(padding, str):
        if padding != "valid" and padding != "same":
            raise call.fail(f"padding={padding!r} is not supported")
        padding = [0] * nd if padding == "valid" else _same_padding(call, w_shape, dilation, nd)
    pads = ints(padding, nd)
    pads = pads + pads if len(pads) == nd else pads
    common: dict[str, Any] = {"strides": ints(stride, nd), "padding": pads, "dilation": ints(dilation, nd),
              "groups": int(groups), "kernel_size": list(w_shape[2:])}
    if transposed:
        out = _CONV_T[nd](x, w, output_padding=ints(output_padding, nd),
                          channels=w_shape[1] * int(groups), **common)
    else:
        out = _CONV[nd](x, w, channels=w_shape[0], **common)
    return relay.nn.bias_add(out, bias, axis=1) if isinstance(bias, Expr) else out


def _same_padding(call: AtenCall, w_shape: tuple[int, ...], dilation: Any, nd: int
                  ) -> list[int]:
    """Begins then ends for padding='same' (stride 1): the extra pad goes at the end."""
    total = [d * (k - 1) for d, k in zip(ints(dilation, nd), w_shape[2:])]
    return [t // 2 for t in total] + [t - t // 2 for t in total]


@converter("aten.conv1d.default", "aten.conv2d.default", "aten.conv3d.default",
           "aten.conv1d.padding", "aten.conv2d.padding", "aten.conv3d.padding")
def conv(call: AtenCall) -> Expr:
    return _conv(call, call.arg(2, "bias"), call.arg(3, "stride", 1), call.arg(4, "padding", 0),
                 call.arg(5, "dilation", 1), False, 0, call.arg(6, "groups", 1))


@converter("aten.conv_transpose1d.default", "aten.conv_transpose2d.input",
           "aten.conv_transpose3d.input")
def conv_transpose(call: AtenCall) -> Expr:
    return _conv(call, call.arg(2, "bias"), call.arg(3, "stride", 1), call.arg(4, "padding", 0),
                 call.arg(7, "dilation", 1), True, call.arg(5, "output_padding", 0),
                 call.arg(6, "groups", 1))


@converter("aten.convolution.default", "aten._convolution.default")
def convolution(call: AtenCall) -> Expr:
    return _conv(call, call.args[2], call.args[3], call.args[4], call.args[5], bool(call.args[6]),
                 call.args[7], call.args[8])


# --- matmul ----------------------------------------------------------------------------------
def matmul_exprs(call: AtenCall, a: Expr, b: Expr, a_shape: tuple[int, ...],
                 b_shape: tuple[int, ...]) -> Expr:
    """torch.matmul of ranks >= 1 with broadcast batch dims, as dense / batch_matmul."""
    if len(a_shape) == 1 and len(b_shape) == 1:
        return relay.sum(relay.multiply(a, b))
    if len(b_shape) == 1:
        return relay.squeeze(matmul_exprs(call, a, relay.expand_dims(b, 1), a_shape,
                                          (*b_shape, 1)), axis=[-1])
    if len(a_shape) == 1:
        out = matmul_exprs(call, relay.expand_dims(a, 0), b, (1, *a_shape), b_shape)
        return relay.squeeze(out, axis=[-2])
    if len(b_shape) == 2:
        flat = relay.reshape(a, newshape=[-1, a_shape[-1]]) if len(a_shape) != 2 else a
        out = relay.nn.dense(flat, relay.transpose(b, axes=[1, 0]))
        return out if len(a_shape) == 2 else relay.reshape(
            out, newshape=[*a_shape[:-1], b_shape[-1]])
    batch = _broadcast(call, a_shape[:-2], b_shape[:-2])
    a3 = _batched(a, a_shape, batch)
    b3 = _batched(b, b_shape, batch)
    out = relay.nn.batch_matmul(a3, b3, transpose_b=False)
    return relay.reshape(out, newshape=[*batch, a_shape[-2], b_shape[-1]])


def _broadcast(call: AtenCall, a: tuple[int, ...], b: tuple[int, ...]) -> list[int]:
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise call.fail(f"batch dims {a} and {b} do not broadcast")
        out.append(max(x, y))
    return out


def _batched(x: Expr, shape: tuple[int, ...], batch: list[int]) -> Expr:
    if len(shape) == 2:
        x = relay.expand_dims(x, 0)
        shape = (1, *shape)
    if list(shape[:-2]) != batch:
        x = relay.broadcast_to(x, [*batch, *shape[-2:]])
    return relay.reshape(x, newshape=[-1, *shape[-2:]])


@converter("aten.matmul.default", "aten.mm.default", "aten.bmm.default")
def matmul(call: AtenCall) -> Expr:
    return matmul_exprs(call, tensor(call, 0), tensor(call, 1), call.shape(0), call.shape(1))


@converter("aten.linear.default")
def linear(call: AtenCall) -> Expr:
    x, w, bias = tensor(call, 0), tensor(call, 1), call.arg(2, "bias")
    shape = call.shape(0)
    flat = relay.reshape(x, newshape=[-1, shape[-1]]) if len(shape) != 2 else x
    out = relay.nn.dense(flat, w, units=call.shape(1)[0])
    if isinstance(bias, Expr):
        out = relay.nn.bias_add(out, bias, axis=-1)
    return out if len(shape) == 2 else relay.reshape(out, newshape=list(call.out_shape))


@converter("aten.addmm.default", "aten.baddbmm.default", "aten.addmv.default")
def addmm(call: AtenCall) -> Expr:
    product = matmul_exprs(call, tensor(call, 1), tensor(call, 2), call.shape(1), call.shape(2))
    beta, alpha = call.kwargs.get("beta", 1), call.kwargs.get("alpha", 1)
    dtype = call.out_dtype
    if alpha != 1:
        product = relay.multiply(product, const(alpha, dtype))
    if beta == 0:
        return product
    base = tensor(call, 0)
    return relay.add(base if beta == 1 else relay.multiply(base, const(beta, dtype)), product)


@converter("aten.einsum.default")
def einsum(call: AtenCall) -> Expr:
    return relay.einsum(list(call.args[1]), str(call.args[0]))


# --- normalization ---------------------------------------------------------------------------
def _batch_norm(call: AtenCall, x: Expr, w: Any, b: Any, mean: Any, var: Any, training: bool,
                eps: float) -> list[Any]:
    channels = call.shape(0)[1]
    dtype = call.dtype(0)
    if training or not isinstance(mean, Expr):  # normalize by the batch's own statistics
        axes = [a for a in range(len(call.shape(0))) if a != 1]
        mean = relay.mean(x, axis=axes)
        var = relay.variance(x, axis=axes)
    w = w if isinstance(w, Expr) else relay.ones([channels], dtype)
    b = b if isinstance(b, Expr) else relay.zeros([channels], dtype)
    out = relay.nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=float(eps))[0]
    return [out, mean, var]


@converter("aten.batch_norm.default")
def batch_norm(call: AtenCall) -> Expr:
    return _batch_norm(call, tensor(call, 0), call.args[1], call.args[2], call.args[3],
                       call.args[4], bool(call.arg(5, "training")), call.arg(7, "eps", 1e-5))[0]


@converter("aten._native_batch_norm_legit_no_training.default")
def batch_norm_no_training(call: AtenCall) -> list[Any]:
    return _batch_norm(call, tensor(call, 0), call.args[1], call.args[2], call.args[3],
                       call.args[4], False, call.arg(6, "eps", 1e-5))


@converter("aten._native_batch_norm_legit.default", "aten.native_batch_norm.default",
           "aten._native_batch_norm_legit_functional.default")
def batch_norm_legit(call: AtenCall) -> list[Any]:
    out = _batch_norm(call, tensor(call, 0), call.args[1], call.args[2], call.args[3],
                      call.args[4], bool(call.args[5]), call.args[7])
    return [*out, call.args[3], call.args[4]][: len(call.outs)]


@converter("aten._native_batch_norm_legit.no_stats")
def batch_norm_no_stats(call: AtenCall) -> list[Any]:
    return _batch_norm(call, tensor(call, 0), call.args[1], call.args[2], None, None, True,
                       call.args[5])


def _layer_norm(call: AtenCall, shape: list[int], weight: Any, bias: Any, eps: float
                ) -> list[Expr]:
    x = tensor(call, 0)
    rank = len(call.shape(0))
    axes = list(range(rank - len(shape), rank))
    mean = relay.mean(x, axis=axes, keepdims=True)
    var = relay.variance(x, axis=axes, keepdims=True, with_mean=mean)
    rstd = relay.rsqrt(relay.add(var, const(eps, call.dtype(0))))
    if len(shape) == 1:
        dtype = call.dtype(0)
        gamma = weight if isinstance(weight, Expr) else relay.ones(shape, dtype)
        beta = bias if isinstance(bias, Expr) else relay.zeros(shape, dtype)
        out = relay.nn.layer_norm(x, gamma, beta, axis=-1, epsilon=float(eps))
        return [out, mean, rstd]
    out = relay.multiply(relay.subtract(x, mean), rstd)
    if isinstance(weight, Expr):
        out = relay.multiply(out, weight)
    if isinstance(bias, Expr):
        out = relay.add(out, bias)
    return [out, mean, rstd]


@converter("aten.layer_norm.default")
def layer_norm(call: AtenCall) -> Expr:
    return _layer_norm(call, ints(call.args[1]), call.arg(2, "weight"), call.arg(3, "bias"),
                       float(call.arg(4, "eps", 1e-5)))[0]


@converter("aten.native_layer_norm.default")
def native_layer_norm(call: AtenCall) -> list[Expr]:
    return _layer_norm(call, ints(call.args[1]), call.args[2], call.args[3], float(call.args[4]))


def _group_norm(call: AtenCall, groups: int, weight: Any, bias: Any, eps: float) -> list[Expr]:
    x = tensor(call, 0)
    shape = call.shape(0)
    grouped = relay.reshape(x, newshape=[shape[0], groups, -1])
    mean = relay.mean(grouped, axis=[2], keepdims=True)
    var = relay.variance(grouped, axis=[2], keepdims=True, with_mean=mean)
    rstd = relay.rsqrt(relay.add(var, const(eps, call.dtype(0))))
    out = relay.reshape(relay.multiply(relay.subtract(grouped, mean), rstd), newshape=shape)
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    if isinstance(weight, Expr):
        out = relay.multiply(out, relay.reshape(weight, newshape=per_channel))
    if isinstance(bias, Expr):
        out = relay.add(out, relay.reshape(bias, newshape=per_channel))
    return [out, relay.squeeze(mean, axis=[2]), relay.squeeze(rstd, axis=[2])]


@converter("aten.group_norm.default")
def group_norm(call: AtenCall) -> Expr:
    return _group_norm(call, int(call.args[1]), call.arg(2, "weight"), call.arg(3, "bias"),
                       float(call.arg(4, "eps", 1e-5)))[0]


@converter("aten.native_group_norm.default")
def native_group_norm(call: AtenCall) -> list[Expr]:
    return _group_norm(call, int(call.args[6]), call.args[1], call.args[2], float(call.args[7]))


@converter("aten.instance_norm.default")
def instance_norm(call: AtenCall) -> Expr:
    if not call.args[5]:  # use_input_stats=False: the running statistics, as batch_norm
        return _batch_norm(call, tensor(call, 0), call.args[1], call.args[2], call.args[3],
                           call.args[4], False, call.args[7])[0]
    shape = call.shape(0)
    return _group_norm(call, shape[1], call.args[1], call.args[2], float(call.args[7]))[0]


@converter("aten.rms_norm.default")
def rms_norm(call: AtenCall) -> Expr:
    x = tensor(call, 0)
    rank = len(call.shape(0))
    axes = list(range(rank - len(ints(call.args[1])), rank))
    eps = call.arg(3, "eps")
    eps = float(eps) if eps is not None else float(_finfo_eps(call.dtype(0)))
    square = relay.mean(relay.multiply(x, x), axis=axes, keepdims=True)
    out = relay.multiply(x, relay.rsqrt(relay.add(square, const(eps, call.dtype(0)))))
    weight = call.arg(2, "weight")
    return relay.multiply(out, weight) if isinstance(weight, Expr) else out


def _finfo_eps(dtype: str) -> float:
    return {"float16": 2 ** -10, "bfloat16": 2 ** -7, "float64": 2 ** -52}.get(dtype, 2 ** -23)


# --- pooling ---------------------------------------------------------------------------------
_MAX_POOL = {1: relay.nn.max_pool1d, 2: relay.nn.max_pool2d, 3: relay.nn.max_pool3d}
_AVG_POOL = {1: relay.nn.avg_pool1d, 2: relay.nn.avg_pool2d, 3: relay.nn.avg_pool3d}
_ADAPTIVE_AVG = {1: relay.nn.adaptive_avg_pool1d, 2: relay.nn.adaptive_avg_pool2d,
                 3: relay.nn.adaptive_avg_pool3d}


def _nd(call: AtenCall) -> int:
    return int(call.target.split(".")[1].rstrip("_").split("pool")[1][0])


def _pool_geometry(call: AtenCall, nd: int) -> tuple[list[int], list[int], list[int]]:
    kernel = ints(call.args[1], nd)
    stride = call.arg(2, "stride", []) or kernel
    pad = ints(call.arg(3, "padding", 0), nd)
    return kernel, ints(stride, nd), pad + pad


@converter("aten.max_pool1d.default", "aten.max_pool2d.default", "aten.max_pool3d.default",
           "aten.max_pool1d_with_indices.default", "aten.max_pool2d_with_indices.default",
           "aten.max_pool3d_with_indices.default")
def max_pool(call: AtenCall) -> Any:
    nd = _nd(call)
    kernel, stride, pad = _pool_geometry(call, nd)
    out = _MAX_POOL[nd](tensor(call, 0), pool_size=kernel, strides=stride, padding=pad,
                        dilation=ints(call.arg(4, "dilation", 1), nd),
                        ceil_mode=bool(call.arg(5, "ceil_mode", False)))
    if "with_indices" not in call.target:
        return out
    return [out, None]  # the indices: reading them fails in getitem


@converter("aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default")
def avg_pool(call: AtenCall) -> Expr:
    nd = _nd(call)
    kernel, stride, pad = _pool_geometry(call, nd)
    if call.arg(6, "divisor_override") is not None:
        raise call.fail("divisor_override is not supported")
    return _AVG_POOL[nd](tensor(call, 0), pool_size=kernel, strides=stride, padding=pad,
                         ceil_mode=bool(call.arg(4, "ceil_mode", False)),
                         count_include_pad=bool(call.arg(5, "count_include_pad", True)))


@converter("aten.adaptive_avg_pool1d.default", "aten.adaptive_avg_pool2d.default",
           "aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool3d.default",
           "aten._adaptive_avg_pool3d.default")
def adaptive_avg_pool(call: AtenCall) -> Expr:
    nd = len(call.shape(0)) - 2
    size = ints(call.args[1], nd)
    x = tensor(call, 0)
    if nd == 2 and size == [1, 1]:
        return relay.nn.global_avg_pool2d(x)
    return _ADAPTIVE_AVG[nd](x, output_size=size)


@converter("aten.adaptive_max_pool2d.default")
def adaptive_max_pool(call: AtenCall) -> list[Any]:
    out = relay.nn.adaptive_max_pool2d(tensor(call, 0), output_size=ints(call.args[1], 2))
    return [out, None]


# --- attention -------------------------------------------------------------------------------
@converter("aten.scaled_dot_product_attention.default")
def scaled_dot_product_attention(call: AtenCall) -> Expr:
    q, k, v = tensor(call, 0), tensor(call, 1), tensor(call, 2)
    q_shape, k_shape = call.shape(0), call.shape(1)
    dtype = call.dtype(0)
    if call.arg(4, "dropout_p", 0.0):
        raise call.fail("attention dropout is not supported (export in eval mode)")
    if call.kwargs.get("enable_gqa") and q_shape[-3] != k_shape[-3]:
        repeat = q_shape[-3] // k_shape[-3]
        k = relay.repeat(k, repeat, axis=len(k_shape) - 3)
        v = relay.repeat(v, repeat, axis=len(k_shape) - 3)
        k_shape = (*k_shape[:-3], q_shape[-3], *k_shape[-2:])
    scale = call.kwargs.get("scale")
    scale = 1.0 / math.sqrt(q_shape[-1]) if scale is None else float(scale)
    k_t = relay.transpose(k, axes=[*range(len(k_shape) - 2), len(k_shape) - 1,
                                   len(k_shape) - 2])
    kt_shape = (*k_shape[:-2], k_shape[-1], k_shape[-2])
    scores = relay.multiply(matmul_exprs(call, q, k_t, q_shape, kt_shape), const(scale, dtype))
    mask = call.arg(3, "attn_mask")
    if call.arg(5, "is_causal", False):
        mask = relay.const(_causal(q_shape[-2], k_shape[-2]))
    if isinstance(mask, Expr):
        scores = _masked(call, scores, mask, dtype)
    weights = relay.nn.softmax(scores, axis=-1)
    v_shape = (*k_shape[:-1], call.shape(2)[-1])
    return matmul_exprs(call, weights, v, (*q_shape[:-1], k_shape[-2]), v_shape)


def _causal(rows: int, cols: int) -> np.ndarray:
    return np.tril(np.ones((rows, cols), dtype=bool))


def _masked(call: AtenCall, scores: Expr, mask: Expr, dtype: str) -> Expr:
    mask_meta = call.metas.get(3)
    if getattr(mask_meta, "dtype", "bool") == "bool" or call.arg(5, "is_causal", False):
        return relay.where(mask, scores, const(-math.inf, dtype))
    return relay.add(scores, cast(mask, getattr(mask_meta, "dtype", dtype), dtype))


# --- resampling ------------------------------------------------------------------------------
def _resize(call: AtenCall, method: str, align_corners: bool, exact: bool = False) -> Expr:
    x = tensor(call, 0)
    shape, out = call.shape(0), call.out_shape
    nd = len(shape) - 2
    if nd == 1:
        x = relay.expand_dims(x, 2)
    elif nd != 2:
        raise call.fail(f"{nd}-D interpolation is not supported")
    size = list(out[2:]) if nd == 2 else [1, out[2]]
    if method == "nearest_neighbor":
        mode = "half_pixel" if exact else "asymmetric"
        rounding = "round_prefer_ceil" if exact else "floor"
    else:
        mode = "align_corners" if align_corners else "half_pixel"
        rounding = ""
    scales = _scales(call, nd)
    resized = relay.image.resize2d(
        x, size, method=method, coordinate_transformation_mode=mode, rounding_method=rounding,
        cubic_alpha=-0.75, scales=None if align_corners or scales is None else scales)
    return relay.squeeze(resized, axis=[2]) if nd == 1 else resized


def _scales(call: AtenCall, nd: int) -> list[float] | None:
    """The factors torch maps coordinates by: 1/scale when the call gave scale factors."""
    factors = [a for a in call.args[1:] if isinstance(a, (list, tuple)) and a and all(
        isinstance(v, float) for v in a)]
    factors += [v for k, v in call.kwargs.items() if k.startswith("scale") and v]
    if not factors:
        scalars = [a for a in call.args[1:] if isinstance(a, float)]
        if len(scalars) != nd:
            return None
        factors = [scalars]
    values = [float(v) for v in factors[0]] if isinstance(factors[0], (list, tuple)) else [
        float(factors[0])] * nd
    return values if nd == 2 else [1.0, values[0]]


@converter("aten.upsample_nearest1d.vec", "aten.upsample_nearest2d.vec",
           "aten.upsample_nearest1d.default", "aten.upsample_nearest2d.default")
def upsample_nearest(call: AtenCall) -> Expr:
    return _resize(call, "nearest_neighbor", False)


@converter("aten._upsample_nearest_exact1d.vec", "aten._upsample_nearest_exact2d.vec",
           "aten._upsample_nearest_exact1d.default", "aten._upsample_nearest_exact2d.default")
def upsample_nearest_exact(call: AtenCall) -> Expr:
    return _resize(call, "nearest_neighbor", False, exact=True)


@converter("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default",
           "aten.upsample_linear1d.vec", "aten.upsample_linear1d.default",
           "aten.upsample_bicubic2d.vec", "aten.upsample_bicubic2d.default")
def upsample_linear(call: AtenCall) -> Expr:
    method = "cubic" if "bicubic" in call.target else "linear"
    return _resize(call, method, bool(call.args[2]))


@converter("aten.grid_sampler_2d.default", "aten.grid_sampler.default")
def grid_sampler(call: AtenCall) -> Expr:
    method = ("bilinear", "nearest", "bicubic")[int(call.args[2])]
    padding = ("zeros", "border", "reflection")[int(call.args[3])]
    return relay.image.grid_sample(tensor(call, 0), relay.transpose(tensor(call, 1),
                                                                    axes=[0, 3, 1, 2]),
                                   method=method, padding_mode=padding,
                                   align_corners=bool(call.args[4]))


@converter("aten.pixel_shuffle.default")
def pixel_shuffle(call: AtenCall) -> Expr:
    return relay.nn.depth_to_space(tensor(call, 0), int(call.args[1]), mode="CRD")


@converter("aten.pixel_unshuffle.default")
def pixel_unshuffle(call: AtenCall) -> Expr:
    n, c, h, w = call.shape(0)
    r = int(call.args[1])
    x = relay.reshape(tensor(call, 0), newshape=[n, c, h // r, r, w // r, r])
    x = relay.transpose(x, axes=[0, 1, 3, 5, 2, 4])
    return relay.reshape(x, newshape=[n, c * r * r, h // r, w // r])


@converter("aten.col2im.default")
def col2im(call: AtenCall) -> Expr:
    pads = ints(call.args[4], 2)
    return relay.nn.col2im(tensor(call, 0), ints(call.args[1], 2), ints(call.args[2], 2),
                           dilations=ints(call.args[3], 2), pads=pads + pads,
                           strides=ints(call.args[5], 2))


@converter("aten.prelu.default", "aten._prelu_kernel.default")
def prelu(call: AtenCall) -> Expr:
    x, alpha = tensor(call, 0), operand(call, 1, call.dtype(0))
    negative = relay.multiply(x, alpha if len(call.shape(0)) < 2 or len(call.shape(1)) != 1
                              else relay.reshape(alpha, newshape=[
                                  -1, *([1] * (len(call.shape(0)) - 2))]))
    return relay.where(relay.greater(x, const(0, call.dtype(0))), x, negative)
