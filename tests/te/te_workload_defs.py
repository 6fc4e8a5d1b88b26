"""Small TE workloads with realistic x86-style schedules and numpy references.

Each builder returns (schedule, args, inputs, expected): `args` are the tensors
to lower (inputs then the output), `inputs` numpy arrays for the inputs and
`expected` the numpy result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import te

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def pad_nchw(data: te.Tensor, pad: int, value: float = 0.0) -> te.Tensor:
    n, c, h, w = (int(d) for d in data.shape)
    return te.compute(
        (n, c, h + 2 * pad, w + 2 * pad),
        lambda b, ch, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
            data[b, ch, y - pad, x - pad], value),
        name="data_pad")


def conv2d_nchw(data: te.Tensor, kernel: te.Tensor, stride: int, pad: int) -> te.Tensor:
    padded = pad_nchw(data, pad)
    n, c, hp, wp = (int(d) for d in padded.shape)
    f, _, kh, kw = (int(d) for d in kernel.shape)
    oh, ow = (hp - kh) // stride + 1, (wp - kw) // stride + 1
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, f, oh, ow),
        lambda b, co, y, x: te.sum(
            padded[b, rc, y * stride + ry, x * stride + rx] * kernel[co, rc, ry, rx],
            axis=[rc, ry, rx]),
        name="conv")


def conv2d_ref(data: np.ndarray, kernel: np.ndarray, stride: int, pad: int) -> np.ndarray:
    padded = np.pad(data, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    f, _, kh, kw = kernel.shape
    oh = (padded.shape[2] - kh) // stride + 1
    ow = (padded.shape[3] - kw) // stride + 1
    out = np.zeros((data.shape[0], f, oh, ow), dtype=np.float64)
    for y in range(kh):
        for x in range(kw):
            window = padded[:, :, y:y + stride * oh:stride, x:x + stride * ow:stride]
            out += np.einsum("nchw,fc->nfhw", window, kernel[:, :, y, x])
    return out.astype("float32")


def schedule_conv_x86(s: te.Schedule, conv: te.Tensor, out: te.Tensor) -> None:
    """Tile the output over (f, x), vectorize, parallelize, and compute the
    convolution into a cache at the tile (TVM's x86 conv2d pattern)."""
    cache = s.cache_write(conv, "global")
    if conv is not out:
        s[conv].compute_inline()
    n, f, y, x = s[out].op.axis
    fo, fi = s[out].split(f, factor=4)
    xo, xi = s[out].split(x, factor=3)
    s[out].reorder(n, fo, y, xo, fi, xi)
    s[out].vectorize(xi)
    s[out].parallel(s[out].fuse(n, fo))
    s[cache].compute_at(s[out], xo)
    _, fc, _, xc = s[cache].op.axis
    rc, ry, rx = s[cache].op.reduce_axis
    rco, rci = s[cache].split(rc, factor=2)
    s[cache].reorder(rco, ry, rx, rci, fc, xc)
    s[cache].unroll(rx)
    s[cache].vectorize(xc)


def conv2d_workload(inline_pad: bool = True) -> tuple[te.Schedule, list[te.Tensor], list, Any]:
    data = te.placeholder((1, 3, 7, 7), name="data")
    kernel = te.placeholder((8, 3, 3, 3), name="kernel")
    conv = conv2d_nchw(data, kernel, stride=1, pad=1)
    padded = conv.op.input_tensors[0]
    s = te.create_schedule(conv.op)
    schedule_conv_x86(s, conv, conv)
    cache = s.stages[s.stage_index(s[conv]) - 1]
    if inline_pad:
        s[padded].compute_inline()
    else:
        s[padded].compute_at(cache, cache.leaf_iter_vars[3])
    d, k = rand(1, 3, 7, 7), rand(8, 3, 3, 3)
    return s, [data, kernel, conv], [d, k], conv2d_ref(d, k, 1, 1)


def strided_conv_workload() -> tuple[te.Schedule, list[te.Tensor], list, Any]:
    data = te.placeholder((1, 4, 9, 9), name="data")
    kernel = te.placeholder((5, 4, 3, 3), name="kernel")
    conv = conv2d_nchw(data, kernel, stride=2, pad=1)
    padded = conv.op.input_tensors[0]
    s = te.create_schedule(conv.op)
    n, f, y, x = s[conv].op.axis
    yo, yi = s[conv].split(y, factor=2)
    s[padded].compute_at(s[conv], yo)
    s[conv].vectorize(x)
    d, k = rand(1, 4, 9, 9), rand(5, 4, 3, 3)
    return s, [data, kernel, conv], [d, k], conv2d_ref(d, k, 2, 1)


def conv_bias_relu_workload() -> tuple[te.Schedule, list[te.Tensor], list, Any]:
    data = te.placeholder((1, 3, 6, 6), name="data")
    kernel = te.placeholder((8, 3, 3, 3), name="kernel")
    bias = te.placeholder((8,), name="bias")
    conv = conv2d_nchw(data, kernel, stride=1, pad=1)
    biased = te.compute(conv.shape, lambda n, f, y, x: conv[n, f, y, x] + bias[f],
                        name="bias_add")
    relu = te.compute(conv.shape, lambda n, f, y, x: te.max(biased[n, f, y, x], 0.0),
                      name="relu")
    s = te.create_schedule(relu.op)
    s[conv.op.input_tensors[0]].compute_inline()
    s[biased].compute_inline()
    schedule_conv_x86(s, conv, relu)
    d, k, b = rand(1, 3, 6, 6), rand(8, 3, 3, 3), rand(8)
    expected = np.maximum(conv2d_ref(d, k, 1, 1) + b[None, :, None, None], 0)
    return s, [data, kernel, bias, relu], [d, k, b], expected


def dense_workload() -> tuple[te.Schedule, list[te.Tensor], list, Any]:
    m, n, kdim = 10, 20, 12
    data = te.placeholder((m, kdim), name="data")
    weight = te.placeholder((n, kdim), name="weight")
    k = te.reduce_axis((0, kdim), name="k")
    out = te.compute((m, n), lambda i, j: te.sum(data[i, k] * weight[j, k], axis=k),
                     name="dense")
    s = te.create_schedule(out.op)
    cache = s.cache_write(out, "global")
    io, jo, ii, ji = s[out].tile(out.op.axis[0], out.op.axis[1], 4, 8)
    s[out].vectorize(ji)
    s[out].parallel(s[out].fuse(io, jo))
    s[cache].compute_at(s[out], s[out].leaf_iter_vars[0])
    ic, jc = s[cache].op.axis
    (kc,) = s[cache].op.reduce_axis
    ko, ki = s[cache].split(kc, factor=4)
    s[cache].reorder(ko, ic, ki, jc)
    s[cache].unroll(ki)
    s[cache].vectorize(jc)
    d, w = rand(m, kdim), rand(n, kdim)
    return s, [data, weight, out], [d, w], d @ w.T


def maxpool_workload() -> tuple[te.Schedule, list[te.Tensor], list, Any]:
    data = te.placeholder((1, 4, 7, 7), name="data")
    padded = pad_nchw(data, 1, value=float("-inf"))
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    pool = te.compute((1, 4, 4, 4),
                      lambda n, c, y, x: te.max(padded[n, c, y * 2 + ry, x * 2 + rx],
                                                axis=[ry, rx]),
                      name="pool")
    s = te.create_schedule(pool.op)
    s[padded].compute_inline()
    n, c, y, x = s[pool].op.axis
    fused = s[pool].fuse(n, c)
    s[pool].parallel(fused)
    xo, xi = s[pool].split(x, factor=3)
    s[pool].reorder(fused, y, xo, ry, rx, xi)
    s[pool].vectorize(xi)
    d = rand(1, 4, 7, 7)
    p = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ref = np.full((1, 4, 4, 4), -np.inf, dtype="float32")
    for y_ in range(3):
        for x_ in range(3):
            ref = np.maximum(ref, p[:, :, y_:y_ + 8:2, x_:x_ + 8:2])
    return s, [data, pool], [d], ref


def softmax_workload() -> tuple[te.Schedule, list[te.Tensor], list, Any]:
    m, n = 5, 11
    x = te.placeholder((m, n), name="x")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    maxelem = te.compute((m,), lambda i: te.max(x[i, k1], axis=k1), name="max_elem")
    expo = te.compute((m, n), lambda i, j: te.exp(x[i, j] - maxelem[i]), name="exp")
    expsum = te.compute((m,), lambda i: te.sum(expo[i, k2], axis=k2), name="exp_sum")
    norm = te.compute((m, n), lambda i, j: expo[i, j] / expsum[i], name="softmax")
    s = te.create_schedule(norm.op)
    io, ii = s[norm].split(norm.op.axis[0], factor=2)
    s[norm].parallel(io)
    for stage in (expsum, expo, maxelem):  # consumers first: every snapshot is valid
        s[stage].compute_at(s[norm], io)
    jo, ji = s[norm].split(norm.op.axis[1], factor=4)
    s[norm].vectorize(ji)
    eo, ei = s[expo].split(expo.op.axis[1], factor=4)
    s[expo].vectorize(ei)
    xv = rand(m, n)
    e = np.exp(xv - xv.max(axis=1, keepdims=True))
    return s, [x, norm], [xv], e / e.sum(axis=1, keepdims=True)


WORKLOADS = {
    "conv2d": conv2d_workload,
    "conv2d_pad_at": lambda: conv2d_workload(inline_pad=False),
    "conv2d_strided": strided_conv_workload,
    "conv_bias_relu": conv_bias_relu_workload,
    "dense": dense_workload,
    "maxpool": maxpool_workload,
    "softmax": softmax_workload,
}
