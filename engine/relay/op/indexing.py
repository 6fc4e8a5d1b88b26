"""Joining, splitting, slicing and gathering: concatenate, stack, split, strided_slice,
take, gather, gather_nd, where, one_hot (TVM's `relay.op.transform`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr, Tuple, TupleGetItem
from engine.ir.type import Dim, TensorType, TupleType, Type
from engine.relay.op._typing import (
    ANY,
    broadcast_shapes,
    check_arity,
    is_any,
    normalize_axis,
    tensor_arg,
    type_str,
)
from engine.relay.op.op import INJECTIVE, TypeRelationError, define_op, make_call


class TupleWrapper:
    """A multi-output call seen as a tuple: `[i]` is a TupleGetItem (TVM's TupleWrapper)."""

    def __init__(self, tuple_value: Expr, size: int) -> None:
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self) -> Expr:
        return self.tuple_value

    def astext(self) -> str:
        return self.tuple_value.astext()

    def __getitem__(self, index: int) -> TupleGetItem:
        if not -self.size <= index < self.size:
            raise IndexError(f"tuple index {index} out of range for {self.size} outputs")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[TupleGetItem]:
        return (self[i] for i in range(self.size))


def tuple_arg(arg_types: Sequence[Type], index: int = 0) -> list[TensorType]:
    ty = arg_types[index] if index < len(arg_types) else None
    if not isinstance(ty, TupleType) or not ty.fields:
        raise TypeRelationError("must be a non-empty tuple of tensors", arg=index,
                                expected="a tuple of tensors", actual=type_str(ty))
    return [tensor_arg(ty.fields, i) for i in range(len(ty.fields))]


def _as_tuple(data: Any) -> Expr:
    if isinstance(data, TupleWrapper):
        return data.astuple()
    if isinstance(data, Expr):
        return data
    return Tuple(tuple(data))


# --- concatenate / stack -------------------------------------------------------------------
def _concat_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    fields = tuple_arg(arg_types)
    first = fields[0]
    axis = normalize_axis(int(attrs.axis), first.ndim, 0, first)
    total: Dim = 0
    for f in fields:
        if f.ndim != first.ndim or f.dtype != first.dtype:
            raise TypeRelationError("tuple fields differ in rank or dtype", arg=0,
                                    expected=type_str(first), actual=type_str(f))
        for i, (a, b) in enumerate(zip(f.shape, first.shape)):
            if i != axis and not (is_any(a) or is_any(b) or a == b):
                raise TypeRelationError(f"tuple fields differ on axis {i}", arg=0,
                                        expected=type_str(first), actual=type_str(f))
        size = f.shape[axis]
        total = total + size if isinstance(total, int) and isinstance(size, int) else ANY
    shape = list(first.shape)
    shape[axis] = total
    return TensorType(shape, first.dtype)


define_op("concatenate", ("data",), _concat_rel, INJECTIVE,
          lambda xs, attrs: np.concatenate(xs[0], axis=int(attrs.axis)),
          attrs_type_key="relay.attrs.ConcatenateAttrs")


def concatenate(data: Any, axis: int) -> Call:
    return make_call("concatenate", (_as_tuple(data),), {"axis": int(axis)},
                     "relay.attrs.ConcatenateAttrs")


def _stack_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    fields = tuple_arg(arg_types)
    first = fields[0]
    for f in fields:
        if f.shape != first.shape or f.dtype != first.dtype:
            raise TypeRelationError("tuple fields differ", arg=0, expected=type_str(first),
                                    actual=type_str(f))
    axis = int(attrs.axis)
    pos = normalize_axis(axis, first.ndim + 1, 0, first)
    shape = list(first.shape)
    shape.insert(pos, len(fields))
    return TensorType(shape, first.dtype)


define_op("stack", ("data",), _stack_rel, INJECTIVE,
          lambda xs, attrs: np.stack(tuple(xs[0]), axis=int(attrs.axis)),
          attrs_type_key="relay.attrs.StackAttrs")


def stack(data: Any, axis: int) -> Call:
    return make_call("stack", (_as_tuple(data),), {"axis": int(axis)}, "relay.attrs.StackAttrs")


# --- split ---------------------------------------------------------------------------------
def _split_points(size: Dim, sections: Any, ty: Type | None = None) -> list[int] | None:
    if isinstance(sections, int):
        if is_any(size):
            return None
        if int(size) % sections:
            raise TypeRelationError(f"cannot split an axis of size {size} in {sections}", arg=0,
                                    expected=f"an axis size divisible by {sections}",
                                    actual=type_str(ty))
        step = int(size) // sections
        return [step * i for i in range(1, sections)]
    return [int(i) for i in sections]


def _split_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    axis = normalize_axis(int(attrs.axis), data.ndim, 0, data)
    size = data.shape[axis]
    points = _split_points(size, attrs.indices_or_sections, data)
    if points is None:
        count = int(attrs.indices_or_sections)
        sizes: list[Dim] = [ANY] * count
    else:
        bounds = [0, *points, size]
        sizes = [b - a if isinstance(a, int) and isinstance(b, int) else ANY
                 for a, b in zip(bounds, bounds[1:])]
    fields = []
    for s in sizes:
        shape = list(data.shape)
        shape[axis] = s
        fields.append(TensorType(shape, data.dtype))
    return TupleType(fields)


def _split_compute(xs: list[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    x = xs[0]
    axis = int(attrs.axis)
    points = _split_points(x.shape[axis], attrs.indices_or_sections)
    assert points is not None
    return tuple(np.split(x, points, axis=axis))


define_op("split", ("data",), _split_rel, INJECTIVE, _split_compute,
          attrs_type_key="relay.attrs.SplitAttrs")


def split(data: Expr, indices_or_sections: Any, axis: int = 0) -> TupleWrapper:
    if isinstance(indices_or_sections, (int, np.integer)):
        sections: Any = int(indices_or_sections)
        count = sections
    else:
        sections = tuple(int(i) for i in indices_or_sections)
        count = len(sections) + 1
    call = make_call("split", (data,), {"indices_or_sections": sections, "axis": int(axis)},
                     "relay.attrs.SplitAttrs")
    return TupleWrapper(call, count)


# --- strided_slice -------------------------------------------------------------------------
def slices_for(shape: Sequence[Dim], attrs: Attrs) -> list[slice | None]:
    """One slice per axis (None where the dim is unknown)."""
    ndim = len(shape)
    begin, end = list(attrs.begin), list(attrs.end)
    strides = list(attrs.get("strides") or [1])
    axes = attrs.get("axes")
    axes = list(range(len(begin))) if axes is None else [a % ndim for a in axes]
    out: list[slice | None] = [slice(None)] * ndim
    size_mode = attrs.get("slice_mode", "end") == "size"
    for j, axis in enumerate(axes):
        stride = int(strides[j] if j < len(strides) else strides[-1])
        b = int(begin[j])
        e = int(end[j]) if j < len(end) else None
        if size_mode:
            stride = 1
            e = None if e is None or e < 0 else b + e if b >= 0 else b + e or None
        if is_any(shape[axis]):
            out[axis] = None
            continue
        out[axis] = slice(b, e, stride)
    return out


def _strided_slice_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    if len(attrs.begin) > data.ndim and attrs.get("axes") is None:
        raise TypeRelationError("begin has more entries than the data has axes", arg=0,
                                expected=f"at most {data.ndim} entries", actual=type_str(data))
    shape: list[Dim] = []
    for dim, sl in zip(data.shape, slices_for(data.shape, attrs)):
        shape.append(len(range(*sl.indices(dim))) if sl is not None and isinstance(dim, int)
                     else ANY)
    return TensorType(shape, data.dtype)


def _strided_slice_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    return x[tuple(slices_for(x.shape, attrs))]


define_op("strided_slice", ("data",), _strided_slice_rel, INJECTIVE, _strided_slice_compute,
          attrs_type_key="relay.attrs.StridedSliceAttrs")


def strided_slice(data: Expr, begin: Any, end: Any, strides: Any = None, axes: Any = None,
                  slice_mode: str = "end") -> Call:
    def ints(v: Any) -> Any:
        return None if v is None else tuple(int(i) for i in v)
    return make_call("strided_slice", (data,), {
        "begin": ints(begin), "end": ints(end), "strides": ints(strides),
        "axes": ints(axes), "slice_mode": slice_mode}, "relay.attrs.StridedSliceAttrs")


# --- take / gather / gather_nd -------------------------------------------------------------
def _take_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, indices = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    if indices.dtype[:3] not in ("int", "uin"):
        raise TypeRelationError("indices must be integers", arg=1, expected="an integer tensor",
                                actual=type_str(indices))
    if attrs.get("axis") is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(int(attrs.axis), data.ndim, 0, data)
    batch = int(attrs.get("batch_dims", 0) or 0)
    shape = [*data.shape[:axis], *indices.shape[batch:], *data.shape[axis + 1:]]
    return TensorType(shape, data.dtype)


def _take_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, indices = xs
    mode = attrs.get("mode", "clip")
    axis = attrs.get("axis")
    batch = int(attrs.get("batch_dims", 0) or 0)
    if mode == "fast":
        mode = "raise"
    if batch == 0:
        return np.take(data, indices, axis=axis, mode=mode)
    return _batched_take(data, indices, int(attrs.axis) % data.ndim, batch, mode)


def _batched_take(data: np.ndarray, indices: np.ndarray, axis: int, batch: int,
                  mode: Any) -> np.ndarray:
    lead = data.shape[:batch]
    flat_d = data.reshape((-1, *data.shape[batch:]))
    flat_i = indices.reshape((-1, *indices.shape[batch:]))
    parts = [np.take(d, i, axis=axis - batch, mode=mode) for d, i in zip(flat_d, flat_i)]
    out = np.stack(parts)
    return out.reshape((*lead, *out.shape[1:]))


define_op("take", ("data", "indices"), _take_rel, INJECTIVE, _take_compute,
          attrs_type_key="relay.attrs.TakeAttrs")


def take(data: Expr, indices: Expr, axis: int | None = None, batch_dims: int = 0,
         mode: str = "clip") -> Call:
    return make_call("take", (data, indices), {
        "batch_dims": int(batch_dims), "axis": None if axis is None else int(axis),
        "mode": mode}, "relay.attrs.TakeAttrs")


def _gather_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, indices = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    normalize_axis(int(attrs.axis), data.ndim, 0, data)
    if indices.ndim != data.ndim:
        raise TypeRelationError("indices must have the rank of data", arg=1,
                                expected=f"a {data.ndim}-D tensor", actual=type_str(indices))
    return TensorType(indices.shape, data.dtype)


def _gather_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    """out[..., i, ...] = data[..., indices[..., i, ...], ...]; off the axis, indices may be
    shorter than data (only the leading part of data is read)."""
    data, indices = xs
    axis = int(attrs.axis) % data.ndim
    lead = tuple(slice(None) if a == axis else slice(0, n) for a, n in enumerate(indices.shape))
    return np.take_along_axis(data[lead], indices.astype(np.int64), axis=axis)


define_op("gather", ("data", "indices"), _gather_rel, INJECTIVE, _gather_compute,
          attrs_type_key="relay.attrs.GatherAttrs")


def gather(data: Expr, axis: int, indices: Expr) -> Call:
    return make_call("gather", (data, indices), {"axis": int(axis)}, "relay.attrs.GatherAttrs")


def _gather_nd_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, indices = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    m = indices.shape[0]
    if is_any(m):
        raise TypeRelationError("the leading dim of indices must be static", arg=1,
                                expected="a static first dimension", actual=type_str(indices))
    batch = int(attrs.get("batch_dims", 0) or 0)
    shape = [*indices.shape[1:], *data.shape[batch + int(m):]]
    return TensorType(shape, data.dtype)


def _gather_nd_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, indices = xs
    index = indices.astype(np.int64)
    batch = int(attrs.get("batch_dims", 0) or 0)
    # batch axis b of data is indexed by the position along axis b of the index grid
    grid = index.shape[1:]
    batch_index = tuple(
        np.arange(grid[b]).reshape((-1,) + (1,) * (len(grid) - b - 1)) for b in range(batch))
    return data[batch_index + tuple(index)]


define_op("gather_nd", ("data", "indices"), _gather_nd_rel, INJECTIVE, _gather_nd_compute,
          attrs_type_key="relay.attrs.GatherNDAttrs")


def gather_nd(data: Expr, indices: Expr, batch_dims: int = 0, index_rank: int | None = None
              ) -> Call:
    return make_call("gather_nd", (data, indices), {"batch_dims": int(batch_dims),
                                                    "index_rank": index_rank},
                     "relay.attrs.GatherNDAttrs")


# --- where / one_hot ---------------------------------------------------------------------
def _where_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    cond, x, y = (tensor_arg(arg_types, i) for i in range(3))
    if x.dtype != y.dtype:
        raise TypeRelationError("x and y must have the same dtype", arg=2,
                                expected=f"dtype {x.dtype}", actual=type_str(y))
    shape = broadcast_shapes(x.shape, y.shape, [x, y])
    shape = broadcast_shapes(cond.shape, shape, [cond, TensorType(shape, x.dtype)])
    return TensorType(shape, x.dtype)


define_op("where", ("condition", "x", "y"), _where_rel, 1,
          lambda xs, attrs: np.where(xs[0].astype(bool), xs[1], xs[2]))


def where(condition: Expr, x: Expr, y: Expr) -> Call:
    return make_call("where", (condition, x, y))


def _one_hot_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 3)
    indices = tensor_arg(arg_types, 0)
    axis = int(attrs.axis)
    pos = indices.ndim if axis == -1 else normalize_axis(axis, indices.ndim + 1, 0, indices)
    shape = list(indices.shape)
    shape.insert(pos, int(attrs.depth))
    return TensorType(shape, attrs.dtype)


def _one_hot_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    indices, on, off = xs
    depth = int(attrs.depth)
    hot = indices[..., None] == np.arange(depth)
    out = np.where(hot, on, off).astype(attrs.dtype)
    axis = int(attrs.axis)
    return out if axis == -1 else np.moveaxis(out, -1, axis)


define_op("one_hot", ("indices", "on_value", "off_value"), _one_hot_rel, INJECTIVE,
          _one_hot_compute, attrs_type_key="relay.attrs.OneHotAttrs")


def one_hot(indices: Expr, on_value: Expr, off_value: Expr, depth: int, axis: int,
            dtype: str) -> Call:
    return make_call("one_hot", (indices, on_value, off_value),
                     {"depth": int(depth), "axis": int(axis), "dtype": dtype},
                     "relay.attrs.OneHotAttrs")


__all__ = ["TupleWrapper", "concatenate", "gather", "gather_nd", "one_hot", "split", "stack",
           "strided_slice", "take", "where"]
