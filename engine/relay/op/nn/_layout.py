"""Layout strings for conv/pool ops: which axis holds N, C, H, W (or O, I, H, W)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.type import Dim, TensorType
from engine.relay.op._typing import type_str
from engine.relay.op.op import TypeRelationError


def axis_of(layout: str, letter: str, index: int, ty: TensorType) -> int:
    pos = layout.find(letter)
    if pos < 0 or len(layout) != ty.ndim:
        raise TypeRelationError(f"layout {layout!r} does not fit the tensor", arg=index,
                                expected=f"a {len(layout)}-D tensor in layout {layout}",
                                actual=type_str(ty))
    return pos


def dims(ty: TensorType, layout: str, letters: str, index: int) -> tuple[Dim, ...]:
    """The dims of `ty` named by `letters` (e.g. "NCHW") in `layout`."""
    return tuple(ty.shape[axis_of(layout, ch, index, ty)] for ch in letters)


def to_canonical(x: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    """Transpose `x` from `layout` to `canonical` (same letters, other order)."""
    if layout == canonical:
        return x
    return np.transpose(x, [layout.index(ch) for ch in canonical])


def from_canonical(x: np.ndarray, canonical: str, layout: str) -> np.ndarray:
    if layout == canonical:
        return x
    return np.transpose(x, [canonical.index(ch) for ch in layout])


def pad_tuple2d(padding: Any) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from 1, 2 or 4 values (TVM's get_pad_tuple2d)."""
    if isinstance(padding, (int, np.integer)):
        padding = (int(padding),)
    pads = tuple(int(p) for p in padding)
    if len(pads) == 1:
        return (pads[0],) * 4
    if len(pads) == 2:
        return (pads[0], pads[1], pads[0], pads[1])
    if len(pads) == 4:
        return pads
    raise ValueError(f"padding must have 1, 2 or 4 values, got {padding!r}")


def pair(value: Any) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    values = tuple(int(v) for v in value)
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def pair_or_none(value: Any) -> tuple[int, int] | None:
    return None if value is None else pair(value)


def check_positive(values: Sequence[Dim], what: str, index: int, ty: TensorType) -> None:
    for v in values:
        if isinstance(v, int) and v <= 0:
            raise TypeRelationError(f"the {what} is empty", arg=index,
                                    expected=f"a positive {what}", actual=type_str(ty))
