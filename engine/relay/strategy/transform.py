"""Injective transform ops: reshape family, transpose, concatenate, stack, split,
strided_slice, take, nn.pad, layout_transform, tile, repeat, reverse, gather, one_hot.

Every compute reads its input at an index computed from the output index, so
the schedule can inline it into its consumer (or fuse and vectorize it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import engine.te as te
from engine.ir.attrs import Attrs
from engine.ir.type import Type
from engine.relay.strategy.base import (
    INJECTIVE,
    OpStrategy,
    dims,
    norm_axis,
    out_types,
    register_strategy,
    static_shape,
)
from engine.relay.strategy.conv import pad_tensor
from engine.relay.strategy.schedules import INJECTIVE_SCHEDULES
from engine.te import Tensor
from engine.tir import expr as E
from engine.tir import intrin

Compute = Callable[[Attrs, list[Tensor], Type], list[Tensor]]


def _out(out_type: Type, k: int = 0) -> tuple[list[int], str]:
    ty = out_types(out_type)[k]
    return list(static_shape(ty)), ty.dtype


def _compute(shape: Sequence[int], fn: Callable[..., Any], name: str) -> Tensor:
    return te.compute(list(shape), fn, name=name, tag=INJECTIVE)


def unravel(flat: E.PrimExpr, shape: Sequence[int]) -> list[E.PrimExpr]:
    out: list[E.PrimExpr] = []
    for d in reversed(shape):
        out.append(flat % d if d != 1 else E.make_const(0, "int32"))
        flat = flat // d
    return list(reversed(out))


def ravel(idx: Sequence[Any], shape: Sequence[int]) -> E.PrimExpr:
    flat: E.PrimExpr = E.make_const(0, "int32")
    for i, d in zip(idx, shape):
        flat = flat * d + i
    return flat


def reshape_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """reshape, squeeze, expand_dims, batch_flatten...: same elements in row-major order."""
    data = inputs[0]
    shape, _ = _out(out_type)
    src = dims(data)
    if [d for d in src if d != 1] == [d for d in shape if d != 1]:
        return [_compute(shape, lambda *i: data.load(_squeeze_map(i, shape, src)), "T_reshape")]
    return [_compute(shape, lambda *i: data.load(unravel(ravel(i, shape), src)), "T_reshape")]


def _squeeze_map(idx: Sequence[Any], shape: Sequence[int], src: Sequence[int]) -> list[Any]:
    """Index into `src` when only size-1 axes differ: match the non-1 axes in order."""
    big = [i for i, d in zip(idx, shape) if d != 1]
    it = iter(big)
    return [0 if d == 1 else next(it) for d in src]


def transpose_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    axes = attrs.get("axes")
    order = list(reversed(range(data.ndim))) if not axes else [norm_axis(a, data.ndim)
                                                                for a in axes]
    shape, _ = _out(out_type)

    def body(*i: Any) -> E.PrimExpr:
        src: list[Any] = [0] * data.ndim
        for k, a in enumerate(order):
            src[a] = i[k]
        return data.load(src)
    return [_compute(shape, body, "T_transpose")]


def concatenate_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    shape, _ = _out(out_type)
    axis = norm_axis(attrs.axis, len(shape))
    offsets = [0]
    for t in inputs:
        offsets.append(offsets[-1] + dims(t)[axis])

    def pick(i: Sequence[Any], lo: int, hi: int) -> E.PrimExpr:
        """The element from inputs[lo:hi]: a balanced tree of selects on the position,
        so concatenating thousands of tensors is log-deep, not thousands deep."""
        if hi - lo == 1:
            return _shifted(inputs[lo], i, axis, offsets[lo])
        mid = (lo + hi) // 2
        return te.Select(i[axis] < offsets[mid], pick(i, lo, mid), pick(i, mid, hi))

    def body(*i: Any) -> E.PrimExpr:
        return pick(i, 0, len(inputs))

    return [_compute(shape, body, "T_concat")]


def _shifted(t: Tensor, idx: Sequence[Any], axis: int, offset: int) -> E.PrimExpr:
    src = list(idx)
    src[axis] = intrin.min(intrin.max(idx[axis] - offset, 0), dims(t)[axis] - 1)
    return t.load(src)


def stack_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    shape, _ = _out(out_type)
    axis = norm_axis(attrs.axis, len(shape))

    def body(*i: Any) -> E.PrimExpr:
        rest = [v for k, v in enumerate(i) if k != axis]
        value = inputs[-1].load(rest)
        for k in reversed(range(len(inputs) - 1)):
            value = te.Select(i[axis] == k, inputs[k].load(rest), value)
        return value
    return [_compute(shape, body, "T_stack")]


def split_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    axis = norm_axis(attrs.axis, data.ndim)
    outs, start = [], 0
    for k, ty in enumerate(out_types(out_type)):
        shape = list(static_shape(ty))

        def body(*i: Any, _start: int = start) -> E.PrimExpr:
            src = list(i)
            src[axis] = i[axis] + _start
            return data.load(src)
        outs.append(_compute(shape, body, f"T_split_{k}"))
        start += shape[axis]
    return outs


def _slice_params(attrs: Attrs, src: Sequence[int]) -> list[tuple[int, int]]:
    """(start, step) per axis, resolved as Python slicing does."""
    n = len(src)
    axes = attrs.get("axes")
    axes = list(range(n)) if axes is None else [norm_axis(a, n) for a in axes]
    begin, end = list(attrs.begin), list(attrs.end)
    strides = list(attrs.get("strides") or [1])
    params = [(0, 1)] * n
    size_mode = str(attrs.get("slice_mode", "end")) == "size"
    for k, a in enumerate(axes):
        step = int(strides[k] if k < len(strides) else strides[-1])
        b = int(begin[k]) if k < len(begin) else (0 if step > 0 else src[a] - 1)
        e = int(end[k]) if k < len(end) else (src[a] if step > 0 else -src[a] - 1)
        if size_mode:
            step, e = 1, (src[a] if e < 0 else b + e)
        rng = range(src[a])[slice(b, e, step)]
        params[a] = (rng.start if len(rng) else 0, rng.step)
    return params


def strided_slice_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    shape, _ = _out(out_type)
    params = _slice_params(attrs, dims(data))
    return [_compute(shape, lambda *i: data.load(
        [s + v * step if (s, step) != (0, 1) else v for v, (s, step) in zip(i, params)]),
        "T_strided_slice")]


def _clamp_index(value: E.PrimExpr, n: int, mode: str) -> E.PrimExpr:
    v = E.cast(value, "int32")
    if mode == "wrap":
        return v % n
    if mode == "fast":
        return te.Select(v < 0, v + n, v)
    return intrin.min(intrin.max(v, 0), n - 1)


def take_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data, indices = inputs
    shape, _ = _out(out_type)
    mode = str(attrs.get("mode") or "clip")
    axis_attr = attrs.get("axis")
    bd = int(attrs.get("batch_dims") or 0)
    if axis_attr is None:
        flat = [d for d in dims(data)]
        total = 1
        for d in flat:
            total *= d
        return [_compute(shape, lambda *i: data.load(unravel(_clamp_index(
            indices.load(list(i)), total, mode), flat)), "T_take")]
    axis = norm_axis(axis_attr, data.ndim)
    ind_rank = indices.ndim - bd

    def body(*i: Any) -> E.PrimExpr:
        ind = indices.load([*i[:bd], *i[axis:axis + ind_rank]])
        where = _clamp_index(ind, dims(data)[axis], mode)
        return data.load([*i[:axis], where, *i[axis + ind_rank:]])
    return [_compute(shape, body, "T_take")]


def pad_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    widths = [(int(a), int(b)) for a, b in attrs.pad_width]
    mode = str(attrs.get("pad_mode") or "constant")
    if mode != "constant":
        return _edge_pad(data, widths, mode, out_type)
    value: Any = 0.0
    if len(inputs) > 1:
        value = inputs[1]
    elif attrs.get("pad_value") is not None:
        value = float(attrs.pad_value)
    if isinstance(value, Tensor):
        padded = pad_tensor(data, [a for a, _ in widths], [b for _, b in widths])
        pv = value

        def body(*i: Any) -> E.PrimExpr:
            inside = te.all(*[te.all(v >= a, v < a + d) for v, (a, _), d in
                              zip(i, widths, dims(data))]) if data.ndim else te.all()
            return te.Select(inside, padded.load(i), E.cast(pv.load(()), data.dtype))
        return [_compute(dims(padded), body, "T_pad")]
    return [pad_tensor(data, [a for a, _ in widths], [b for _, b in widths], value, "T_pad")]


def _edge_pad(data: Tensor, widths: list[tuple[int, int]], mode: str,
              out_type: Type) -> list[Tensor]:
    shape, _ = _out(out_type)

    def src(v: Any, a: int, d: int) -> E.PrimExpr:
        j = v - a
        if mode == "edge":
            return intrin.min(intrin.max(j, 0), d - 1)
        j = te.Select(j < 0, -j, j)
        return te.Select(j >= d, 2 * (d - 1) - j, j)
    return [_compute(shape, lambda *i: data.load(
        [src(v, a, d) for v, (a, _), d in zip(i, widths, dims(data))]), "T_pad")]


def _layout_axes(layout: str) -> list[tuple[str, int | None]]:
    """"NCHW8c" -> [("N", None), ("C", None), ("H", None), ("W", None), ("c", 8)]."""
    axes: list[tuple[str, int | None]] = []
    digits = ""
    for ch in layout:
        if ch.isdigit():
            digits += ch
            continue
        if not ch.isalpha():
            raise ValueError(f"layout {layout!r} has a character that is not an axis: {ch!r}")
        axes.append((ch, int(digits) if digits else None))
        digits = ""
    return axes


def layout_transform_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type
                             ) -> list[Tensor]:
    """Any layout to any other over the same primal axes, blocked ones included
    (NCHW <-> NHWC, NCHW -> NCHW8c, NCHW16c -> NCHW8c): each output index is turned into
    the primal coordinates, which give the input index."""
    data = inputs[0]
    src = _layout_axes(str(attrs.src_layout))
    dst = _layout_axes(str(attrs.dst_layout))
    if sorted(c for c, _ in src if c.isupper()) != sorted(c for c, _ in dst if c.isupper()):
        raise ValueError(f"layout_transform {attrs.src_layout} -> {attrs.dst_layout}: "
                         "the layouts have different primal axes")
    dst_block = {c.upper(): f for c, f in dst if c.islower() and f}
    src_block = {c.upper(): f for c, f in src if c.islower() and f}
    shape, _ = _out(out_type)

    def body(*index: Any) -> E.PrimExpr:
        primal: dict[str, Any] = {}
        for k, (ch, _) in enumerate(dst):
            if ch.isupper():
                primal[ch] = index[k] * dst_block[ch] if ch in dst_block else index[k]
        for k, (ch, _) in enumerate(dst):
            if ch.islower():
                primal[ch.upper()] = primal[ch.upper()] + index[k]
        load = []
        for ch, factor in src:
            value = primal[ch.upper()]
            if ch.isupper():
                load.append(value // src_block[ch] if ch in src_block else value)
            else:
                load.append(value % factor)
        return data.load(load)

    return [_compute(shape, body, "T_layout_trans")]


def tile_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    shape, _ = _out(out_type)
    src = dims(data)
    lead = len(shape) - len(src)
    return [_compute(shape, lambda *i: data.load(
        [i[lead + k] % d for k, d in enumerate(src)]), "T_tile")]


def repeat_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    axis, reps = norm_axis(attrs.axis, data.ndim), int(attrs.repeats)
    shape, _ = _out(out_type)
    return [_compute(shape, lambda *i: data.load(
        [v // reps if k == axis else v for k, v in enumerate(i)]), "T_repeat")]


def reverse_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data = inputs[0]
    axis = norm_axis(attrs.axis, data.ndim)
    n = dims(data)[axis]
    return [_compute(dims(data), lambda *i: data.load(
        [n - 1 - v if k == axis else v for k, v in enumerate(i)]), "T_reverse")]


def gather_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    data, indices = inputs
    axis = norm_axis(attrs.axis, data.ndim)
    shape, _ = _out(out_type)
    n = dims(data)[axis]
    return [_compute(shape, lambda *i: data.load(
        [_clamp_index(indices.load(i), n, "fast") if k == axis else v
         for k, v in enumerate(i)]), "T_gather")]


def one_hot_compute(attrs: Attrs, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    indices, on, off = inputs
    shape, dtype = _out(out_type)
    axis = norm_axis(attrs.get("axis", -1), len(shape))

    def body(*i: Any) -> E.PrimExpr:
        rest = [v for k, v in enumerate(i) if k != axis]
        hit = E.cast(indices.load(rest), "int32") == i[axis]
        return te.Select(hit, E.cast(on.load(()), dtype), E.cast(off.load(()), dtype))
    return [_compute(shape, body, "T_one_hot")]


def register() -> None:
    table: dict[str, Compute] = {
        "reshape": reshape_compute, "reshape_like": reshape_compute,
        "contrib_reverse_reshape": reshape_compute, "squeeze": reshape_compute,
        "expand_dims": reshape_compute, "nn.batch_flatten": reshape_compute,
        "transpose": transpose_compute, "concatenate": concatenate_compute,
        "stack": stack_compute, "split": split_compute, "strided_slice": strided_slice_compute,
        "take": take_compute, "nn.pad": pad_compute, "layout_transform": layout_transform_compute,
        "tile": tile_compute, "repeat": repeat_compute, "reverse": reverse_compute,
        "gather": gather_compute, "one_hot": one_hot_compute,
    }
    for name, compute in table.items():
        register_strategy(name, OpStrategy(name, compute, INJECTIVE_SCHEDULES))
