"""layout_transform between layouts such as NCHW, NHWC and blocked NCHW16c / OIHW16i16o."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import Dim, TensorType, Type
from engine.relay.op._typing import ANY, check_arity, is_any, tensor_arg, type_str
from engine.relay.op.op import INJECTIVE, TypeRelationError, define_op, make_call

_AXIS = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> list[tuple[str, int]]:
    """"NCHW16c" -> [("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 16)]."""
    axes = [(letter, int(size) if size else 0) for size, letter in _AXIS.findall(layout)]
    if "".join(f"{s or ''}{a}" for a, s in axes) != layout:
        raise ValueError(f"invalid layout {layout!r}")
    for letter, size in axes:
        if letter.islower() and (size <= 0 or letter.upper() not in dict(axes)):
            raise ValueError(f"invalid layout {layout!r}: sub-axis {letter} needs a factor "
                             f"and a primal axis {letter.upper()}")
    return axes


def _primal_dims(shape: Sequence[Dim], layout: list[tuple[str, int]]) -> dict[str, Dim]:
    """Size of each primal (upper-case) axis, with its blocked factor folded back in."""
    sizes: dict[str, Dim] = {}
    for (letter, _), d in zip(layout, shape):
        if letter.isupper():
            sizes[letter] = d
    for (letter, factor), _ in zip(layout, shape):
        if letter.islower():
            outer = sizes[letter.upper()]
            sizes[letter.upper()] = ANY if is_any(outer) else int(outer) * factor
    return sizes


def _dst_shape(primal: dict[str, Dim], dst: list[tuple[str, int]]) -> list[Dim]:
    factors = {letter.upper(): f for letter, f in dst if letter.islower()}
    out: list[Dim] = []
    for letter, factor in dst:
        if letter.islower():
            out.append(factor)
            continue
        d = primal[letter]
        f = factors.get(letter, 1)
        if not is_any(d) and int(d) % f:
            raise ValueError(f"axis {letter} of size {d} does not split by {f}")
        out.append(ANY if is_any(d) else int(d) // f)
    return out


def _layouts(attrs: Attrs) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    src, dst = parse_layout(attrs.src_layout), parse_layout(attrs.dst_layout)
    if sorted(a for a, _ in src if a.isupper()) != sorted(a for a, _ in dst if a.isupper()):
        raise ValueError(f"layouts {attrs.src_layout} and {attrs.dst_layout} "
                         "have different primal axes")
    return src, dst


def _layout_transform_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    try:
        src, dst = _layouts(attrs)
        if len(src) != data.ndim:
            raise ValueError(f"src_layout {attrs.src_layout} has {len(src)} axes")
        shape = _dst_shape(_primal_dims(data.shape, src), dst)
    except ValueError as err:
        raise TypeRelationError(str(err), arg=0, expected=f"a tensor in {attrs.src_layout}",
                                actual=type_str(data)) from None
    return TensorType(shape, data.dtype)


def _to_primal(x: np.ndarray, src: list[tuple[str, int]]) -> tuple[np.ndarray, str]:
    """Unblock: move each sub-axis next to its primal axis and merge them."""
    primal = [a for a, _ in src if a.isupper()]
    order: list[int] = []
    for letter in primal:
        order.append([a for a, _ in src].index(letter))
        if letter.lower() in [a for a, _ in src]:
            order.append([a for a, _ in src].index(letter.lower()))
    sizes = _primal_dims(x.shape, src)
    merged = np.transpose(x, order).reshape([int(sizes[a]) for a in primal])  # type: ignore
    return merged, "".join(primal)


def _layout_transform_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    src, dst = _layouts(attrs)
    x, primal = _to_primal(xs[0], src)
    factors = {a.upper(): f for a, f in dst if a.islower()}
    split_shape: list[int] = []
    names: list[str] = []
    for letter, d in zip(primal, x.shape):
        f = factors.get(letter)
        if f:
            split_shape += [d // f, f]
            names += [letter, letter.lower()]
        else:
            split_shape.append(d)
            names.append(letter)
    y = x.reshape(split_shape)
    return np.ascontiguousarray(np.transpose(y, [names.index(a) for a, _ in dst]))


define_op("layout_transform", ("data",), _layout_transform_rel, INJECTIVE,
          _layout_transform_compute, attrs_type_key="relay.attrs.LayoutTransformAttrs")


def layout_transform(data: Expr, src_layout: str, dst_layout: str) -> Call:
    return make_call("layout_transform", (data,), {"src_layout": src_layout,
                                                   "dst_layout": dst_layout},
                     "relay.attrs.LayoutTransformAttrs")


__all__ = ["layout_transform"]
