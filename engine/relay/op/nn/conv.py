"""nn.conv2d and nn.conv2d_transpose: type relations and an im2col + BLAS numpy compute."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.op import register_op_attr
from engine.ir.type import Dim, TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, is_any, tensor_arg, type_str
from engine.relay.op.nn import compiled_kernels
from engine.relay.op.nn._layout import (
    check_positive,
    dims,
    from_canonical,
    pad_tuple2d,
    pair,
    pair_or_none,
    to_canonical,
)
from engine.relay.op.nn._nd import accumulator_dtype, out_len
from engine.relay.op.nn.epilogue import ChannelAffine
from engine.relay.op.op import OUT_ELEMWISE_FUSABLE, TypeRelationError, define_op, make_call

CONV2D_KEY = "relay.attrs.Conv2DAttrs"
CONV2D_TRANSPOSE_KEY = "relay.attrs.Conv2DTransposeAttrs"
_TAP_MATMUL_PLANE = 32 * 32  # channels-first depthwise sums taps by one matmul up to this plane
_CHANNELS_LAST_PLANE = 16 * 16  # strided depthwise with output planes up to this runs channels-last


def _kernel_oihw(weight: TensorType, attrs: Attrs) -> tuple[Dim, Dim, Dim, Dim]:
    """(out channels, in channels per group, kh, kw) of the kernel in any OIHW-like layout."""
    o, i, kh, kw = dims(weight, attrs.kernel_layout, "OIHW", 1)
    groups = int(attrs.groups)
    # TVM's depthwise HWOI kernel is (kh, kw, channels, multiplier)
    if attrs.kernel_layout == "HWOI" and groups > 1 and i != 1:
        o, i = (o * i if not (is_any(o) or is_any(i)) else o), 1
    return o, i, kh, kw


def _conv2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, weight = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    n, c, h, w = dims(data, attrs.data_layout, "NCHW", 0)
    o, i, kh, kw = _kernel_oihw(weight, attrs)
    groups = int(attrs.groups)
    if not (is_any(c) or is_any(i)) and int(c) != int(i) * groups:
        raise TypeRelationError(
            f"input channels ({c}) != kernel input channels ({i}) x groups ({groups})", arg=1,
            expected=f"a kernel with {int(c) // groups if groups else c} input channels "
                     f"per group", actual=type_str(weight))
    if attrs.get("channels") is not None:
        check_dim(o, int(attrs.channels), 1, "output channels", weight)
    if attrs.get("kernel_size") is not None:
        check_dim(kh, int(attrs.kernel_size[0]), 1, "kernel height", weight)
        check_dim(kw, int(attrs.kernel_size[1]), 1, "kernel width", weight)
    top, left, bottom, right = attrs.padding
    oh = out_len(h, kh, attrs.strides[0], attrs.dilation[0], top, bottom)
    ow = out_len(w, kw, attrs.strides[1], attrs.dilation[1], left, right)
    check_positive([oh, ow], "output (kernel larger than padded input)", 0, data)
    out_layout = attrs.get("out_layout") or attrs.data_layout
    by_letter = {"N": n, "C": o, "H": oh, "W": ow}
    return TensorType([by_letter[ch] for ch in out_layout], attrs.get("out_dtype") or data.dtype)


def windows(xp: np.ndarray, kh: int, kw: int, oh: int, ow: int, strides: tuple[int, int],
            dilation: tuple[int, int]) -> np.ndarray:
    """A (N, C, KH, KW, OH, OW) view of the padded NCHW input: no copy."""
    sn, sc, sh, sw = xp.strides
    shape = (xp.shape[0], xp.shape[1], kh, kw, oh, ow)
    view_strides = (sn, sc, sh * dilation[0], sw * dilation[1], sh * strides[0], sw * strides[1])
    return as_strided(xp, shape=shape, strides=view_strides, writeable=False)


def pad_nchw(x: np.ndarray, padding: tuple[int, int, int, int], value: float = 0.0
             ) -> np.ndarray:
    top, left, bottom, right = padding
    if not any(padding):
        return x
    if min(padding) < 0:
        return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)
    n, c, h, w = x.shape
    out = np.full((n, c, top + h + bottom, left + w + right), value, dtype=x.dtype)
    out[:, :, top:top + h, left:left + w] = x  # one copy (np.pad's general path is slower)
    return out


def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides: tuple[int, int],
                padding: tuple[int, int, int, int], dilation: tuple[int, int],
                groups: int) -> np.ndarray:
    """Convolution of NCHW data with an OIHW kernel via im2col + matmul (BLAS)."""
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    if ig == 1 and groups == c and min(padding) >= 0:
        return _depthwise(x, w, padding, oh, ow, strides, dilation)
    xp = pad_nchw(x, padding)
    if groups == 1 and kh == kw == 1:
        xs = xp[:, :, ::strides[0], ::strides[1]][:, :, :oh, :ow].reshape(n, c, oh * ow)
        return np.matmul(w.reshape(o, c), xs).reshape(n, o, oh, ow)
    win = windows(xp, kh, kw, oh, ow, strides, dilation)
    if groups == 1:
        cols = win.reshape(n, c * kh * kw, oh * ow)
        return np.matmul(w.reshape(o, -1), cols).reshape(n, o, oh, ow)
    gcols = win.reshape(n, groups, ig * kh * kw, oh * ow)
    out = np.matmul(w.reshape(groups, o // groups, ig * kh * kw), gcols)
    return out.reshape(n, o, oh, ow)


def channels_last(oh: int, ow: int, strides: tuple[int, int]) -> bool:
    """Whether depthwise conv2d runs channels-last: strided, with a small output plane
    (measured: channels-first runs of the plane are faster at stride 1 for every size,
    and strided from 28x28 output planes up)."""
    return tuple(strides) != (1, 1) and oh * ow <= _CHANNELS_LAST_PLANE


def _depthwise(x: np.ndarray, w: np.ndarray, padding: tuple[int, int, int, int], oh: int,
               ow: int, strides: tuple[int, int], dilation: tuple[int, int]) -> np.ndarray:
    """Depthwise conv of NCHW data (OIHW kernel, O = C x multiplier; padding >= 0): each
    kernel tap is one multiply and one add over the whole tensor into preallocated
    buffers. Strided convolutions with small output planes run channels-last (the long
    channel axis innermost), the others channels-first; with a row stride of 1, output rows
    are computed as wide as the padded row (columns past `ow` dropped at the end), so a tap
    reads one run of each flat plane (strided ones read the input's stride phases). Compiled
    loops (`compiled_kernels`) run instead where numba is installed and covers the call."""
    compiled = compiled_kernels.depthwise_conv2d(x, w, padding, strides, dilation, oh, ow)
    if compiled is not None:
        return compiled
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilation
    dtype = accumulator_dtype(x, w)
    wk = w.reshape(c, o // c, kh, kw).astype(dtype, copy=False)
    last = channels_last(oh, ow, strides)
    if not last and (sh, sw) != (1, 1):
        return _depthwise_phases(x, wk, padding, oh, ow, strides, dilation)
    pw = -(-(padding[1] + wd + padding[3]) // sw) * sw
    width = pw // sw if sh == 1 else ow  # output columns computed per row
    reach = ((kh - 1) * dh + sh * (oh - 1)) * pw + (kw - 1) * dw + sw * (width - 1) + 1
    ph = max(padding[0] + h + padding[2], -(-reach // pw))
    planes = _padded(x, padding, ph, pw, last, dtype)
    flat = planes.reshape((n, ph * pw, c) if last else (n, c, ph * pw))
    shape = (n, oh, width, c, o // c) if last else (n, c, o // c, oh, width)
    terms = [(_tap(planes, flat, i * dh, j * dw, oh, width, strides, last),
              wk[:, :, i, j] if last else wk[None, :, :, i, j, None, None])
             for i in range(kh) for j in range(kw)]
    acc = _sum_of_products(terms, shape, dtype) if last else _channels_first_sum(terms, wk, shape)
    if last:
        return acc.reshape(n, oh, width, o)[:, :, :ow].transpose(0, 3, 1, 2)
    return acc.reshape(n, o, oh, width)[..., :ow]


def _sum_of_products(terms: list[tuple[np.ndarray, np.ndarray]], shape: tuple[int, ...],
                     dtype: np.dtype) -> np.ndarray:
    """The sum of `view * weight` over `terms` (each broadcasting to `shape`) in a new
    array: one multiply into a scratch buffer and one add in place per term."""
    acc, tmp = np.empty(shape, dtype), np.empty(shape, dtype)
    for k, (view, weight) in enumerate(terms):
        np.multiply(view, weight, out=acc if k == 0 else tmp)
        if k:
            acc += tmp
    return acc


def _channels_first_sum(terms: list[tuple[np.ndarray, np.ndarray]], wk: np.ndarray,
                        shape: tuple[int, int, int, int, int]) -> np.ndarray:
    """The taps' sum in the channels-first (N, C, multiplier, rows, width) layout. Small
    planes: the taps' inputs are copied side by side, (N, C, taps, rows * width), and
    multiplied by the (C, multiplier, taps) kernel in one batched matmul (BLAS; one copy
    per tap instead of a multiply and an add); large ones sum term by term (the copies
    would be several times the input)."""
    n, c, m, oh, width = shape
    if oh * width > _TAP_MATMUL_PLANE:
        return _sum_of_products(terms, shape, wk.dtype)
    cols = np.empty((n, c, len(terms), oh * width), wk.dtype)
    for t, (view, _) in enumerate(terms):
        cols[:, :, t] = view.reshape(n, c, oh * width)
    return np.matmul(wk.reshape(c, m, -1), cols).reshape(shape)


def _depthwise_phases(x: np.ndarray, wk: np.ndarray, padding: tuple[int, int, int, int],
                      oh: int, ow: int, strides: tuple[int, int], dilation: tuple[int, int]
                      ) -> np.ndarray:
    """Strided depthwise conv on large planes, channels-first: the padded input is split
    once into its `sh x sw` phases (rows and columns by their remainder modulo the
    stride), so every tap reads one contiguous run of a phase plane instead of a
    stride-2 gather (numpy's strided inner loops are several times slower)."""
    n, c, h, wd = x.shape
    _, m, kh, kw = wk.shape
    (sh, sw), (dh, dw) = strides, dilation
    rows = max(oh + (kh - 1) * dh // sh + 1, -(-(padding[0] + h) // sh))
    cols = max(ow + (kw - 1) * dw // sw, -(-(padding[1] + wd) // sw))
    planes = _padded(x, padding, rows * sh, cols * sw, False, wk.dtype)
    phases = np.empty((n, c, sh * sw, rows, cols), wk.dtype)
    for a in range(sh):
        for b in range(sw):
            phases[:, :, a * sw + b] = planes[:, :, a::sh, b::sw]
    flat = phases.reshape(n, c, sh * sw, rows * cols)
    terms = []
    for i in range(kh):
        for j in range(kw):
            (r0, a), (c0, b) = divmod(i * dh, sh), divmod(j * dw, sw)
            start = r0 * cols + c0
            view = flat[:, :, a * sw + b, start:start + oh * cols].reshape(n, c, 1, oh, cols)
            terms.append((view, wk[None, :, :, i, j, None, None]))
    acc = _channels_first_sum(terms, wk, (n, c, m, oh, cols))
    return acc.reshape(n, c * m, oh, cols)[..., :ow]


def _tap(planes: np.ndarray, flat: np.ndarray, row: int, col: int, oh: int, width: int,
         strides: tuple[int, int], last: bool) -> np.ndarray:
    """The inputs of one kernel tap (offset `row`, `col`) for every output, shaped for
    `_depthwise`'s accumulator (a channel-multiplier axis of 1 included)."""
    sh, sw = strides
    if sh == 1:  # rows `pw` apart are `width * sw` apart: one strided run of the flat plane
        start = row * (planes.shape[2] if last else planes.shape[3]) + col
        run = slice(start, start + sw * (oh * width - 1) + 1, sw)
        view = flat[:, run, :] if last else flat[:, :, run]
        shape = (flat.shape[0], oh, width, -1) if last else (flat.shape[0], -1, oh, width)
        view = view.reshape(shape)
    else:
        rows = slice(row, row + sh * (oh - 1) + 1, sh)
        cols = slice(col, col + sw * (width - 1) + 1, sw)
        view = planes[:, rows, cols, :] if last else planes[:, :, rows, cols]
    return view[..., None] if last else view[:, :, None]


def _padded(x: np.ndarray, padding: tuple[int, int, int, int], rows: int, cols: int,
            last: bool, dtype: np.dtype) -> np.ndarray:
    """NCHW `x` zero-padded to `rows` x `cols` (top-left padding as given), stored NHWC
    when `last`: one copy, and only the borders are zeroed."""
    n, c, h, wd = x.shape
    top, left = padding[0], padding[1]
    buf = np.empty((n, rows, cols, c) if last else (n, c, rows, cols), dtype)
    plane = buf.transpose(0, 3, 1, 2) if last else buf
    plane[:, :, :top] = 0
    plane[:, :, top + h:] = 0
    plane[:, :, top:top + h, :left] = 0
    plane[:, :, top:top + h, left + wd:] = 0
    plane[:, :, top:top + h, left:left + wd] = x
    return buf


def _kernel_to_oihw(w: np.ndarray, layout: str, groups: int) -> np.ndarray:
    if layout == "HWOI" and groups > 1 and w.shape[3] != 1:
        kh, kw, c, m = w.shape
        return np.transpose(w, (2, 3, 0, 1)).reshape(c * m, 1, kh, kw)
    return to_canonical(w, layout, "OIHW")


def _conv2d_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = to_canonical(xs[0], attrs.data_layout, "NCHW")
    groups = int(attrs.groups)
    weight = _kernel_to_oihw(xs[1], attrs.kernel_layout, groups)
    out = conv2d_nchw(data, weight, attrs.strides, attrs.padding, attrs.dilation, groups)
    dtype = attrs.get("out_dtype") or xs[0].dtype
    out = from_canonical(out, "NCHW", attrs.get("out_layout") or attrs.data_layout)
    return np.ascontiguousarray(out, dtype=dtype)


def _conv2d_epilogue(xs: list[np.ndarray], attrs: Attrs, affine: ChannelAffine
                     ) -> np.ndarray:
    """conv2d, then `affine` (the batch_norm, and clamp, the interpreter fused after it):
    inside the compiled depthwise loops where they cover the call, else in one pass over
    the new output while it is still in cache."""
    x, w = xs
    if (attrs.data_layout, attrs.kernel_layout) == ("NCHW", "OIHW") and affine.axis == 1 \
            and (attrs.get("out_layout") or "NCHW") == "NCHW" and w.shape[1] == 1 \
            and int(attrs.groups) == x.shape[1] \
            and np.dtype(attrs.get("out_dtype") or x.dtype) == x.dtype:
        oh, ow = ((x.shape[2 + a] + attrs.padding[a] + attrs.padding[2 + a]
                   - attrs.dilation[a] * (w.shape[2 + a] - 1) - 1) // attrs.strides[a] + 1
                  for a in (0, 1))
        out = compiled_kernels.depthwise_conv2d(
            x, w, attrs.padding, attrs.strides, attrs.dilation, oh, ow,
            (affine.scale, affine.shift, *affine.bounds))
        if out is not None:
            return out
    out = _conv2d_compute(xs, attrs)
    return affine.apply(out, out)


define_op("nn.conv2d", ("data", "weight"), _conv2d_rel, OUT_ELEMWISE_FUSABLE, _conv2d_compute,
          attrs_type_key=CONV2D_KEY)
register_op_attr("nn.conv2d", "FNumpyEpilogue", _conv2d_epilogue)


def conv2d(data: Expr, weight: Expr, strides: Any = (1, 1), padding: Any = (0, 0),
           dilation: Any = (1, 1), groups: int = 1, channels: int | None = None,
           kernel_size: Any = None, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
           out_layout: str = "", out_dtype: str = "") -> Call:
    """2-D convolution (TVM's relay.nn.conv2d); padding is normalised to 4 values."""
    return make_call("nn.conv2d", (data, weight), {
        "strides": pair(strides), "padding": pad_tuple2d(padding), "dilation": pair(dilation),
        "groups": int(groups), "channels": None if channels is None else int(channels),
        "kernel_size": pair_or_none(kernel_size), "data_layout": data_layout,
        "kernel_layout": kernel_layout, "out_layout": out_layout, "out_dtype": out_dtype,
    }, CONV2D_KEY)


# --- conv2d_transpose ------------------------------------------------------------------
def _transpose_out(size: Dim, k: Dim, s: int, d: int, before: int, after: int, extra: int
                   ) -> Dim:
    if is_any(size) or is_any(k):
        return size if is_any(size) else k
    return (int(size) - 1) * s + d * (int(k) - 1) + 1 + extra - before - after


def _conv2d_transpose_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, weight = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    n, c, h, w = dims(data, attrs.data_layout, "NCHW", 0)
    i, og, kh, kw = dims(weight, attrs.kernel_layout, "IOHW", 1)
    groups = int(attrs.groups)
    check_dim(i, c, 1, "kernel input channels", weight)
    o: Dim = og if is_any(og) else int(og) * groups
    top, left, bottom, right = attrs.padding
    oh = _transpose_out(h, kh, attrs.strides[0], attrs.dilation[0], top, bottom,
                        attrs.output_padding[0])
    ow = _transpose_out(w, kw, attrs.strides[1], attrs.dilation[1], left, right,
                        attrs.output_padding[1])
    check_positive([oh, ow], "output", 0, data)
    out_layout = attrs.get("out_layout") or attrs.data_layout
    by_letter = {"N": n, "C": o, "H": oh, "W": ow}
    return TensorType([by_letter[ch] for ch in out_layout], attrs.get("out_dtype") or data.dtype)


def conv2d_transpose_nchw(x: np.ndarray, w: np.ndarray, strides: tuple[int, int],
                          padding: tuple[int, int, int, int], dilation: tuple[int, int],
                          output_padding: tuple[int, int], groups: int) -> np.ndarray:
    """Transposed conv of NCHW data with an IOHW kernel: matmul, then col2im by kernel tap."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    full_h = (h - 1) * strides[0] + dilation[0] * (kh - 1) + 1 + output_padding[0]
    full_w = (wd - 1) * strides[1] + dilation[1] * (kw - 1) + 1 + output_padding[1]
    out = np.zeros((n, groups, og, full_h, full_w), dtype=np.result_type(x.dtype, w.dtype))
    xg = x.reshape(n, groups, cg, h * wd)
    wg = w.reshape(groups, cg, og * kh * kw).transpose(0, 2, 1)
    cols = np.matmul(wg, xg).reshape(n, groups, og, kh, kw, h, wd)
    span_h, span_w = (h - 1) * strides[0] + 1, (wd - 1) * strides[1] + 1
    for i in range(kh):
        for j in range(kw):
            r, s = i * dilation[0], j * dilation[1]
            out[:, :, :, r:r + span_h:strides[0], s:s + span_w:strides[1]] += cols[:, :, :, i, j]
    top, left, bottom, right = padding
    out = out[:, :, :, top:full_h - bottom, left:full_w - right]
    return out.reshape(n, groups * og, out.shape[3], out.shape[4])


def _conv2d_transpose_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = to_canonical(xs[0], attrs.data_layout, "NCHW")
    weight = to_canonical(xs[1], attrs.kernel_layout, "IOHW")
    out = conv2d_transpose_nchw(data, weight, attrs.strides, attrs.padding, attrs.dilation,
                                attrs.output_padding, int(attrs.groups))
    out = from_canonical(out, "NCHW", attrs.get("out_layout") or attrs.data_layout)
    return np.ascontiguousarray(out, dtype=attrs.get("out_dtype") or xs[0].dtype)


define_op("nn.conv2d_transpose", ("data", "weight"), _conv2d_transpose_rel,
          OUT_ELEMWISE_FUSABLE, _conv2d_transpose_compute, attrs_type_key=CONV2D_TRANSPOSE_KEY)


def conv2d_transpose(data: Expr, weight: Expr, strides: Any = (1, 1), padding: Any = (0, 0),
                     dilation: Any = (1, 1), groups: int = 1, channels: int | None = None,
                     kernel_size: Any = None, data_layout: str = "NCHW",
                     kernel_layout: str = "IOHW", out_layout: str = "",
                     output_padding: Any = (0, 0), out_dtype: str = "") -> Call:
    """Transposed 2-D convolution (TVM's relay.nn.conv2d_transpose; kernel IOHW)."""
    return make_call("nn.conv2d_transpose", (data, weight), {
        "channels": None if channels is None else int(channels),
        "kernel_size": pair_or_none(kernel_size), "strides": pair(strides),
        "padding": pad_tuple2d(padding), "output_padding": pair(output_padding),
        "dilation": pair(dilation), "groups": int(groups), "data_layout": data_layout,
        "kernel_layout": kernel_layout, "out_layout": out_layout, "out_dtype": out_dtype,
    }, CONV2D_TRANSPOSE_KEY)


__all__ = ["conv2d", "conv2d_transpose"]
