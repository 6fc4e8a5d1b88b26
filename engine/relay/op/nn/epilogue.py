"""A per-channel affine map, then an optional clamp, applied to an op's output.

This is inference batch_norm (`x * scale + shift` along one axis) and the clip or relu
after it. batch_norm applies it to its input; the interpreter also fuses it into the op
that produces batch_norm's input (`FNumpyEpilogue`, e.g. nn.conv2d), which applies it
while its output is still in cache, or inside its own loops (compiled depthwise conv2d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.relay.op.nn import compiled_kernels

NO_CLAMP = (-math.inf, math.inf)


@dataclass(frozen=True)
class ChannelAffine:
    """`clip(x * scale + shift, *bounds)`, `scale` and `shift` vectors along `axis`."""

    scale: np.ndarray
    shift: np.ndarray
    axis: int
    bounds: tuple[float, float] = NO_CLAMP

    def apply(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The map of `x` written into `out` (which may be `x`): one compiled pass where
        `compiled_kernels` covers it, else a multiply, an add and (if clamped) a clip."""
        if compiled_kernels.channel_affine(x, self.scale, self.shift, self.axis, out,
                                           self.bounds):
            return out
        shape = [1] * x.ndim
        shape[self.axis] = -1
        np.multiply(x, self.scale.reshape(shape).astype(x.dtype, copy=False), out=out)
        out += self.shift.reshape(shape).astype(x.dtype, copy=False)
        if self.bounds == NO_CLAMP:
            return out
        if out.dtype.kind == "f":
            return np.clip(out, *self.bounds, out=out)
        out[...] = np.clip(out, *self.bounds)  # integers: clipped, then cast back, as clip does
        return out

    def clamped(self, bounds: tuple[float, float] | None) -> ChannelAffine:
        """This map followed by the clamp `bounds` (None: no clamp)."""
        return self if bounds is None else ChannelAffine(self.scale, self.shift, self.axis,
                                                         bounds)


__all__ = ["NO_CLAMP", "ChannelAffine"]
