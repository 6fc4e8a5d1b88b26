"""Classic ONNX ops: EyeLike, Shrink, ReverseSequence, CenterCropPad and AffineGrid composed
from Relay ops; Det, RoiAlign, Col2Im and TfIdfVectorizer through their own ops (`det`,
`vision.roi_align`, `nn.col2im` / `dyn.nn.col2im`, `tfidf_vectorizer`)."""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axes, onnx_dtype
from engine.relay.op.nn.col2im import col2im_attrs
from engine.relay.op.nn.crop_pad import crop_pad


def _const(value: float, dtype: str) -> Expr:
    return relay.const(np.array(value).astype(dtype), dtype)


@converter("EyeLike", since=9)
def eye_like(ctx: NodeContext) -> ConvertResult:
    """Ones on diagonal `k` of a 2-D tensor shaped like the input: a constant, since only
    the (static) shape of the input matters."""
    rows, cols = ctx.static_shape(0)
    dtype = onnx_dtype(int(ctx.attr("dtype"))) if ctx.attr("dtype") is not None else ctx.dtype(0)
    eye = np.eye(rows, cols, k=int(ctx.attr("k", 0)), dtype=dtype)
    return relay.const(eye, dtype)


@converter("Shrink", since=9)
def shrink(ctx: NodeContext) -> ConvertResult:
    """x + bias below -lambd, x - bias above lambd, 0 between."""
    x, dtype = ctx.input(0), ctx.dtype(0)
    lambd, bias = float(ctx.attr("lambd", 0.5)), float(ctx.attr("bias", 0.0))
    upper = relay.where(relay.greater(x, _const(lambd, dtype)),
                        relay.subtract(x, _const(bias, dtype)), _const(0, dtype))
    return relay.where(relay.less(x, _const(-lambd, dtype)),
                       relay.add(x, _const(bias, dtype)), upper)


@converter("Det", since=11)
def det(ctx: NodeContext) -> ConvertResult:
    return relay.det(ctx.input(0))


@converter("ReverseSequence", since=10)
def reverse_sequence(ctx: NodeContext) -> ConvertResult:
    """Reverse the first sequence_lens[b] steps along the time axis of each batch entry b:
    gather along time at index len - 1 - t where t < len, else t (a constant once the
    lengths are)."""
    shape = ctx.static_shape(0)
    rank = len(shape)
    time, batch = int(ctx.attr("time_axis", 0)), int(ctx.attr("batch_axis", 1))

    def along(expr: Expr, axis: int) -> Expr:  # (n,) -> rank dims, n at `axis`
        return relay.reshape(expr, [-1 if i == axis else 1 for i in range(rank)])
    steps = along(relay.const(np.arange(shape[time], dtype="int64"), "int64"), time)
    lengths = along(relay.cast(ctx.input(1), "int64"), batch)
    flipped = relay.subtract(relay.subtract(lengths, _const(1, "int64")), steps)
    index = relay.where(relay.less(steps, lengths), flipped, steps)
    return relay.gather(ctx.input(0), time, relay.broadcast_to(index, list(shape)))


@converter("RoiAlign", since=10)
def roi_align(ctx: NodeContext) -> ConvertResult:
    """Rois (R, 4) with their batch indices (R,) become TVM's (R, 5) rois."""
    dtype = ctx.dtype(0)
    index = relay.reshape(relay.cast(ctx.input(2), dtype), [-1, 1])
    rois = relay.concatenate([index, relay.cast(ctx.input(1), dtype)], axis=1)
    mode = ctx.attr("coordinate_transformation_mode",
                    "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if mode not in ("half_pixel", "output_half_pixel"):
        raise ctx.fail(f"unknown coordinate_transformation_mode {mode!r}")
    pooled = (int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1)))
    return relay.vision.roi_align(ctx.input(0), rois, pooled,
                                  float(ctx.attr("spatial_scale", 1.0)),
                                  int(ctx.attr("sampling_ratio", 0)), mode=ctx.attr("mode", "avg"),
                                  aligned=mode == "half_pixel")


@converter("Col2Im", since=18)
def col2im(ctx: NodeContext) -> ConvertResult:
    nd = ctx.shape(1)[0]
    if nd is None:
        raise ctx.fail("image_shape has a dynamic length")
    window = col2im_attrs(nd, ctx.attr("dilations"), ctx.attr("pads"), ctx.attr("strides"))
    if ctx.value(1) is None or ctx.value(2) is None:
        return relay.dyn.nn.col2im(ctx.input(0), relay.cast(ctx.input(1), "int64"),
                                   relay.cast(ctx.input(2), "int64"), window)
    return relay.nn.col2im(ctx.input(0), ctx.ints(1, "image_shape"), ctx.ints(2, "block_shape"),
                           **window)


# --- CenterCropPad ------------------------------------------------------------------------------
def _half_toward_zero(diff: Expr) -> Expr:
    return relay.trunc_divide(diff, _const(2, "int64"))


def _run_time_widths(ctx: NodeContext, axes: list[int]) -> Expr:
    """(rank, 2) widths: half of target - size before (rounded toward zero), the rest after;
    axes not listed keep their size."""
    size = relay.shape_of(ctx.input(0), dtype="int64")
    target = relay.cast(ctx.input(1), "int64")
    pieces = [relay.strided_slice(target, [axes.index(i)], [axes.index(i) + 1]) if i in axes
              else relay.strided_slice(size, [i], [i + 1]) for i in range(ctx.rank(0))]
    diff = relay.subtract(relay.concatenate(pieces, axis=0), size)
    before = _half_toward_zero(diff)
    return relay.stack([before, relay.subtract(diff, before)], axis=1)


@converter("CenterCropPad", since=18)
def center_crop_pad(ctx: NodeContext) -> ConvertResult:
    """Crop or zero-pad the listed axes to `shape`, centred (the extra element of an odd
    difference goes at the end)."""
    rank = ctx.rank(0)
    axes = norm_axes(ctx.attr("axes") or list(range(rank)), rank)
    zero = _const(0, ctx.dtype(0))
    sizes, target = ctx.shape(0), ctx.value(1)
    if target is None or any(d is None for d in sizes):
        return relay.dyn.nn.pad(ctx.input(0), _run_time_widths(ctx, axes), zero)
    shape = [int(d) for d in sizes]  # type: ignore[arg-type]
    wanted = list(shape)
    for axis, size in zip(axes, np.asarray(target).reshape(-1)):
        wanted[axis] = int(size)
    diff = np.array(wanted) - np.array(shape)
    before = np.trunc(diff / 2).astype(np.int64)
    return crop_pad(ctx.input(0), shape, np.stack([before, diff - before], axis=1), zero)


# --- AffineGrid ---------------------------------------------------------------------------------
def _coordinates(size: Expr | int, dtype: str, align_corners: bool) -> Expr:
    """The normalised [-1, 1] coordinates of the `size` positions of one axis (a static
    length when `size` is an int)."""
    n = _const(size, dtype) if isinstance(size, int) else relay.cast(size, dtype)
    steps = relay.arange(_const(0, dtype), n, _const(1, dtype), dtype=dtype)
    one, two = _const(1, dtype), _const(2, dtype)
    if align_corners:  # -1 + 2 i / (n - 1); a single position sits at -1
        span = relay.maximum(relay.subtract(n, one), one)
        return relay.subtract(relay.divide(relay.multiply(steps, two), span), one)
    return relay.subtract(relay.divide(relay.add(relay.multiply(steps, two), one), n), one)


def _spatial_sizes(ctx: NodeContext, nd: int) -> list[Expr | int]:
    """The (d,) h, w of AffineGrid's size (N, C, ...): ints when known, else scalars."""
    known = ctx.value(1)
    if known is not None:
        return [int(v) for v in np.asarray(known).reshape(-1)[2:]]
    size = relay.cast(ctx.input(1), "int64")
    return [relay.reshape(relay.strided_slice(size, [i], [i + 1]), [])
            for i in range(2, 2 + nd)]


@converter("AffineGrid", since=20)
def affine_grid(ctx: NodeContext) -> ConvertResult:
    """grid[n, (d,) h, w] = theta[n] @ (x_w, y_h, (z_d,) 1): each coordinate axis, placed
    along its output dim, times its column of theta, summed."""
    theta, dtype = ctx.input(0), ctx.dtype(0)
    batch, nd, cols = ctx.static_shape(0)
    if cols != nd + 1 or nd not in (2, 3):
        raise ctx.fail(f"theta must be (N, 2, 3) or (N, 3, 4), got {(batch, nd, cols)}")
    sizes = _spatial_sizes(ctx, nd)
    align = bool(ctx.attr("align_corners", 0))
    out: Expr | None = None
    for k in range(cols):  # theta column k scales x (k = 0), y, z, then the constant 1
        column = relay.reshape(relay.strided_slice(theta, [0, 0, k], [batch, nd, k + 1]),
                               [batch, *([1] * nd), nd])
        if k < nd:
            spatial = nd - 1 - k  # x runs along the last spatial dim
            coord = relay.expand_dims(_coordinates(sizes[spatial], dtype, align), 0,
                                      1 + spatial)
            column = relay.multiply(column, relay.expand_dims(coord, 2 + spatial, nd - spatial))
        out = column if out is None else relay.add(out, column)
    assert out is not None
    return out


# --- TfIdfVectorizer ----------------------------------------------------------------------------
def _pool_ngrams(ctx: NodeContext) -> list[list[int]]:
    """The pool's n-grams in order: ngram_counts[i] is where the (i + 1)-grams start."""
    if ctx.attr("pool_strings"):
        raise ctx.fail("string pools (pool_strings) are not supported: the engine has no "
                       "string tensors")
    pool = [int(v) for v in ctx.attr("pool_int64s", [])]
    starts = [int(v) for v in ctx.attr("ngram_counts", [])]
    grams: list[list[int]] = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(pool)
        grams.extend(pool[j:j + i + 1] for j in range(start, end - i, i + 1))
    return grams


@converter("TfIdfVectorizer", since=9)
def tfidf_vectorizer(ctx: NodeContext) -> ConvertResult:
    grams = _pool_ngrams(ctx)
    columns = [int(v) for v in ctx.attr("ngram_indexes", [])]
    if len(columns) != len(grams):
        raise ctx.fail(f"ngram_indexes has {len(columns)} entries for {len(grams)} n-grams")
    try:
        return relay.tfidf_vectorizer(
            ctx.input(0), grams, columns, int(ctx.attr("min_gram_length")),
            int(ctx.attr("max_gram_length")), int(ctx.attr("max_skip_count")),
            ctx.attr("mode"), [float(w) for w in ctx.attr("weights", [])])
    except ValueError as err:
        raise ctx.fail(str(err)) from None

