"""Helpers type relations share: reading tensor args, broadcasting, axes, dims."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.ir.type import AnyDim, Dim, FuncType, IncompleteType, TensorType, TupleType, Type
from engine.relay.op.op import TypeRelationError

if TYPE_CHECKING:
    from typing_extensions import TypeIs

ANY = AnyDim()


def type_str(ty: Type | None) -> str:
    """Relay text of a type, without needing the printer."""
    if ty is None or isinstance(ty, IncompleteType):
        return "_"
    if isinstance(ty, TensorType):
        if not ty.shape:
            return ty.dtype
        dims = ", ".join(str(d) if isinstance(d, int) else "?" for d in ty.shape)
        if len(ty.shape) == 1:
            dims += ","
        return f"Tensor[({dims}), {ty.dtype}]"
    if isinstance(ty, TupleType):
        return "(" + ", ".join(type_str(f) for f in ty.fields) + ")"
    if isinstance(ty, FuncType):
        args = ", ".join(type_str(a) for a in ty.arg_types)
        return f"fn ({args}) -> {type_str(ty.ret_type)}"
    return str(ty)


def shape_str(shape: Sequence[Dim]) -> str:
    return "(" + ", ".join(str(d) if isinstance(d, int) else "?" for d in shape) + ")"


def tensor_arg(arg_types: Sequence[Type], index: int) -> TensorType:
    """Argument `index` as a TensorType, or the error naming it."""
    if index >= len(arg_types):
        raise TypeRelationError(f"expects at least {index + 1} arguments, got {len(arg_types)}",
                                arg=None)
    ty = arg_types[index]
    if not isinstance(ty, TensorType):
        raise TypeRelationError("must be a tensor", arg=index, expected="Tensor",
                                actual=type_str(ty))
    return ty


def check_arity(arg_types: Sequence[Type], count: int) -> None:
    if len(arg_types) != count:
        raise TypeRelationError(f"expects {count} arguments, got {len(arg_types)}")


def check_ndim(ty: TensorType, index: int, ndims: int | Sequence[int]) -> None:
    allowed = (ndims,) if isinstance(ndims, int) else tuple(ndims)
    if ty.ndim not in allowed:
        want = " or ".join(f"{n}-D" for n in allowed)
        raise TypeRelationError("has the wrong rank", arg=index, expected=f"a {want} tensor",
                                actual=type_str(ty))


def check_dtype(ty: TensorType, index: int, dtype: str) -> None:
    if ty.dtype != dtype:
        raise TypeRelationError("has the wrong dtype", arg=index, expected=dtype,
                                actual=type_str(ty))


def is_any(dim: Dim) -> TypeIs[AnyDim]:
    return isinstance(dim, AnyDim)


def dims_match(a: Dim, b: Dim) -> bool:
    return is_any(a) or is_any(b) or a == b


def check_dim(actual: Dim, expected: Dim, index: int, what: str, ty: TensorType) -> None:
    if not dims_match(actual, expected):
        raise TypeRelationError(f"{what} is {actual}", arg=index, expected=f"{what} = {expected}",
                                actual=type_str(ty))


def broadcast_shapes(a: Sequence[Dim], b: Sequence[Dim], arg_types: Sequence[Type]
                     ) -> tuple[Dim, ...]:
    """Numpy broadcasting of two shapes; a mismatch names both operands."""
    out: list[Dim] = []
    ndim = max(len(a), len(b))
    pa = (1,) * (ndim - len(a)) + tuple(a)
    pb = (1,) * (ndim - len(b)) + tuple(b)
    for x, y in zip(pa, pb):
        out.append(_broadcast_dim(x, y, a, b, arg_types))
    return tuple(out)


def _broadcast_dim(x: Dim, y: Dim, a: Sequence[Dim], b: Sequence[Dim],
                   arg_types: Sequence[Type]) -> Dim:
    if x == y:
        return x
    if x == 1:
        return y
    if y == 1:
        return x
    if is_any(x) or is_any(y):
        return y if is_any(x) else x
    raise TypeRelationError(
        "operands cannot be broadcast together", arg=1,
        expected=f"a shape broadcastable with {shape_str(a)}",
        actual=type_str(arg_types[1]) if len(arg_types) > 1 else shape_str(b))


def normalize_axis(axis: int, ndim: int, index: int = 0, ty: Type | None = None) -> int:
    """A possibly negative axis as a non-negative one, or the error."""
    if not -ndim <= axis < max(ndim, 1):
        raise TypeRelationError(f"axis {axis} is out of range", arg=index,
                                expected=f"an axis in [{-ndim}, {ndim})",
                                actual=type_str(ty) if ty is not None else f"rank {ndim}")
    return axis + ndim if axis < 0 else axis


def normalize_axes(axes: Sequence[int] | int | None, ndim: int, ty: Type | None = None
                   ) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, int):
        axes = (axes,)
    return tuple(normalize_axis(int(a), ndim, 0, ty) for a in axes)


def product(dims: Sequence[Dim]) -> Dim:
    total = 1
    for d in dims:
        if is_any(d):
            return ANY
        total *= int(d)
    return total


def same_type(ty: Type, dtype: str | None = None) -> TensorType:
    assert isinstance(ty, TensorType)
    return TensorType(ty.shape, dtype or ty.dtype)


def out_dtype(attr_value: str | None, default: str) -> str:
    return attr_value if attr_value else default
