"""The discrete Fourier transform as a composition of Relay ops: complex numbers ride as a
trailing dim of 2 (1 for a real signal), as ONNX carries them, and the transform along one
axis is a dense with a constant real matrix that holds the twiddle factors (cos and sin
blocks for the real and imaginary parts), so it builds, fuses and folds like any dense.

`dft_matrix` is that matrix; `dft` builds the expression (the axis moved next to the
complex dim, flattened with it, multiplied, unflattened, moved back). ONNX's `DFT` and
`STFT` convert through it, and `transform.DynamicToStatic` specialises `dyn.signal.dft`
(whose axis or length was a run-time value) to it.
"""

from __future__ import annotations

import numpy as np

from engine.ir.expr import Expr


def dft_bins(length: int, inverse: bool, onesided: bool) -> tuple[int, int]:
    """(output length along the axis, output channels): a one-sided forward transform keeps
    length // 2 + 1 bins; a one-sided inverse (irfft) yields `length` real samples."""
    if inverse and onesided:
        return length, 1
    return (length // 2 + 1 if onesided else length), 2


def default_length(n_in: int, inverse: bool, onesided: bool) -> int:
    """The transform length when none is given: an irfft of n bins makes 2 (n - 1) samples."""
    return 2 * (n_in - 1) if inverse and onesided else n_in


def dft_matrix(n_in: int, channels: int, length: int, inverse: bool, onesided: bool,
               dtype: str = "float32") -> np.ndarray:
    """The (bins_out * out_channels, n_in * channels) weight of the dense that maps the
    flattened (n, channel) input to the flattened (k, channel) output.

    Input rows at or past `length` are dropped (fft's truncation; a shorter input is
    zero-padded by having no rows). An irfft reads the first length // 2 + 1 bins and
    counts each bin that has a mirror twice (its conjugate), as numpy's irfft does."""
    n_out, out_channels = dft_bins(length, inverse, onesided)
    n = np.arange(n_in)[:, None]
    theta = 2.0 * np.pi * ((n * np.arange(n_out)[None, :]) % length) / length
    sign = 1.0 if inverse else -1.0
    cos, sin = np.cos(theta), np.sin(theta)
    blocks = np.zeros((n_in, 2, n_out, 2))
    blocks[:, 0, :, 0], blocks[:, 1, :, 0] = cos, -sign * sin
    blocks[:, 0, :, 1], blocks[:, 1, :, 1] = sign * sin, cos
    weight = np.where(np.arange(n_in) < length, 1.0, 0.0)
    if inverse and onesided:
        mirrored = (np.arange(n_in) > 0) & (2 * np.arange(n_in) < length)
        weight = np.where(np.arange(n_in) <= length // 2, weight * (1.0 + mirrored), 0.0)
    if inverse:
        weight = weight / length
    blocks *= weight[:, None, None, None]
    matrix = blocks[:, :channels, :, :out_channels].reshape(n_in * channels, -1)
    return np.ascontiguousarray(matrix.T).astype(dtype)


def dft(data: Expr, rank: int, axis: int, n_in: int, channels: int, length: int,
        inverse: bool = False, onesided: bool = False, dtype: str = "float32") -> Expr:
    """The DFT of `data` (rank `rank`, `n_in` samples along `axis`, `channels` (1 or 2) in
    the last dim) as transposes, reshapes and one dense; dims other than the axis and the
    last may be dynamic."""
    import engine.relay as relay

    if not 0 <= axis < rank - 1:
        raise ValueError(f"the transform axis {axis} must be a signal axis (0 .. {rank - 2})")
    n_out, out_channels = dft_bins(length, inverse, onesided)
    order = [a for a in range(rank - 1) if a != axis] + [axis, rank - 1]
    moved = data if axis == rank - 2 else relay.transpose(data, axes=order)
    flat = relay.reshape(moved, newshape=[0] * (rank - 2) + [n_in * channels])
    weight = relay.const(dft_matrix(n_in, channels, length, inverse, onesided, dtype), dtype)
    out = relay.reshape(relay.nn.dense(flat, weight),
                        newshape=[0] * (rank - 2) + [n_out, out_channels])
    if axis == rank - 2:
        return out
    return relay.transpose(out, axes=[int(i) for i in np.argsort(order)])


__all__ = ["default_length", "dft", "dft_bins", "dft_matrix"]
