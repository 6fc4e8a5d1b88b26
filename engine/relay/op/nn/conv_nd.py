"""nn.conv1d, nn.conv3d and their transposes: type relations and a numpy compute that
generalises conv2d's im2col + BLAS formulation to any number of spatial axes.

Layouts as TVM: data NCW / NWC and NCDHW / NDHWC (any order of the letters), kernels
OIW / WIO and OIDHW / DHWIO; transposed kernels IOW and IODHW.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import Dim, TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, is_any, tensor_arg, type_str
from engine.relay.op.nn._layout import check_positive, dims, from_canonical, to_canonical
from engine.relay.op.nn._nd import (
    accumulator_dtype,
    canonical_data,
    canonical_kernel,
    ntuple,
    ntuple_or_none,
    out_len,
    pad_spatial,
    pad_tuple_nd,
    prod,
    tap_slices,
    taps,
    window_view,
)
from engine.relay.op.op import OUT_ELEMWISE_FUSABLE, TypeRelationError, define_op, make_call

CONV_KEYS = {1: "relay.attrs.Conv1DAttrs", 3: "relay.attrs.Conv3DAttrs"}
CONV_T_KEYS = {1: "relay.attrs.Conv1DTransposeAttrs", 3: "relay.attrs.Conv3DTransposeAttrs"}


# --- numpy computes (canonical layouts) ----------------------------------------------------
def conv_nd_ncx(x: np.ndarray, w: np.ndarray, strides: Sequence[int], padding: Sequence[int],
                dilation: Sequence[int], groups: int) -> np.ndarray:
    """Convolution of N C spatial... data with an O I spatial... kernel, via im2col + matmul."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    o, ig = w.shape[:2]
    kernel = w.shape[2:]
    xp = pad_spatial(x, padding)
    out = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // strides[i] + 1
           for i in range(nd)]
    win = window_view(xp, kernel, out, strides, dilation)
    if ig == 1 and groups == c and groups > 1:
        return _depthwise_nd(xp, w, out, strides, dilation)
    cols = win.reshape(n, groups, ig * prod(kernel), prod(out))
    res = np.matmul(w.reshape(groups, o // groups, ig * prod(kernel)), cols)
    return res.reshape(n, o, *out)


def _depthwise_nd(xp: np.ndarray, w: np.ndarray, out: Sequence[int], strides: Sequence[int],
                  dilation: Sequence[int]) -> np.ndarray:
    """Depthwise conv: one multiply-add over the whole tensor per kernel tap."""
    n, c = xp.shape[:2]
    o = w.shape[0]
    mult = o // c
    dtype = accumulator_dtype(xp, w)
    xp, wk = xp.astype(dtype, copy=False), w.reshape(c, mult, *w.shape[2:]).astype(dtype, copy=False)
    acc = np.zeros((n, c, mult, *out), dtype=dtype)
    lone: tuple[Any, ...] = (None,) * len(out)
    lead: tuple[Any, ...] = (slice(None), slice(None))
    for tap in taps(w.shape[2:]):
        region = xp[lead + tap_slices(tap, out, strides, dilation)]
        acc += region[:, :, None] * wk[lead + tap][(None, ...) + lone]
    return acc.reshape(n, o, *out)


def conv_transpose_nd_ncx(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                          padding: Sequence[int], dilation: Sequence[int],
                          output_padding: Sequence[int], groups: int) -> np.ndarray:
    """Transposed conv of N C spatial... data with an I O spatial... kernel: a matmul, then
    col2im by kernel tap, then cropping the padding."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    size, og, kernel = x.shape[2:], w.shape[1], w.shape[2:]
    cg = c // groups
    full = [(size[i] - 1) * strides[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
            for i in range(nd)]
    xg = x.reshape(n, groups, cg, prod(size))
    wg = w.reshape(groups, cg, og * prod(kernel)).transpose(0, 2, 1)
    cols = np.matmul(wg, xg).reshape(n, groups, og, *kernel, *size)
    out = np.zeros((n, groups, og, *full), dtype=accumulator_dtype(x, w))
    lead = (slice(None),) * 3
    for tap in taps(kernel):
        out[lead + tap_slices(tap, size, strides, dilation)] += cols[lead + tap]
    crop = tuple(slice(padding[i], full[i] - padding[i + nd]) for i in range(nd))
    out = out[lead + crop]
    return out.reshape(n, groups * og, *out.shape[3:])


# --- type relations ----------------------------------------------------------------------
def _out_type(data: TensorType, attrs: Attrs, nd: int, channels: Dim,
              spatial: Sequence[Dim]) -> TensorType:
    letters = canonical_data(nd)
    n = dims(data, attrs.data_layout, "N", 0)[0]
    by_letter = {"N": n, "C": channels, **dict(zip(letters[2:], spatial))}
    out_layout = attrs.get("out_layout") or attrs.data_layout
    return TensorType([by_letter[ch] for ch in out_layout], attrs.get("out_dtype") or data.dtype)


def _check_kernel_attrs(attrs: Attrs, o: Dim, kernel: Sequence[Dim], weight: TensorType) -> None:
    if attrs.get("channels") is not None:
        check_dim(o, int(attrs.channels), 1, "output channels", weight)
    if attrs.get("kernel_size") is not None:
        for axis, (k, want) in enumerate(zip(kernel, attrs.kernel_size)):
            check_dim(k, int(want), 1, f"kernel size (spatial axis {axis})", weight)


def _conv_rel(nd: int) -> Any:
    letters = canonical_data(nd)

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        check_arity(arg_types, 2)
        data, weight = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
        _, c, *size = dims(data, attrs.data_layout, letters, 0)
        o, i, *kernel = dims(weight, attrs.kernel_layout, canonical_kernel(nd), 1)
        groups = int(attrs.groups)
        if not (is_any(c) or is_any(i)) and int(c) != int(i) * groups:
            raise TypeRelationError(
                f"input channels ({c}) != kernel input channels ({i}) x groups ({groups})",
                arg=1, expected=f"a kernel with {int(c) // groups} input channels per group",
                actual=type_str(weight))
        _check_kernel_attrs(attrs, o, kernel, weight)
        pads = attrs.padding
        out = [out_len(size[a], kernel[a], attrs.strides[a], attrs.dilation[a], pads[a],
                       pads[a + nd]) for a in range(nd)]
        check_positive(out, "output (kernel larger than padded input)", 0, data)
        return _out_type(data, attrs, nd, o, out)
    return rel


def _transposed_len(size: Dim, k: Dim, s: int, d: int, before: int, after: int, extra: int
                    ) -> Dim:
    if is_any(size) or is_any(k):
        return size if is_any(size) else k
    return (int(size) - 1) * s + d * (int(k) - 1) + 1 + extra - before - after


def _conv_transpose_rel(nd: int) -> Any:
    letters = canonical_data(nd)

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        check_arity(arg_types, 2)
        data, weight = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
        _, c, *size = dims(data, attrs.data_layout, letters, 0)
        i, og, *kernel = dims(weight, attrs.kernel_layout, canonical_kernel(nd, True), 1)
        check_dim(i, c, 1, "kernel input channels", weight)
        o: Dim = og if is_any(og) else int(og) * int(attrs.groups)
        _check_kernel_attrs(attrs, o, kernel, weight)
        pads = attrs.padding
        out = [_transposed_len(size[a], kernel[a], attrs.strides[a], attrs.dilation[a],
                               pads[a], pads[a + nd], attrs.output_padding[a])
               for a in range(nd)]
        check_positive(out, "output", 0, data)
        return _out_type(data, attrs, nd, o, out)
    return rel


# --- computes in any layout ----------------------------------------------------------------
def _finish(out: np.ndarray, xs: list[np.ndarray], attrs: Attrs, nd: int) -> np.ndarray:
    out = from_canonical(out, canonical_data(nd), attrs.get("out_layout") or attrs.data_layout)
    return np.ascontiguousarray(out, dtype=attrs.get("out_dtype") or xs[0].dtype)


def _conv_compute(nd: int) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        data = to_canonical(xs[0], attrs.data_layout, canonical_data(nd))
        weight = to_canonical(xs[1], attrs.kernel_layout, canonical_kernel(nd))
        out = conv_nd_ncx(data, weight, attrs.strides, attrs.padding, attrs.dilation,
                          int(attrs.groups))
        return _finish(out, xs, attrs, nd)
    return compute


def _conv_transpose_compute(nd: int) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        data = to_canonical(xs[0], attrs.data_layout, canonical_data(nd))
        weight = to_canonical(xs[1], attrs.kernel_layout, canonical_kernel(nd, True))
        out = conv_transpose_nd_ncx(data, weight, attrs.strides, attrs.padding, attrs.dilation,
                                    attrs.output_padding, int(attrs.groups))
        return _finish(out, xs, attrs, nd)
    return compute


for _nd in (1, 3):
    define_op(f"nn.conv{_nd}d", ("data", "weight"), _conv_rel(_nd), OUT_ELEMWISE_FUSABLE,
              _conv_compute(_nd), attrs_type_key=CONV_KEYS[_nd])
    define_op(f"nn.conv{_nd}d_transpose", ("data", "weight"), _conv_transpose_rel(_nd),
              OUT_ELEMWISE_FUSABLE, _conv_transpose_compute(_nd),
              attrs_type_key=CONV_T_KEYS[_nd])


# --- constructors (TVM's signatures) ------------------------------------------------------
def _conv_attrs(nd: int, strides: Any, padding: Any, dilation: Any, groups: int,
                channels: int | None, kernel_size: Any, data_layout: str, kernel_layout: str,
                out_layout: str, out_dtype: str) -> dict[str, Any]:
    return {
        "strides": ntuple(strides, nd, "strides"), "padding": pad_tuple_nd(padding, nd),
        "dilation": ntuple(dilation, nd, "dilation"), "groups": int(groups),
        "channels": None if channels is None else int(channels),
        "kernel_size": ntuple_or_none(kernel_size, nd, "kernel_size"),
        "data_layout": data_layout, "kernel_layout": kernel_layout, "out_layout": out_layout,
        "out_dtype": out_dtype,
    }


def conv1d(data: Expr, weight: Expr, strides: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, channels: int | None = None, kernel_size: Any = None,
           data_layout: str = "NCW", kernel_layout: str = "OIW", out_layout: str = "",
           out_dtype: str = "") -> Call:
    """1-D convolution (TVM's relay.nn.conv1d); padding is normalised to (left, right)."""
    return make_call("nn.conv1d", (data, weight), _conv_attrs(
        1, strides, padding, dilation, groups, channels, kernel_size, data_layout,
        kernel_layout, out_layout, out_dtype), CONV_KEYS[1])


def conv3d(data: Expr, weight: Expr, strides: Any = (1, 1, 1), padding: Any = (0, 0, 0),
           dilation: Any = (1, 1, 1), groups: int = 1, channels: int | None = None,
           kernel_size: Any = None, data_layout: str = "NCDHW", kernel_layout: str = "OIDHW",
           out_layout: str = "", out_dtype: str = "") -> Call:
    """3-D convolution (TVM's relay.nn.conv3d); padding is normalised to 6 values
    (front, top, left, back, bottom, right)."""
    return make_call("nn.conv3d", (data, weight), _conv_attrs(
        3, strides, padding, dilation, groups, channels, kernel_size, data_layout,
        kernel_layout, out_layout, out_dtype), CONV_KEYS[3])


def _conv_t_attrs(nd: int, output_padding: Any, **kwargs: Any) -> dict[str, Any]:
    attrs = _conv_attrs(nd, **kwargs)
    attrs["output_padding"] = ntuple(output_padding, nd, "output_padding")
    return attrs


def conv1d_transpose(data: Expr, weight: Expr, strides: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, dilation: Any = 1, groups: int = 1,
                     channels: int | None = None, kernel_size: Any = None,
                     data_layout: str = "NCW", kernel_layout: str = "IOW",
                     out_layout: str = "", out_dtype: str = "") -> Call:
    """Transposed 1-D convolution (TVM's relay.nn.conv1d_transpose; kernel IOW)."""
    return make_call("nn.conv1d_transpose", (data, weight), _conv_t_attrs(
        1, output_padding, strides=strides, padding=padding, dilation=dilation, groups=groups,
        channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype),
        CONV_T_KEYS[1])


def conv3d_transpose(data: Expr, weight: Expr, strides: Any = (1, 1, 1),
                     padding: Any = (0, 0, 0), output_padding: Any = (0, 0, 0),
                     dilation: Any = (1, 1, 1), groups: int = 1, channels: int | None = None,
                     kernel_size: Any = None, data_layout: str = "NCDHW",
                     kernel_layout: str = "IODHW", out_layout: str = "",
                     out_dtype: str = "") -> Call:
    """Transposed 3-D convolution (TVM's relay.nn.conv3d_transpose; kernel IODHW)."""
    return make_call("nn.conv3d_transpose", (data, weight), _conv_t_attrs(
        3, output_padding, strides=strides, padding=padding, dilation=dilation, groups=groups,
        channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype),
        CONV_T_KEYS[3])


__all__ = ["conv1d", "conv1d_transpose", "conv3d", "conv3d_transpose"]
