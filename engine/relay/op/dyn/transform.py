"""Dynamic data movement: `dyn.reshape`, `dyn.squeeze`, `dyn.expand_dims`, `dyn.broadcast_to`,
`dyn.tile`, `dyn.strided_slice`. The shape-like operand is a 1-D tensor whose static length
fixes the output rank; which sizes the dims get is known only at run time (`?`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import AnyDim, TensorType, Type
from engine.relay.op._typing import check_arity, tensor_arg
from engine.relay.op.dyn._common import int_values, static_length
from engine.relay.op.op import OPAQUE, TypeRelationError, define_op, make_call

ANY = AnyDim()


def _unknown(rank: int, dtype: str) -> TensorType:
    return TensorType((ANY,) * rank, dtype)


# --- reshape ------------------------------------------------------------------------------
def onnx_newshape(in_shape: Sequence[int], target: Sequence[int], allowzero: bool) -> list[int]:
    """`target` with 0 (copy the input dim, unless `allowzero`) and -1 (the rest) resolved."""
    out = [in_shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(target)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        out[out.index(-1)] = int(np.prod(in_shape)) // known if known else 0
    return out


def _reshape_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    return _unknown(static_length(arg_types, 1, "newshape"), data.dtype)


def _reshape_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, newshape = xs
    return data.reshape(onnx_newshape(data.shape, int_values(newshape),
                                      bool(attrs.get("allowzero", 0))))


define_op("dyn.reshape", ("data", "newshape"), _reshape_rel, OPAQUE, _reshape_compute,
          attrs_type_key="relay.attrs.ReshapeAttrs")


def reshape(data: Expr, newshape: Expr, allowzero: bool = False) -> Call:
    """Reshape to the run-time shape `newshape` (0 copies the input dim unless `allowzero`;
    one -1 takes the rest)."""
    return make_call("dyn.reshape", (data, newshape), {"allowzero": int(allowzero)},
                     "relay.attrs.ReshapeAttrs")


# --- squeeze / expand_dims ----------------------------------------------------------------
def _squeeze_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    count = static_length(arg_types, 1, "axes")
    if count > data.ndim:
        raise TypeRelationError(f"{count} axes for a {data.ndim}-D tensor", arg=1)
    return _unknown(data.ndim - count, data.dtype)


def _squeeze_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, axes = xs
    return np.squeeze(data, axis=tuple(a % data.ndim for a in int_values(axes)))


define_op("dyn.squeeze", ("data", "axes"), _squeeze_rel, OPAQUE, _squeeze_compute,
          attrs_type_key="relay.attrs.SqueezeAttrs")


def squeeze(data: Expr, axes: Expr) -> Call:
    """Remove the size-1 dims listed in the run-time tensor `axes`."""
    return make_call("dyn.squeeze", (data, axes), {}, "relay.attrs.SqueezeAttrs")


def _expand_dims_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    return _unknown(data.ndim + static_length(arg_types, 1, "axes"), data.dtype)


def _expand_dims_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, axes = xs
    values = int_values(axes)
    rank = data.ndim + len(values)
    return np.expand_dims(data, axis=tuple(sorted(a % rank for a in values)))


define_op("dyn.expand_dims", ("data", "axes"), _expand_dims_rel, OPAQUE, _expand_dims_compute,
          attrs_type_key="relay.attrs.ExpandDimsAttrs")


def expand_dims(data: Expr, axes: Expr) -> Call:
    """Insert a size-1 dim at each position of the run-time tensor `axes`; the positions
    index the output (ONNX Unsqueeze's rule; one axis is TVM's `dyn.expand_dims`)."""
    return make_call("dyn.expand_dims", (data, axes), {}, "relay.attrs.ExpandDimsAttrs")


# --- broadcast_to / tile ------------------------------------------------------------------
def _broadcast_to_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    rank = static_length(arg_types, 1, "shape")
    if rank < data.ndim:
        raise TypeRelationError(f"cannot broadcast a {data.ndim}-D tensor to {rank} dims",
                                arg=1)
    return _unknown(rank, data.dtype)


def _broadcast_to_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, shape = xs
    return np.broadcast_to(data, int_values(shape)).copy()


define_op("dyn.broadcast_to", ("data", "shape"), _broadcast_to_rel, OPAQUE,
          _broadcast_to_compute, attrs_type_key="relay.attrs.InitOpAttrs")


def broadcast_to(data: Expr, shape: Expr) -> Call:
    """Broadcast to the run-time shape `shape` (numpy's rule, as TVM's `dyn.broadcast_to`)."""
    return make_call("dyn.broadcast_to", (data, shape), {}, "relay.attrs.InitOpAttrs")


def _tile_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data = tensor_arg(arg_types, 0)
    return _unknown(max(data.ndim, static_length(arg_types, 1, "reps")), data.dtype)


def _tile_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, reps = xs
    return np.tile(data, int_values(reps))


define_op("dyn.tile", ("data", "reps"), _tile_rel, OPAQUE, _tile_compute,
          attrs_type_key="relay.attrs.TileAttrs")


def tile(data: Expr, reps: Expr) -> Call:
    """Repeat `data` `reps[i]` times along axis i (`reps` known at run time)."""
    return make_call("dyn.tile", (data, reps), {}, "relay.attrs.TileAttrs")


# --- strided_slice ------------------------------------------------------------------------
def _strided_slice_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) not in (4, 5):
        raise TypeRelationError(f"expects 4 or 5 arguments, got {len(arg_types)}")
    data = tensor_arg(arg_types, 0)
    counts = {static_length(arg_types, i, name)
              for i, name in enumerate(("begin", "end", "strides", "axes")[:len(arg_types) - 1],
                                       start=1)}
    if len(counts) > 1 or max(counts) > data.ndim:
        raise TypeRelationError(f"begin, end, strides (and axes) need one length, at most "
                                f"{data.ndim}", actual=str(sorted(counts)))
    return _unknown(data.ndim, data.dtype)


def slices(ndim: int, begin: Sequence[int], end: Sequence[int], strides: Sequence[int],
           axes: Sequence[int] | None) -> tuple[slice, ...]:
    """Python slices per axis (so begin/end clamp as numpy, ONNX Slice and TVM do)."""
    out = [slice(None)] * ndim
    for j, axis in enumerate(range(len(begin)) if axes is None else axes):
        out[axis % ndim] = slice(begin[j], end[j], strides[j])
    return tuple(out)


def _strided_slice_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, *bounds = xs
    begin, end, strides = (int_values(b) for b in bounds[:3])
    axes = int_values(bounds[3]) if len(bounds) > 3 else None
    return data[slices(data.ndim, begin, end, strides, axes)]


define_op("dyn.strided_slice", ("data", "begin", "end", "strides", "axes"),
          _strided_slice_rel, OPAQUE, _strided_slice_compute, num_inputs=-1,
          attrs_type_key="relay.attrs.StridedSliceAttrs")


def strided_slice(data: Expr, begin: Expr, end: Expr, strides: Expr,
                  axes: Expr | None = None) -> Call:
    """`data[begin:end:strides]` with bounds known at run time; with `axes` they index those
    axes only (as ONNX Slice's), else the leading ones."""
    args: tuple[Any, ...] = (data, begin, end, strides) + (() if axes is None else (axes,))
    return make_call("dyn.strided_slice", args, {"slice_mode": "end"},
                     "relay.attrs.StridedSliceAttrs")


__all__ = ["broadcast_to", "expand_dims", "reshape", "squeeze", "strided_slice", "tile"]
