"""ONNX signal ops: DFT, STFT, the Hann / Hamming / Blackman windows and MelWeightMatrix.

Complex numbers ride as a trailing dim of 2 (1 for a real signal). A DFT whose axis and
length are known at import time is a dense with a constant twiddle matrix
(`relay.op.signal.dft`); one whose axis or length is a run-time value is
`dyn.signal.dft`, which `DynamicToStatic` turns into the dense once they are constants.
STFT gathers its frames (with indices built by `arange` when the frame step or length is
a run-time value), weights them by the window and transforms them along the frame axis.
The windows and the mel matrix are arithmetic on `arange`, so a run-time size works and a
constant one folds (the importer folds nodes whose inputs are all constants).
"""

from __future__ import annotations

import math

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axis, onnx_dtype
from engine.relay.op.signal import default_length, dft


# --- DFT ----------------------------------------------------------------------------------
def _axis(ctx: NodeContext) -> int | None:
    """The transform axis, normalized (None when it is a run-time value)."""
    if ctx.opset < 20:
        return norm_axis(int(ctx.attr("axis", 1)), ctx.rank(0))
    if not ctx.has(2):
        return ctx.rank(0) - 2
    value = ctx.value(2)
    return None if value is None else norm_axis(int(np.asarray(value).reshape(-1)[0]),
                                                ctx.rank(0))


def _length(ctx: NodeContext) -> int | None:
    """dft_length: 0 when absent (the default), None when it is a run-time value."""
    if not ctx.has(1):
        return 0
    value = ctx.value(1)
    return None if value is None else int(np.asarray(value).reshape(-1)[0])


def _scalar(ctx: NodeContext, index: int, default: int) -> Expr:
    if ctx.has(index):
        return ctx.input(index)
    return relay.const(np.asarray(default, np.int64))


@converter("DFT", since=17)
def dft_(ctx: NodeContext) -> ConvertResult:
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    axis, length, shape = _axis(ctx), _length(ctx), ctx.shape(0)
    if axis is not None and axis >= len(shape) - 1:
        raise ctx.fail(f"axis {axis} is the complex dim; the transform needs a signal axis")
    if axis is None or length is None or shape[axis] is None or shape[-1] is None:
        default_axis = 1 if ctx.opset < 20 else -2
        axis_expr = _scalar(ctx, 2, default_axis) if axis is None else relay.const(
            np.asarray(axis, np.int64))
        return relay.dyn.signal.dft(ctx.input(0), axis_expr, _scalar(ctx, 1, 0),
                                    inverse, onesided)
    n_in = int(shape[axis])  # type: ignore[arg-type]
    return dft(ctx.input(0), len(shape), axis, n_in, int(shape[-1]),
               length or default_length(n_in, inverse, onesided), inverse, onesided,
               ctx.dtype(0))


# --- STFT ---------------------------------------------------------------------------------
def _frame_length(ctx: NodeContext, signal_length: int | None) -> int | Expr:
    """frame_length (input 3), else the window's length, else the signal's."""
    if ctx.has(3):
        value = ctx.value(3)
        return ctx.input(3) if value is None else int(np.asarray(value).reshape(-1)[0])
    if ctx.has(2):
        window = ctx.shape(2)[0]
        if window is not None:
            return int(window)
    if signal_length is None:
        raise ctx.fail("the frame length is unknown: give frame_length or a window of "
                       "static length, or pin the signal's shape")
    return signal_length


def _frame_indices(ctx: NodeContext, length: int | None, frame: int | Expr) -> Expr:
    """(frames, frame) indices into the signal axis: frame f starts at f * frame_step."""
    step = ctx.value(1)
    if length is not None and step is not None and isinstance(frame, int):
        hop = int(np.asarray(step).reshape(-1)[0])
        count = 1 + (length - frame) // hop
        return relay.const(np.arange(count)[:, None] * hop + np.arange(frame)[None, :])

    def as_i64(value: int | Expr) -> Expr:
        if isinstance(value, int):
            return relay.const(np.asarray(value, np.int64))
        return relay.cast(relay.reshape(value, newshape=[]), "int64")
    hop_e, frame_e = as_i64(ctx.input(1)), as_i64(frame)
    size = as_i64(length) if length is not None else relay.take(
        relay.shape_of(ctx.input(0), "int64"), relay.const(1, "int64"))
    one = relay.const(np.asarray(1, np.int64))
    count = relay.add(one, relay.floor_divide(relay.subtract(size, frame_e), hop_e))
    starts = relay.multiply(relay.arange(relay.const(0, "int64"), count, one, "int64"), hop_e)
    offsets = relay.arange(relay.const(0, "int64"), frame_e, one, "int64")
    return relay.add(relay.expand_dims(starts, 1), relay.expand_dims(offsets, 0))


@converter("STFT", since=17)
def stft(ctx: NodeContext) -> ConvertResult:
    shape = ctx.shape(0)
    if len(shape) != 3 or shape[-1] not in (1, 2, None):
        raise ctx.fail(f"the signal should be (batch, length, 1 or 2), got {shape}")
    frame = _frame_length(ctx, shape[1])
    frames = relay.take(ctx.input(0), _frame_indices(ctx, shape[1], frame), axis=1)
    if ctx.has(2):
        frames = relay.multiply(frames, relay.reshape(ctx.input(2), newshape=[1, 1, -1, 1]))
    onesided = bool(ctx.attr("onesided", 1))
    if isinstance(frame, int) and shape[-1] is not None:
        return dft(frames, 4, 2, frame, int(shape[-1]), frame, False, onesided, ctx.dtype(0))
    axis = relay.const(np.asarray(2, np.int64))
    return relay.dyn.signal.dft(frames, axis, relay.const(np.asarray(0, np.int64)),
                                False, onesided)


# --- windows ------------------------------------------------------------------------------
# w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1
_WINDOWS = {
    "HannWindow": (0.5, 0.5, 0.0),
    "HammingWindow": (25.0 / 46.0, 21.0 / 46.0, 0.0),
    "BlackmanWindow": (0.42, 0.5, 0.08),
}


@converter(*_WINDOWS, since=17)
def window(ctx: NodeContext) -> ConvertResult:
    a0, a1, a2 = _WINDOWS[ctx.op_type]
    c = _f64
    size = relay.cast(relay.reshape(ctx.input(0), newshape=[]), "float64")
    n = relay.arange(c(0.0), size, c(1.0), "float64")
    period = size if ctx.attr("periodic", 1) else relay.subtract(size, c(1.0))
    angle = relay.divide(relay.multiply(c(2.0 * math.pi), n), period)
    w = relay.subtract(c(a0), relay.multiply(c(a1), relay.cos(angle)))
    if a2:
        w = relay.add(w, relay.multiply(c(a2), relay.cos(relay.multiply(c(2.0), angle))))
    return relay.cast(w, onnx_dtype(int(ctx.attr("output_datatype", 1))))


def _f64(value: float) -> Expr:
    return relay.const(np.asarray(value, np.float64))


# --- MelWeightMatrix ----------------------------------------------------------------------
def _scalar_f64(ctx: NodeContext, index: int) -> Expr:
    return relay.cast(relay.reshape(ctx.input(index), newshape=[]), "float64")


def _mel_edges(ctx: NodeContext, mel_bins: Expr) -> Expr:
    """The num_mel_bins + 2 edges as spectrogram bin indices (float64, floored)."""
    c = _f64

    def to_mel(hertz: Expr) -> Expr:
        return relay.multiply(c(2595.0), relay.log10(relay.add(c(1.0), relay.divide(
            hertz, c(700.0)))))
    low, high = to_mel(_scalar_f64(ctx, 3)), to_mel(_scalar_f64(ctx, 4))
    count = relay.add(mel_bins, c(2.0))
    step = relay.divide(relay.subtract(high, low), count)
    mel = relay.add(relay.multiply(relay.arange(c(0.0), count, c(1.0), "float64"), step), low)
    hertz = relay.multiply(c(700.0), relay.subtract(
        relay.power(c(10.0), relay.divide(mel, c(2595.0))), c(1.0)))
    scaled = relay.multiply(relay.add(_scalar_f64(ctx, 1), c(1.0)), hertz)
    return relay.floor(relay.divide(scaled, _scalar_f64(ctx, 2)))


@converter("MelWeightMatrix", since=17)
def mel_weight_matrix(ctx: NodeContext) -> ConvertResult:
    """Triangular filters: filter m rises over bins [edge m, edge m+1] and falls over
    [edge m+1, edge m+2) (a filter whose rise is empty is 1 at its center)."""
    c = _f64
    mel_bins = _scalar_f64(ctx, 0)
    edges = _mel_edges(ctx, mel_bins)
    m = relay.arange(relay.const(0, "int64"), relay.cast(mel_bins, "int64"),
                     relay.const(1, "int64"), "int64")
    lower, center, upper = (relay.expand_dims(relay.take(edges, relay.add(
        m, relay.const(k, "int64"))), 0) for k in range(3))
    bins = relay.floor(relay.add(relay.divide(_scalar_f64(ctx, 1), c(2.0)), c(1.0)))
    j = relay.expand_dims(relay.arange(c(0.0), bins, c(1.0), "float64"), 1)
    rise = relay.divide(relay.subtract(j, lower),
                        relay.maximum(relay.subtract(center, lower), c(1.0)))
    rise = relay.where(relay.equal(center, lower), c(1.0), rise)
    fall = relay.divide(relay.subtract(upper, j),
                        relay.maximum(relay.subtract(upper, center), c(1.0)))
    rising = relay.logical_and(relay.greater_equal(j, lower), relay.less_equal(j, center))
    falling = relay.logical_and(relay.greater_equal(j, center), relay.less(j, upper))
    out = relay.where(falling, fall, relay.where(rising, rise, c(0.0)))
    return relay.cast(out, onnx_dtype(int(ctx.attr("output_datatype", 1))))
