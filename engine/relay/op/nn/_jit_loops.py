"""Compiled loops (numba) for the interpreter, imported only through `compiled_kernels`.

Depthwise conv2d has two loop nests, both writing an NCHW output and reading an NCHW input through a
zero-padded scratch copy (allocated zeroed once per call: each channel overwrites only
the interior, so the borders stay zero):

- `depthwise_rows3x3`: a 3x3 kernel at dilation 1 on wide planes, one output row at a
  time with the nine taps summed in one expression, so the compiler vectorizes along the
  row (stride 2 has its own loop, with the factor known at compile time).
- `depthwise_channels_last`: any kernel, stride and dilation for one input channel per
  output channel: the padded input is stored channels-last and every tap adds a
  contiguous run of channels, vectorized along the channels (small planes, strided
  planes, long channel axes); each output row is transposed back to NCHW from a
  scratch row.

`cache=True` keeps the machine code in numba's cache directory, so only the first run
on a machine compiles (`compiled_kernels.warm_up` does it ahead of time).
`channel_affine` is inference batch_norm's `x * scale + shift` (and a clip after it) in
one pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_jit = njit(cache=True, nogil=True, boundscheck=False)


@_jit
def _copy_plane(pad, plane, top, left):
    """`plane` (H, W) into `pad` at (top, left)."""
    for r in range(plane.shape[0]):
        src = plane[r]
        dst = pad[top + r]
        for k in range(src.shape[0]):
            dst[left + k] = src[k]


@_jit
def _affine(v, s, b, lo, hi):
    """The epilogue: `v * s + b` clamped to [lo, hi] as np.clip does (NaN stays NaN)."""
    v = v * s + b
    v = lo if v < lo else v
    return hi if v > hi else v


@_jit
def _row3_s1(o, a, b, c, w, s, t, lo, hi):
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]
    for k in range(o.shape[0]):
        o[k] = _affine(a[k] * w0 + a[k + 1] * w1 + a[k + 2] * w2 + b[k] * w3 + b[k + 1] * w4
                       + b[k + 2] * w5 + c[k] * w6 + c[k + 1] * w7 + c[k + 2] * w8,
                       s, t, lo, hi)


@_jit
def _row3_s2(o, a0, a1, b0, b1, c0, c1, w, s, t, lo, hi):
    """Stride 2 over rows split by column parity (x0: even columns, x1: odd ones), so every
    load is unit-stride."""
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]
    for k in range(o.shape[0]):
        o[k] = _affine(a0[k] * w0 + a1[k] * w1 + a0[k + 1] * w2 + b0[k] * w3 + b1[k] * w4
                       + b0[k + 1] * w5 + c0[k] * w6 + c1[k] * w7 + c0[k + 1] * w8,
                       s, t, lo, hi)


@_jit
def _copy_plane_by_parity(pad, plane, top, left):
    """`plane` (H, W) into `pad` (rows, 2, columns / 2) at (top, left): padded column q
    goes to pad[:, q % 2, q // 2]."""
    for r in range(plane.shape[0]):
        src = plane[r]
        for parity in range(2):
            dst = pad[top + r, parity]
            first = (parity - left) % 2  # the first source column landing on this parity
            base = (left + first) // 2
            for t in range((src.shape[0] - first + 1) // 2):
                dst[base + t] = src[first + 2 * t]


@_jit
def depthwise_rows3x3(x, w, out, stride, top, left, scale, shift, lo, hi):
    """x (N, C, H, W), w (O, 9) with O = C x multiplier, out (N, O, OH, OW); stride 1 or 2
    on both axes, dilation 1, padding `top`/`left` (bottom/right implied by the shapes).
    At stride 2 the padded plane is stored split by column parity. Every output is mapped
    by its channel's `scale` and `shift` and clamped to [lo, hi] (the fused epilogue)."""
    n_, c_, h, wd = x.shape
    oh, ow = out.shape[2], out.shape[3]
    m = out.shape[1] // c_
    rows = max(top + h, (oh - 1) * stride + 3)
    cols = max(left + wd, (ow - 1) * stride + 3)
    pad = np.zeros((rows, cols), x.dtype)
    halves = np.zeros((rows, 2, (cols + 1) // 2), x.dtype)
    for n in range(n_):
        for c in range(c_):
            if stride == 1:
                _copy_plane(pad, x[n, c], top, left)
            else:
                _copy_plane_by_parity(halves, x[n, c], top, left)
            for o in range(c * m, c * m + m):
                wk, s, t = w[o], scale[o], shift[o]
                for y in range(oh):
                    r = y * stride
                    if stride == 1:
                        _row3_s1(out[n, o, y], pad[r], pad[r + 1], pad[r + 2], wk, s, t, lo, hi)
                    else:
                        _row3_s2(out[n, o, y], halves[r, 0], halves[r, 1], halves[r + 1, 0],
                                 halves[r + 1, 1], halves[r + 2, 0], halves[r + 2, 1], wk,
                                 s, t, lo, hi)


@_jit
def _add_scaled(acc, src, wt):
    for k in range(acc.shape[0]):
        acc[k] += src[k] * wt[k]


@_jit
def depthwise_channels_last(x, w, out, sh, sw, dh, dw, top, left, scale, shift, lo, hi):
    """x (N, C, H, W), w (KH, KW, C), out (N, C, OH, OW): one input channel per output
    channel; any kernel size, stride, dilation and (non-negative) padding; the epilogue
    as in `depthwise_rows3x3`."""
    n_, c_, h, wd = x.shape
    kh, kw = w.shape[0], w.shape[1]
    oh, ow = out.shape[2], out.shape[3]
    ph = max(top + h, (oh - 1) * sh + (kh - 1) * dh + 1)
    pw = max(left + wd, (ow - 1) * sw + (kw - 1) * dw + 1)
    pad = np.zeros((ph, pw, c_), x.dtype)
    row = np.empty((ow, c_), x.dtype)
    for n in range(n_):
        for r in range(h):  # channels innermost: contiguous writes (about 2x faster)
            for k in range(wd):
                dst = pad[top + r, left + k]
                for c in range(c_):
                    dst[c] = x[n, c, r, k]
        for y in range(oh):
            for q in range(ow):
                acc = row[q]
                acc[:] = 0
                for i in range(kh):
                    prow = pad[y * sh + i * dh]
                    for j in range(kw):
                        _add_scaled(acc, prow[q * sw + j * dw], w[i, j])
            for c in range(c_):
                dst, s, t = out[n, c, y], scale[c], shift[c]
                for q in range(ow):
                    dst[q] = _affine(row[q, c], s, t, lo, hi)


@_jit
def channel_affine(x, scale, shift, lo, hi, out):
    """out[n, c] = x[n, c] * scale[c] + shift[c] over (N, C, K) arrays (out may be x),
    clamped to [lo, hi] as np.clip does (NaN stays NaN): one pass, where numpy makes one
    for the multiply, one for the add and one for the clip. `lo` and `hi` come in x's
    dtype (float64 bounds would widen every float32 element, and stop vectorization)."""
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            s, b = scale[c], shift[c]
            src, dst = x[n, c], out[n, c]
            for k in range(src.shape[0]):
                dst[k] = _affine(src[k], s, b, lo, hi)
