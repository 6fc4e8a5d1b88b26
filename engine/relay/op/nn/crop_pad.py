"""`crop_pad`: ONNX-style signed pad widths (negative crops) on a tensor of static shape, as
a strided_slice for the crops followed by nn.pad for the rest (what dyn.nn.pad becomes once
its widths are constants, and how CenterCropPad with a known shape is built)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.expr import Expr
from engine.relay.op.indexing import strided_slice
from engine.relay.op.nn.spatial import pad


def crop_pad(data: Expr, shape: Sequence[int] | None, widths: np.ndarray, pad_value: Expr | float,
             mode: str = "constant") -> Expr:
    """`data` with (rank, 2) before/after `widths` applied: negative widths crop (this needs
    the static `shape`), positive ones pad with `pad_value` (or by `mode`)."""
    widths = np.asarray(widths, dtype=np.int64).reshape(-1, 2)
    crop = np.minimum(widths, 0)
    out = data
    if crop.any():
        if shape is None:
            raise ValueError("cropping needs the static shape of the data")
        out = strided_slice(out, [int(-b) for b, _ in crop],
                            [int(d + a) for d, (_, a) in zip(shape, crop)])
    grow = np.maximum(widths, 0)
    if not grow.any():
        return out
    return pad(out, [(int(b), int(a)) for b, a in grow], pad_value, mode)


__all__ = ["crop_pad"]
