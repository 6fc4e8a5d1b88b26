"""1-D and 3-D pooling (TVM's relay.nn.{max,avg}_pool{1,3}d, adaptive_{avg,max}_pool{1,3}d).

Layouts NCW / NWC and NCDHW / NDHWC (any order of the letters). The computes take one
strided view of the padded input per window tap, as the 2-D pools do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.dtype import lowest
from engine.ir.expr import Call, Expr
from engine.ir.type import Dim, TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.nn._layout import check_positive, dims, from_canonical, to_canonical
from engine.relay.op.nn._nd import (
    SPATIAL,
    canonical_data,
    ntuple,
    out_len,
    pad_spatial,
    pad_tuple_nd,
    tap_slices,
    taps,
)
from engine.relay.op.op import OUT_ELEMWISE_FUSABLE, define_op, make_call

MAX_KEYS = {1: "relay.attrs.MaxPool1DAttrs", 3: "relay.attrs.MaxPool3DAttrs"}
AVG_KEYS = {1: "relay.attrs.AvgPool1DAttrs", 3: "relay.attrs.AvgPool3DAttrs"}
ADAPTIVE_KEYS = {1: "relay.attrs.AdaptivePool1DAttrs", 3: "relay.attrs.AdaptivePool3DAttrs"}


def _out_type(data: TensorType, attrs: Attrs, nd: int, spatial: Sequence[Dim]) -> TensorType:
    n, c = dims(data, attrs.layout, "NC", 0)
    by_letter = {"N": n, "C": c, **dict(zip(SPATIAL[nd], spatial))}
    return TensorType([by_letter[ch] for ch in (attrs.get("out_layout") or attrs.layout)],
                      data.dtype)


def pool_out_sizes(size: Sequence[Dim], attrs: Attrs, nd: int) -> list[Dim]:
    pads, ceil = attrs.padding, bool(attrs.ceil_mode)
    return [out_len(size[a], attrs.pool_size[a], attrs.strides[a], attrs.dilation[a], pads[a],
                    pads[a + nd], ceil) for a in range(nd)]


def _pool_rel(nd: int) -> Any:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        check_arity(arg_types, 1)
        data = tensor_arg(arg_types, 0)
        out = pool_out_sizes(dims(data, attrs.layout, SPATIAL[nd], 0), attrs, nd)
        check_positive(out, "output (pool window larger than padded input)", 0, data)
        return _out_type(data, attrs, nd, out)
    return rel


def pool_geometry(x: np.ndarray, attrs: Attrs, nd: int) -> tuple[list[int], list[int]]:
    """Output sizes and the padding, with the ends grown for ceil_mode."""
    out = [int(o) for o in pool_out_sizes(x.shape[2:], attrs, nd)]  # type: ignore[arg-type]
    pads = list(attrs.padding)
    for a in range(nd):
        need = (out[a] - 1) * attrs.strides[a] + attrs.dilation[a] * (attrs.pool_size[a] - 1) + 1
        pads[a + nd] = max(pads[a + nd], need - x.shape[2 + a] - pads[a])
    return out, pads


def _window_taps(xp: np.ndarray, attrs: Attrs, out: Sequence[int]) -> list[np.ndarray]:
    lead = (slice(None), slice(None))
    return [xp[lead + tap_slices(tap, out, attrs.strides, attrs.dilation)]
            for tap in taps(attrs.pool_size)]


def _finish(out: np.ndarray, attrs: Attrs, nd: int) -> np.ndarray:
    layout = attrs.get("out_layout") or attrs.layout
    return np.ascontiguousarray(from_canonical(out, canonical_data(nd), layout))


def _max_compute(nd: int) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = to_canonical(xs[0], attrs.layout, canonical_data(nd))
        out, pads = pool_geometry(x, attrs, nd)
        low = lowest(x.dtype)
        windows = _window_taps(pad_spatial(x, pads, low), attrs, out)
        acc = windows[0].copy()
        for tap in windows[1:]:
            np.maximum(acc, tap, out=acc)
        return _finish(acc, attrs, nd)
    return compute


def _avg_counts(x: np.ndarray, attrs: Attrs, nd: int, out: Sequence[int],
                pads: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """How many elements each window averages over (padding counted if count_include_pad,
    the extra ceil_mode region never)."""
    ones = np.ones((1, 1, *x.shape[2:]), dtype=dtype)
    if attrs.count_include_pad:
        declared = list(attrs.padding)
        mask = pad_spatial(ones, declared, 1)
        extra = [0] * nd + [pads[a + nd] - declared[a + nd] for a in range(nd)]
        mask = pad_spatial(mask, extra, 0)
    else:
        mask = pad_spatial(ones, pads, 0)
    count = np.zeros((1, 1, *out), dtype=dtype)
    for tap in _window_taps(mask, attrs, out):
        count += tap
    return count


def _avg_compute(nd: int) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = to_canonical(xs[0], attrs.layout, canonical_data(nd))
        out, pads = pool_geometry(x, attrs, nd)
        dtype = x.dtype if x.dtype.kind == "f" else np.dtype("float64")
        total = np.zeros((*x.shape[:2], *out), dtype=dtype)
        for tap in _window_taps(pad_spatial(x, pads, 0), attrs, out):
            total += tap
        count = _avg_counts(x, attrs, nd, out, pads, dtype)
        res = (total / np.maximum(count, 1)).astype(x.dtype, copy=False)
        return _finish(res, attrs, nd)
    return compute


for _nd in (1, 3):
    define_op(f"nn.max_pool{_nd}d", ("data",), _pool_rel(_nd), OUT_ELEMWISE_FUSABLE,
              _max_compute(_nd), attrs_type_key=MAX_KEYS[_nd])
    define_op(f"nn.avg_pool{_nd}d", ("data",), _pool_rel(_nd), OUT_ELEMWISE_FUSABLE,
              _avg_compute(_nd), attrs_type_key=AVG_KEYS[_nd])


def _pool_attrs(nd: int, pool_size: Any, strides: Any, dilation: Any, padding: Any,
                layout: str, out_layout: str, ceil_mode: bool) -> dict[str, Any]:
    return {"pool_size": ntuple(pool_size, nd, "pool_size"),
            "strides": ntuple(strides, nd, "strides"),
            "dilation": ntuple(dilation, nd, "dilation"), "padding": pad_tuple_nd(padding, nd),
            "layout": layout, "out_layout": out_layout, "ceil_mode": bool(ceil_mode)}


def max_pool1d(data: Expr, pool_size: Any = 1, strides: Any = 1, dilation: Any = 1,
               padding: Any = 0, layout: str = "NCW", out_layout: str = "",
               ceil_mode: bool = False) -> Call:
    return make_call("nn.max_pool1d", (data,), _pool_attrs(
        1, pool_size, strides, dilation, padding, layout, out_layout, ceil_mode), MAX_KEYS[1])


def max_pool3d(data: Expr, pool_size: Any = (1, 1, 1), strides: Any = (1, 1, 1),
               dilation: Any = (1, 1, 1), padding: Any = (0, 0, 0), layout: str = "NCDHW",
               out_layout: str = "", ceil_mode: bool = False) -> Call:
    return make_call("nn.max_pool3d", (data,), _pool_attrs(
        3, pool_size, strides, dilation, padding, layout, out_layout, ceil_mode), MAX_KEYS[3])


def avg_pool1d(data: Expr, pool_size: Any = 1, strides: Any = 1, dilation: Any = 1,
               padding: Any = 0, layout: str = "NCW", out_layout: str = "",
               ceil_mode: bool = False, count_include_pad: bool = False) -> Call:
    attrs = _pool_attrs(1, pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = bool(count_include_pad)
    return make_call("nn.avg_pool1d", (data,), attrs, AVG_KEYS[1])


def avg_pool3d(data: Expr, pool_size: Any = (1, 1, 1), strides: Any = (1, 1, 1),
               dilation: Any = (1, 1, 1), padding: Any = (0, 0, 0), layout: str = "NCDHW",
               out_layout: str = "", ceil_mode: bool = False,
               count_include_pad: bool = False) -> Call:
    attrs = _pool_attrs(3, pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = bool(count_include_pad)
    return make_call("nn.avg_pool3d", (data,), attrs, AVG_KEYS[3])


# --- adaptive ----------------------------------------------------------------------------
def _adaptive_size(attrs: Attrs, size: Sequence[Any], nd: int) -> tuple[Any, ...]:
    wanted = attrs.get("output_size")
    if not wanted:
        return tuple(size)
    return tuple(wanted) * nd if len(wanted) == 1 else tuple(wanted)


def _adaptive_rel(nd: int) -> Any:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        check_arity(arg_types, 1)
        data = tensor_arg(arg_types, 0)
        size = dims(data, attrs.layout, SPATIAL[nd], 0)
        return _out_type(data, attrs, nd, _adaptive_size(attrs, size, nd))
    return rel


def _bins(size: int, out: int) -> list[slice]:
    """PyTorch/TVM adaptive bins: [floor(i*size/out), ceil((i+1)*size/out))."""
    return [slice((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _adaptive_compute(nd: int, reduce: str) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = to_canonical(xs[0], attrs.layout, canonical_data(nd))
        out = [int(o) for o in _adaptive_size(attrs, x.shape[2:], nd)]
        fn = getattr(np, reduce)
        res = np.empty((*x.shape[:2], *out), dtype=x.dtype)
        axes = tuple(range(2, 2 + nd))
        bins = [_bins(x.shape[2 + a], out[a]) for a in range(nd)]
        lead: tuple[Any, ...] = (slice(None), slice(None))
        for index in taps(out):
            window = tuple(bins[a][i] for a, i in enumerate(index))
            res[lead + index] = fn(x[lead + window], axis=axes)
        return _finish(res, attrs, nd)
    return compute


for _nd in (1, 3):
    for _kind in ("avg", "max"):
        define_op(f"nn.adaptive_{_kind}_pool{_nd}d", ("data",), _adaptive_rel(_nd),
                  OUT_ELEMWISE_FUSABLE, _adaptive_compute(_nd, "mean" if _kind == "avg" else "max"),
                  attrs_type_key=ADAPTIVE_KEYS[_nd])


def _adaptive(kind: str, nd: int, data: Expr, output_size: Any, layout: str,
              out_layout: str) -> Call:
    size = None if output_size is None else tuple(int(s) for s in np.atleast_1d(output_size))
    return make_call(f"nn.adaptive_{kind}_pool{nd}d", (data,), {
        "output_size": size, "layout": layout, "out_layout": out_layout}, ADAPTIVE_KEYS[nd])


def adaptive_avg_pool1d(data: Expr, output_size: Any = None, layout: str = "NCW",
                        out_layout: str = "") -> Call:
    return _adaptive("avg", 1, data, output_size, layout, out_layout)


def adaptive_max_pool1d(data: Expr, output_size: Any = None, layout: str = "NCW",
                        out_layout: str = "") -> Call:
    return _adaptive("max", 1, data, output_size, layout, out_layout)


def adaptive_avg_pool3d(data: Expr, output_size: Any = None, layout: str = "NCDHW",
                        out_layout: str = "") -> Call:
    return _adaptive("avg", 3, data, output_size, layout, out_layout)


def adaptive_max_pool3d(data: Expr, output_size: Any = None, layout: str = "NCDHW",
                        out_layout: str = "") -> Call:
    return _adaptive("max", 3, data, output_size, layout, out_layout)


__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool3d", "avg_pool1d", "avg_pool3d", "max_pool1d", "max_pool3d"]
