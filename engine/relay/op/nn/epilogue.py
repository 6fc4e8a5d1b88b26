"""A per-channel affine map, then an optional clamp, applied to an op's output.

This is inference batch_norm (`x * scale + shift` along one axis), or the add of a
per-channel constant that FoldScaleAxis leaves of one, and the clip or relu after it.
batch_norm applies it to its input; the interpreter also fuses it into the op that
produces the data (`FNumpyEpilogue`, e.g. nn.conv2d), which applies it while its output
is still in cache, or inside its own loops (compiled depthwise conv2d). This module
registers add's side of that (`FChannelAffineFusable`, `FNumpyChannelAffine`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.ir.expr import Call, Constant
from engine.ir.op import register_op_attr
from engine.ir.type import TensorType
from engine.relay.op import binary  # noqa: F401  (registers add, which gets its map hooks here)
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


def _channel_axis(shape: tuple[int, ...]) -> int | None:
    """The axis (counted from the end) of the one dimension of `shape` that is not 1."""
    axes = [k - len(shape) for k, size in enumerate(shape) if size != 1]
    return axes[0] if len(axes) == 1 else None


def _add_fusable(call: Call, data_index: int, via_field0: bool) -> bool:
    """add(data, constant) is a map of the data when the constant is a vector along one
    axis of it, of the data's dtype (so the sum has the data's shape and dtype)."""
    data, const = call.args[data_index], call.args[1 - data_index]
    if via_field0 or not isinstance(const, Constant) or not data.has_type:
        return False
    data_type = data.checked_type
    axis = _channel_axis(const.data.shape)
    if not isinstance(data_type, TensorType) or axis is None \
            or const.data.ndim > len(data_type.shape) or const.data.dtype != data_type.dtype:
        return False
    size = data_type.shape[axis]
    return isinstance(size, int) and size == const.data.shape[axis]


def _add_affine(params: list[np.ndarray], attrs: object) -> ChannelAffine:
    (const,) = params
    axis = _channel_axis(const.shape)
    assert axis is not None  # _add_fusable checked it
    shift = const.reshape(-1)
    return ChannelAffine(np.ones_like(shift), shift, axis)


register_op_attr("add", "FChannelAffineFusable", _add_fusable)
register_op_attr("add", "FNumpyChannelAffine", _add_affine)

__all__ = ["NO_CLAMP", "ChannelAffine"]
