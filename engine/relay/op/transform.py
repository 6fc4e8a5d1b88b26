"""Shape-changing injective ops: reshape, transpose, squeeze, expand_dims, tile, ...
(TVM's `relay.op.transform`; slicing and gathering live in `indexing.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import Dim, TensorType, Type
from engine.relay.op._typing import (
    ANY,
    check_arity,
    is_any,
    normalize_axes,
    normalize_axis,
    product,
    shape_str,
    tensor_arg,
    type_str,
)
from engine.relay.op.op import BROADCAST, INJECTIVE, OPAQUE, TypeRelationError, define_op, make_call


# --- reshape ---------------------------------------------------------------------------
def infer_newshape(src: Sequence[Dim], newshape: Sequence[int], ty: Type | None = None
                   ) -> tuple[Dim, ...]:
    """TVM's reshape rule: 0 copies, -1 infers, -2 copies the rest, -3 merges two,
    -4 splits one into the next two values."""
    out: list[Dim] = []
    infer_at = -1
    i = 0  # position in src
    k = 0
    spec = list(newshape)
    while k < len(spec):
        v = int(spec[k])
        if v > 0:
            out.append(v)
            i += 1
        elif v == 0:
            out.append(_src_dim(src, i, ty))
            i += 1
        elif v == -1:
            if infer_at >= 0:
                raise TypeRelationError("newshape has more than one -1", arg=0,
                                        expected="at most one -1", actual=str(tuple(spec)))
            infer_at = len(out)
            out.append(1)
            i += 1
        elif v == -2:
            out.extend(src[i:])
            i = len(src)
        elif v == -3:
            out.append(product([_src_dim(src, i, ty), _src_dim(src, i + 1, ty)]))
            i += 2
        elif v == -4:
            whole = _src_dim(src, i, ty)
            a, b = int(spec[k + 1]), int(spec[k + 2])
            if a == -1:
                a = ANY if is_any(whole) else int(whole) // b  # type: ignore[assignment]
            if b == -1:
                b = ANY if is_any(whole) else int(whole) // a  # type: ignore[assignment]
            out.extend([a, b])
            i += 1
            k += 2
        else:
            raise TypeRelationError(f"invalid newshape value {v}", arg=0,
                                    expected="a positive dim, 0, -1, -2, -3 or -4",
                                    actual=str(tuple(spec)))
        k += 1
    if infer_at >= 0:
        out[infer_at] = _inferred(src, out, infer_at, ty)
    _check_size(src, out, ty)
    return tuple(out)


def _src_dim(src: Sequence[Dim], i: int, ty: Type | None) -> Dim:
    if i >= len(src):
        raise TypeRelationError("newshape refers to a dimension the input does not have",
                                arg=0, expected=f"at most {len(src)} source dims",
                                actual=type_str(ty) if ty is not None else shape_str(src))
    return src[i]


def _inferred(src: Sequence[Dim], out: list[Dim], at: int, ty: Type | None) -> Dim:
    total = product(src)
    known = product([d for j, d in enumerate(out) if j != at])
    if is_any(total) or is_any(known):
        return ANY
    if known == 0 or int(total) % int(known):
        raise TypeRelationError("cannot infer the -1 dimension of newshape", arg=0,
                                expected=f"a shape with {total} elements",
                                actual=type_str(ty) if ty is not None else shape_str(src))
    return int(total) // int(known)


def _check_size(src: Sequence[Dim], out: Sequence[Dim], ty: Type | None) -> None:
    a, b = product(src), product(out)
    if not is_any(a) and not is_any(b) and a != b:
        raise TypeRelationError(f"cannot reshape to {shape_str(out)}", arg=0,
                                expected=f"a shape with {a} elements",
                                actual=type_str(ty) if ty is not None else shape_str(src))


def _target_shape(shape: Sequence[Dim], attrs: Attrs, reverse: bool,
                  ty: TensorType | None = None) -> list[Dim]:
    """`newshape` applied to `shape`; contrib_reverse_reshape reads both from the right."""
    if reverse:
        return list(infer_newshape(shape[::-1], attrs.newshape[::-1], ty)[::-1])
    return list(infer_newshape(shape, attrs.newshape, ty))


def _reshape_rel_of(reverse: bool) -> Any:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        check_arity(arg_types, 1)
        data = tensor_arg(arg_types, 0)
        return TensorType(_target_shape(data.shape, attrs, reverse, data), data.dtype)
    return rel


def _reshape_compute_of(reverse: bool) -> Any:
    def compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
        return xs[0].reshape(_target_shape(xs[0].shape, attrs, reverse))  # type: ignore[arg-type]
    return compute


define_op("reshape", ("data",), _reshape_rel_of(False), INJECTIVE, _reshape_compute_of(False),
          attrs_type_key="relay.attrs.ReshapeAttrs")
define_op("contrib_reverse_reshape", ("data",), _reshape_rel_of(True), INJECTIVE,
          _reshape_compute_of(True), attrs_type_key="relay.attrs.ReshapeAttrs")


def _ints(values: Any) -> tuple[int, ...]:
    if isinstance(values, (int, np.integer)):
        return (int(values),)
    return tuple(int(v) for v in values)


def reshape(data: Expr, newshape: Any) -> Call:
    return make_call("reshape", (data,), {"newshape": _ints(newshape), "allowzero": 0},
                     "relay.attrs.ReshapeAttrs")


def reverse_reshape(data: Expr, newshape: Any) -> Call:
    return make_call("contrib_reverse_reshape", (data,),
                     {"newshape": _ints(newshape)}, "relay.attrs.ReshapeAttrs")


def _reshape_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, like = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    _check_size(data.shape, like.shape, data)
    return TensorType(like.shape, data.dtype)


define_op("reshape_like", ("data", "shape_like"), _reshape_like_rel, INJECTIVE,
          lambda xs, attrs: xs[0].reshape(xs[1].shape))


def reshape_like(data: Expr, shape_like: Expr) -> Call:
    return make_call("reshape_like", (data, shape_like))


# --- transpose -------------------------------------------------------------------------
def _transpose_axes(attrs: Attrs, ndim: int, ty: Type | None = None) -> tuple[int, ...]:
    axes = attrs.get("axes")
    if not axes:
        return tuple(reversed(range(ndim)))
    perm = normalize_axes(axes, ndim, ty)
    if sorted(perm) != list(range(ndim)):
        raise TypeRelationError("axes are not a permutation of the dimensions", arg=0,
                                expected=f"a permutation of {ndim} axes", actual=str(axes))
    return perm


def _transpose_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    perm = _transpose_axes(attrs, data.ndim, data)
    return TensorType([data.shape[a] for a in perm], data.dtype)


define_op("transpose", ("data",), _transpose_rel, INJECTIVE,
          lambda xs, attrs: np.transpose(xs[0], _transpose_axes(attrs, xs[0].ndim)),
          attrs_type_key="relay.attrs.TransposeAttrs")


def transpose(data: Expr, axes: Any = None) -> Call:
    return make_call("transpose", (data,), {"axes": None if axes is None else _ints(axes)},
                     "relay.attrs.TransposeAttrs")


# --- squeeze / expand_dims ---------------------------------------------------------------
def _squeeze_axes(attrs: Attrs, shape: Sequence[Dim], ty: Type | None = None) -> tuple[int, ...]:
    axis = attrs.get("axis")
    if axis is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = normalize_axes(axis, len(shape), ty)
    for a in axes:
        if not is_any(shape[a]) and shape[a] != 1:
            raise TypeRelationError(f"cannot squeeze axis {a} of size {shape[a]}", arg=0,
                                    expected="size 1 on every squeezed axis",
                                    actual=type_str(ty) if ty is not None else shape_str(shape))
    return axes


def _squeeze_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    axes = _squeeze_axes(attrs, data.shape, data)
    return TensorType([d for i, d in enumerate(data.shape) if i not in axes], data.dtype)


define_op("squeeze", ("data",), _squeeze_rel, INJECTIVE,
          lambda xs, attrs: np.squeeze(xs[0], axis=_squeeze_axes(attrs, xs[0].shape)),
          attrs_type_key="relay.attrs.SqueezeAttrs")


def squeeze(data: Expr, axis: Any = None) -> Call:
    return make_call("squeeze", (data,), {"axis": None if axis is None else _ints(axis)},
                     "relay.attrs.SqueezeAttrs")


def _expanded_shape(shape: Sequence[Dim], attrs: Attrs, ty: Type | None = None) -> list[Dim]:
    ndim = len(shape)
    axis = int(attrs.axis)
    if not -ndim - 1 <= axis <= ndim:
        raise TypeRelationError(f"axis {axis} is out of range", arg=0,
                                expected=f"an axis in [{-ndim - 1}, {ndim}]",
                                actual=type_str(ty) if ty is not None else shape_str(shape))
    pos = axis + ndim + 1 if axis < 0 else axis
    return list(shape[:pos]) + [1] * int(attrs.num_newaxis) + list(shape[pos:])


def _expand_dims_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    return TensorType(_expanded_shape(data.shape, attrs, data), data.dtype)


define_op("expand_dims", ("data",), _expand_dims_rel, INJECTIVE,
          lambda xs, attrs: xs[0].reshape(_expanded_shape(xs[0].shape, attrs)),
          attrs_type_key="relay.attrs.ExpandDimsAttrs")


def expand_dims(data: Expr, axis: int, num_newaxis: int = 1) -> Call:
    return make_call("expand_dims", (data,), {"axis": int(axis), "num_newaxis": int(num_newaxis)},
                     "relay.attrs.ExpandDimsAttrs")


# --- tile / repeat / reverse / broadcast_to ----------------------------------------------
def _tile_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    reps = list(attrs.reps)
    ndim = max(len(reps), data.ndim)
    shape = [1] * (ndim - data.ndim) + list(data.shape)
    reps = [1] * (ndim - len(reps)) + reps
    return TensorType([ANY if is_any(d) else int(d) * r for d, r in zip(shape, reps)],
                      data.dtype)


define_op("tile", ("data",), _tile_rel, INJECTIVE, lambda xs, attrs: np.tile(xs[0], attrs.reps),
          attrs_type_key="relay.attrs.TileAttrs")


def tile(data: Expr, reps: Any) -> Call:
    return make_call("tile", (data,), {"reps": _ints(reps)}, "relay.attrs.TileAttrs")


def _repeat_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    axis = normalize_axis(int(attrs.axis), data.ndim, 0, data)
    shape = list(data.shape)
    size = shape[axis]
    shape[axis] = size * int(attrs.repeats) if isinstance(size, int) else ANY
    return TensorType(shape, data.dtype)


define_op("repeat", ("data",), _repeat_rel, INJECTIVE,
          lambda xs, attrs: np.repeat(xs[0], attrs.repeats, axis=attrs.axis),
          attrs_type_key="relay.attrs.RepeatAttrs")


def repeat(data: Expr, repeats: int, axis: int) -> Call:
    return make_call("repeat", (data,), {"repeats": int(repeats), "axis": int(axis)},
                     "relay.attrs.RepeatAttrs")


def _reverse_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    normalize_axis(int(attrs.axis), data.ndim, 0, data)
    return data


define_op("reverse", ("data",), _reverse_rel, INJECTIVE,
          lambda xs, attrs: np.flip(xs[0], axis=int(attrs.axis)).copy(),
          attrs_type_key="relay.attrs.ReverseAttrs")


def reverse(data: Expr, axis: int) -> Call:
    return make_call("reverse", (data,), {"axis": int(axis)}, "relay.attrs.ReverseAttrs")


def _broadcast_to_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    from engine.relay.op._typing import broadcast_shapes

    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    target = TensorType(attrs.shape, data.dtype)
    shape = broadcast_shapes(data.shape, target.shape, [data, target])
    if shape != target.shape:
        raise TypeRelationError("cannot broadcast to the target shape", arg=0,
                                expected=f"a shape broadcastable to {shape_str(target.shape)}",
                                actual=type_str(data))
    return target


define_op("broadcast_to", ("data",), _broadcast_to_rel, BROADCAST,
          lambda xs, attrs: np.broadcast_to(xs[0], attrs.shape).copy(),
          attrs_type_key="relay.attrs.InitOpAttrs")


def broadcast_to(data: Expr, shape: Any) -> Call:
    return make_call("broadcast_to", (data,), {"shape": _ints(shape)}, "relay.attrs.InitOpAttrs")


# --- shape_of ------------------------------------------------------------------------------
def _shape_of_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    return TensorType((data.ndim,), attrs.get("dtype", "int32"))


define_op("shape_of", ("data",), _shape_of_rel, OPAQUE,
          lambda xs, attrs: np.array(xs[0].shape, dtype=attrs.get("dtype", "int32")),
          attrs_type_key="relay.attrs.ShapeOfAttrs")


def shape_of(data: Expr, dtype: str = "int32") -> Call:
    return make_call("shape_of", (data,), {"dtype": dtype}, "relay.attrs.ShapeOfAttrs")


__all__ = [
    "broadcast_to", "expand_dims", "infer_newshape", "repeat", "reshape", "reshape_like",
    "reverse", "reverse_reshape", "shape_of", "squeeze", "tile", "transpose",
]
