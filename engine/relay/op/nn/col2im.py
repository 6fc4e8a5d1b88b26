"""`nn.col2im` (ONNX Col2Im, PyTorch's `fold`): sum sliding blocks back into an image, the
inverse layout of im2col. `data` is (N, C * prod(block_shape), L), one column per block
position; the result is (N, C, *image_shape), overlapping blocks added up."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import check_arity, check_dim, check_ndim, is_any, tensor_arg
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

COL2IM_KEY = "relay.attrs.Col2ImAttrs"


def block_grid(image: Sequence[int], block: Sequence[int], dilations: Sequence[int],
               pads: Sequence[int], strides: Sequence[int]) -> list[int]:
    """How many block positions fit along each spatial axis."""
    nd = len(image)
    return [(image[i] + pads[i] + pads[i + nd] - dilations[i] * (block[i] - 1) - 1)
            // strides[i] + 1 for i in range(nd)]


def _col2im_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    check_ndim(data, 0, 3)
    image, block = list(attrs.image_shape), list(attrs.block_shape)
    size = int(np.prod(block))
    grid = block_grid(image, block, attrs.dilations, attrs.pads, attrs.strides)
    check_dim(data.shape[2], int(np.prod(grid)), 0, "dim 2 (block positions)", data)
    channels = data.shape[1]
    if not is_any(channels) and int(channels) % size:
        raise TypeRelationError(f"dim 1 must be a multiple of the block size {size}", arg=0,
                                actual=str(data.shape))
    return TensorType((data.shape[0], channels if is_any(channels) else int(channels) // size,
                       *image), data.dtype)


def col2im_values(data: np.ndarray, image: Sequence[int], block: Sequence[int],
                  dilations: Sequence[int], pads: Sequence[int],
                  strides: Sequence[int]) -> np.ndarray:
    """The numpy col2im (shared by `nn.col2im` and `dyn.nn.col2im`)."""
    nd = len(image)
    grid = block_grid(image, block, dilations, pads, strides)
    n, columns, _ = data.shape
    channels = columns // int(np.prod(block))
    cols = data.reshape(n, channels, *block, *grid)
    out = np.zeros((n, channels, *(image[i] + pads[i] + pads[i + nd] for i in range(nd))),
                   data.dtype)
    every = (slice(None), slice(None))
    for offset in itertools.product(*(range(b) for b in block)):
        window = tuple(slice(o * d, o * d + s * (g - 1) + 1, s)
                       for o, d, s, g in zip(offset, dilations, strides, grid))
        out[every + window] += cols[every + offset]
    crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(nd))
    return out[(slice(None), slice(None), *crop)]


define_op("nn.col2im", ("data",), _col2im_rel, OPAQUE,
          lambda xs, attrs: col2im_values(xs[0], attrs.image_shape, attrs.block_shape,
                                          attrs.dilations, attrs.pads, attrs.strides),
          attrs_type_key=COL2IM_KEY)


def col2im_attrs(nd: int, dilations: Sequence[int] | None, pads: Sequence[int] | None,
                 strides: Sequence[int] | None) -> dict[str, tuple[int, ...]]:
    """Defaults (1s, 0 pads) and ints for the window attrs of `nd` spatial axes."""
    def ints(values: Sequence[int] | None, count: int, default: int) -> tuple[int, ...]:
        out = tuple(int(v) for v in values) if values else (default,) * count
        if len(out) != count:
            raise ValueError(f"expected {count} values, got {list(out)}")
        return out
    return {"dilations": ints(dilations, nd, 1), "pads": ints(pads, 2 * nd, 0),
            "strides": ints(strides, nd, 1)}


def col2im(data: Expr, image_shape: Sequence[int], block_shape: Sequence[int],
           dilations: Sequence[int] | None = None, pads: Sequence[int] | None = None,
           strides: Sequence[int] | None = None) -> Call:
    """Sum the blocks of `data` (N, C * prod(block_shape), L) into (N, C, *image_shape);
    pads are ONNX's [begins..., ends...]."""
    nd = len(image_shape)
    if len(block_shape) != nd:
        raise ValueError(f"block_shape {list(block_shape)} must have {nd} dims")
    return make_call("nn.col2im", (data,), {
        "image_shape": tuple(int(v) for v in image_shape),
        "block_shape": tuple(int(v) for v in block_shape),
        **col2im_attrs(nd, dilations, pads, strides)}, COL2IM_KEY)


__all__ = ["col2im", "col2im_attrs", "col2im_values"]
