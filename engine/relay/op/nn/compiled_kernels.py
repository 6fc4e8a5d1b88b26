"""Compiled loops for the interpreter's depthwise convolutions and batch_norm, when numba is
installed.

numpy runs a depthwise convolution as one multiply and one add over the whole tensor per
kernel tap (conv.py `_depthwise`), which leaves it two to three times slower than a dense
convolution of the same size (BLAS). These loops (`_jit_loops`) read each input
element once per output row and keep the sum in registers; their results match the numpy
path to float rounding (the same products, summed in another order). `channel_affine`
applies inference batch_norm (`x * scale + shift` per channel, and the clip or relu the
interpreter fuses after it) in one pass instead of two or three.

They run only where they cover the call: float32 or float64 data and kernel of one dtype,
padding >= 0, and (for the channels-last loop) one output channel per input channel;
`depthwise_conv2d` returns None for anything else and numpy runs instead. Without numba,
or with `ENGINE_COMPILED_KERNELS=0` in the environment, numpy runs every call.

Compile cost: numba compiles a loop the first time it runs on a machine (22 s for all
of them, both dtypes, on 2 busy cores) and keeps the machine code in its cache (next to
this file, or numba's user cache directory); later processes load them in about 0.4 s.
`make setup` runs `warm_up` so a user's first model does not pay the compile.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Sequence
from types import ModuleType

import numpy as np

ENV = "ENGINE_COMPILED_KERNELS"
_DTYPES = (np.dtype("float32"), np.dtype("float64"))
_ROWS_MIN_WIDTH = 28
"""Output rows at least this wide run the row loop; narrower ones vectorize better along
the channels (measured on MobileNetV2's layers: 7x7 to 112x112 planes, 32 to 960 channels)."""


def enabled() -> bool:
    """Whether compiled loops may run: not turned off in the environment, numba importable."""
    return os.environ.get(ENV, "1") != "0" and _loops() is not None


@functools.cache
def _loops() -> ModuleType | None:
    try:
        from engine.relay.op.nn import _jit_loops
    except ImportError:  # numba is not installed (or not for this numpy): numpy runs
        return None
    return _jit_loops


def status() -> str:
    """One line for benchmarks and logs: which depthwise implementation runs."""
    if os.environ.get(ENV, "1") == "0":
        return f"numpy (compiled kernels off: {ENV}=0)"
    if _loops() is None:
        return "numpy (numba not installed)"
    import numba

    return f"compiled (numba {numba.__version__})"


def _writable(x: np.ndarray) -> np.ndarray:
    """`x` C-contiguous and writable: numba compiles a loop again for read-only arrays (a
    constant's), which `warm_up` does not cover."""
    return x if x.flags.c_contiguous and x.flags.writeable else np.array(x, order="C")


def _vector(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A per-channel vector as the loops take it: contiguous, writable, in `dtype`."""
    return _writable(np.asarray(v, dtype).reshape(-1))


def depthwise_conv2d(x: np.ndarray, w: np.ndarray, padding: Sequence[int],
                     strides: Sequence[int], dilation: Sequence[int], oh: int, ow: int,
                     epilogue: tuple[np.ndarray, np.ndarray, float, float] | None = None
                     ) -> np.ndarray | None:
    """Depthwise conv of NCHW `x` with an (O, 1, KH, KW) kernel, O = C x multiplier, into a
    new NCHW array, each output channel then mapped by `epilogue` (scale and shift vectors
    of O, clamp bounds) when given; None when no compiled loop covers the call."""
    loops = _loops() if os.environ.get(ENV, "1") != "0" else None
    if loops is None or x.dtype not in _DTYPES or w.dtype != x.dtype or min(padding) < 0:
        return None
    n, c = x.shape[:2]
    o, _, kh, kw = w.shape
    strides, dilation = tuple(strides), tuple(dilation)
    x = _writable(x)
    out = np.empty((n, o, oh, ow), x.dtype)
    top, left = int(padding[0]), int(padding[1])
    scale, shift, lo, hi = epilogue or (np.ones(o), np.zeros(o), -math.inf, math.inf)
    tail = (_vector(scale, x.dtype), _vector(shift, x.dtype), x.dtype.type(lo),
            x.dtype.type(hi))
    if (kh, kw) == (3, 3) and dilation == (1, 1) and strides in ((1, 1), (2, 2)) \
            and ow >= _ROWS_MIN_WIDTH:
        loops.depthwise_rows3x3(x, np.array(w.reshape(o, 9), order="C"), out,
                                int(strides[0]), top, left, *tail)
    elif o == c:
        kernel = np.ascontiguousarray(w.reshape(c, kh, kw).transpose(1, 2, 0))
        loops.depthwise_channels_last(x, kernel, out, int(strides[0]), int(strides[1]),
                                      int(dilation[0]), int(dilation[1]), top, left, *tail)
    else:
        return None
    return out


def channel_affine(x: np.ndarray, scale: np.ndarray, shift: np.ndarray, axis: int,
                   out: np.ndarray, bounds: tuple[float, float] = (-math.inf, math.inf)
                   ) -> bool:
    """`out = clip(x * scale + shift, *bounds)` with `scale`, `shift` vectors along `axis`
    of `x` (`out` may be `x`); False, writing nothing, when no compiled loop covers it."""
    loops = _loops() if os.environ.get(ENV, "1") != "0" else None
    if loops is None or x.dtype not in _DTYPES or out.dtype != x.dtype \
            or not (x.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable):
        return False
    x = _writable(x)
    axis %= x.ndim
    shape = (math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:]))
    loops.channel_affine(x.reshape(shape), _vector(scale, x.dtype), _vector(shift, x.dtype),
                         x.dtype.type(bounds[0]),
                         x.dtype.type(bounds[1]),
                         out.reshape(shape))
    return True


def warm_up() -> float:
    """Compile (or load from numba's cache) every loop for float32 and float64; seconds."""
    start = time.perf_counter()
    if not enabled():
        return 0.0
    size = 2 * _ROWS_MIN_WIDTH  # wide enough for the row loop at stride 2
    for dtype in _DTYPES:
        w = np.ones((2, 1, 3, 3), dtype)
        for plane, stride in ((size, 1), (size, 2), (5, 1)):
            x = np.ones((1, 2, plane, plane), dtype)
            out = (plane - 1) // stride + 1  # 3x3, padding 1
            depthwise_conv2d(x, w, (1, 1, 1, 1), (stride, stride), (1, 1), out, out)
        channel_affine(w, np.ones(2, dtype), np.zeros(2, dtype), 0, w)
    return time.perf_counter() - start

