"""ONNX shape and data-movement ops: Reshape, Concat, Split, Slice, Gather, Transpose, ..."""

from __future__ import annotations

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.common import check_elements, crop_of_negative_pads
from engine.relay.frontend.onnx.table import ConvertResult, NodeContext, converter
from engine.relay.frontend.onnx.util import norm_axes, norm_axis, wrapped_indices

INT_MAX = 2**63 - 1


def _resolve_reshape(in_shape: tuple[int, ...], target: list[int], allowzero: bool) -> list[int]:
    out = [in_shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(target)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        out[out.index(-1)] = int(np.prod(in_shape)) // known if known else 0
    return out


@converter("Reshape", since=5)
def reshape(ctx: NodeContext) -> ConvertResult:
    if ctx.value(1) is None:  # the target shape is computed at run time
        return relay.dyn.reshape(ctx.input(0), ctx.input(1), bool(ctx.attr("allowzero", 0)))
    target = ctx.ints(1, "the target shape")
    shape = ctx.shape(0)
    if all(d is not None for d in shape):
        target = _resolve_reshape(ctx.static_shape(0), target, bool(ctx.attr("allowzero", 0)))
    return relay.reshape(ctx.input(0), newshape=target)


@converter("Flatten")
def flatten(ctx: NodeContext) -> ConvertResult:
    rank = ctx.rank(0)
    axis = norm_axis(int(ctx.attr("axis", 1)), rank)
    if axis == 1:
        return relay.nn.batch_flatten(ctx.input(0))
    shape = ctx.static_shape(0)
    return relay.reshape(ctx.input(0), newshape=[int(np.prod(shape[:axis])),
                                                 int(np.prod(shape[axis:]))])


@converter("Transpose")
def transpose(ctx: NodeContext) -> ConvertResult:
    perm = ctx.attr("perm")
    axes = [int(p) for p in perm] if perm is not None else list(range(ctx.rank(0)))[::-1]
    return relay.transpose(ctx.input(0), axes=axes)


def _squeeze(ctx: NodeContext, axes: list[int] | None) -> ConvertResult:
    if not axes:
        return relay.squeeze(ctx.input(0))
    return relay.squeeze(ctx.input(0), axis=norm_axes(axes, ctx.rank(0)))


@converter("Squeeze")
def squeeze_attr(ctx: NodeContext) -> ConvertResult:
    return _squeeze(ctx, ctx.attr("axes"))


@converter("Squeeze", since=13)
def squeeze_input(ctx: NodeContext) -> ConvertResult:
    if ctx.has(1) and ctx.value(1) is None:
        return relay.dyn.squeeze(ctx.input(0), ctx.input(1))
    return _squeeze(ctx, ctx.ints(1, "axes") if ctx.has(1) else None)


def _unsqueeze(ctx: NodeContext, axes: list[int]) -> ConvertResult:
    out_rank = ctx.rank(0) + len(axes)
    x = ctx.input(0)
    for axis in sorted(norm_axes(axes, out_rank)):
        x = relay.expand_dims(x, axis=axis)
    return x


@converter("Unsqueeze")
def unsqueeze_attr(ctx: NodeContext) -> ConvertResult:
    return _unsqueeze(ctx, [int(a) for a in ctx.attr("axes")])


@converter("Unsqueeze", since=13)
def unsqueeze_input(ctx: NodeContext) -> ConvertResult:
    if ctx.value(1) is None:
        return relay.dyn.expand_dims(ctx.input(0), ctx.input(1))
    return _unsqueeze(ctx, ctx.ints(1, "axes"))


@converter("Concat")
def concat(ctx: NodeContext) -> ConvertResult:
    parts = [x for x in ctx.inputs if x is not None]
    return relay.concatenate(parts, axis=int(ctx.attr("axis")))


def _split_sizes(ctx: NodeContext, dim: int | None) -> list[int]:
    if ctx.opset >= 13 and ctx.has(1):
        return ctx.ints(1, "split")
    if ctx.opset < 13 and ctx.attr("split") is not None:
        return [int(s) for s in ctx.attr("split")]
    count = int(ctx.attr("num_outputs", len(ctx.output_names)))
    if dim is None:
        raise ctx.fail("the split axis has a dynamic size")
    chunk = -(-dim // count)
    return [min(chunk, dim - i * chunk) for i in range(count)]


def _dyn_split(ctx: NodeContext, axis: int) -> ConvertResult:
    """Split sizes known at run time: output i is the slice [sum(sizes[:i]), sum(sizes[:i+1]))
    along `axis`, computed from the sizes tensor."""
    sizes = relay.cast(ctx.input(1), "int64")
    ends = relay.cumsum(sizes, axis=0)
    begins = relay.subtract(ends, sizes)
    one, axes = relay.const(np.array([1], "int64"), "int64"), relay.const(
        np.array([axis], "int64"), "int64")
    return [relay.dyn.strided_slice(
        ctx.input(0), relay.strided_slice(begins, [i], [i + 1]),
        relay.strided_slice(ends, [i], [i + 1]), one, axes) for i in range(len(ctx.output_names))]


@converter("Split")
def split(ctx: NodeContext) -> ConvertResult:
    shape = ctx.shape(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), len(shape))
    if ctx.opset >= 13 and ctx.has(1) and ctx.value(1) is None:
        return _dyn_split(ctx, axis)
    sizes = _split_sizes(ctx, shape[axis])
    indices = [int(i) for i in np.cumsum(sizes)[:-1]]
    parts = relay.split(ctx.input(0), indices_or_sections=indices, axis=axis)
    return [parts[i] for i in range(len(sizes))]


def _slice_bounds(ctx: NodeContext) -> tuple[list[int], list[int], list[int], list[int]]:
    if ctx.opset < 10:
        starts, ends = list(ctx.attr("starts")), list(ctx.attr("ends"))
        axes = list(ctx.attr("axes", range(len(starts))))
        return starts, ends, axes, [1] * len(starts)
    starts, ends = ctx.ints(1, "starts"), ctx.ints(2, "ends")
    axes = ctx.ints(3, "axes") if ctx.has(3) else list(range(len(starts)))
    steps = ctx.ints(4, "steps") if ctx.has(4) else [1] * len(starts)
    return starts, ends, axes, steps


def _clamp(value: int, dim: int, step: int) -> int:
    if value < 0:
        value += dim
    if step > 0:
        return max(0, min(value, dim))
    return max(-1, min(value, dim - 1))


def _dyn_slice(ctx: NodeContext) -> ConvertResult:
    """Bounds known at run time: every operand goes to dyn.strided_slice as int64."""
    count = ctx.shape(1)[0]
    if count is None:
        raise ctx.fail("starts has a dynamic length")
    steps = ctx.input(4) if ctx.has(4) else relay.const(np.ones(count, "int64"), "int64")
    axes = ctx.input(3) if ctx.has(3) else relay.const(np.arange(count, dtype="int64"), "int64")
    operands = [relay.cast(e, "int64") for e in (ctx.input(1), ctx.input(2), steps, axes)]
    return relay.dyn.strided_slice(ctx.input(0), *operands)


@converter("Slice")
def slice_(ctx: NodeContext) -> ConvertResult:
    if ctx.opset >= 10 and any(ctx.has(i) and ctx.value(i) is None for i in range(1, 5)):
        return _dyn_slice(ctx)
    starts, ends, axes, steps = _slice_bounds(ctx)
    shape = ctx.shape(0)
    axes = norm_axes(axes, len(shape))
    begin, end, stride = [0] * len(shape), [], [1] * len(shape)
    end = [d if d is not None else INT_MAX for d in shape]
    for start, stop, axis, step in zip(starts, ends, axes, steps):
        dim = shape[axis]
        if dim is None:
            begin[axis], end[axis], stride[axis] = int(start), int(stop), int(step)
            continue
        begin[axis], stride[axis] = _clamp(int(start), dim, step), int(step)
        end[axis] = _clamp(int(stop), dim, step)
        if step < 0 and end[axis] < 0:
            end[axis] = -dim - 1  # "through index 0": below any wrapped index
    return relay.strided_slice(ctx.input(0), begin=begin, end=end, strides=stride)


@converter("Gather")
def gather(ctx: NodeContext) -> ConvertResult:
    rank = ctx.rank(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), rank)
    return relay.take(ctx.input(0), wrapped_indices(ctx, 1, [axis]), axis=axis)


def _dyn_expand(ctx: NodeContext) -> ConvertResult:
    """The target shape is known at run time: broadcast both ways, as
    maximum(shape padded to one rank, shape_of(x) padded to it) (a 1 gives way)."""
    rank, length = ctx.rank(0), ctx.shape(1)[0]
    if length is None:
        raise ctx.fail("the target shape has a dynamic length")
    out_rank = max(rank, length)

    def padded(shape: Expr, have: int) -> Expr:
        if have == out_rank:
            return shape
        ones = relay.const(np.ones(out_rank - have, "int64"), "int64")
        return relay.concatenate([ones, shape], axis=0)
    target = relay.maximum(padded(relay.shape_of(ctx.input(0), dtype="int64"), rank),
                           padded(relay.cast(ctx.input(1), "int64"), length))
    return relay.dyn.broadcast_to(ctx.input(0), target)


@converter("Expand", since=8)
def expand(ctx: NodeContext) -> ConvertResult:
    if ctx.value(1) is None:
        return _dyn_expand(ctx)
    target = ctx.ints(1, "the target shape")
    out_shape = [int(d) for d in np.broadcast_shapes(ctx.static_shape(0), tuple(target))]
    check_elements(out_shape, f"output of {ctx.name!r}")
    return relay.broadcast_to(ctx.input(0), shape=out_shape)


@converter("Shape")
def shape(ctx: NodeContext) -> ConvertResult:
    dims = ctx.shape(0)
    start = int(ctx.attr("start", 0))
    end = ctx.attr("end")
    window = slice(start, None if end is None else int(end))
    if all(d is not None for d in dims[window]):
        return relay.const(np.array(dims[window], dtype="int64"), "int64")
    out = relay.shape_of(ctx.input(0), dtype="int64")
    if window != slice(0, None):
        rank = len(dims)
        lo, hi, _ = window.indices(rank)
        out = relay.strided_slice(out, begin=[lo], end=[hi], strides=[1])
    return out


@converter("Size")
def size(ctx: NodeContext) -> ConvertResult:
    return relay.const(np.array(int(np.prod(ctx.static_shape(0))), dtype="int64"), "int64")


_CONSTANT_KEYS = {
    "value_float": "float32", "value_floats": "float32", "value_int": "int64",
    "value_ints": "int64",
}


@converter("Constant")
def constant(ctx: NodeContext) -> ConvertResult:
    if "value" in ctx.attrs:
        array = np.asarray(ctx.attrs["value"])
        return relay.const(array, str(array.dtype))
    for key, dtype in _CONSTANT_KEYS.items():
        if key in ctx.attrs:
            array = np.asarray(ctx.attrs[key], dtype=dtype)
            return relay.const(array, dtype)
    raise ctx.fail(f"unsupported constant attribute(s) {sorted(ctx.attrs)}")


@converter("ConstantOfShape", since=9)
def constant_of_shape(ctx: NodeContext) -> ConvertResult:
    fill = np.asarray(ctx.attrs.get("value", np.zeros([1], "float32"))).reshape(-1)[:1]
    dtype = str(fill.dtype)
    if ctx.value(0) is None:
        return relay.dyn.full(relay.const(fill[0], dtype), ctx.input(0), dtype=dtype)
    dims = ctx.ints(0, "the shape")
    check_elements(dims, f"output of {ctx.name!r}")
    return relay.full(relay.const(fill[0], dtype), shape=dims, dtype=dtype)


def _pads_and_value(ctx: NodeContext) -> tuple[list[int], float]:
    if ctx.opset < 11:
        return [int(p) for p in ctx.attr("pads")], float(ctx.attr("value", 0.0))
    pads = ctx.ints(1, "pads")
    value = ctx.value(2) if ctx.has(2) else None
    fill = float(np.asarray(value).reshape(-1)[0]) if value is not None else 0.0
    if ctx.has(3):
        rank = ctx.rank(0)
        axes = norm_axes(ctx.ints(3, "axes"), rank)
        full = [0] * (2 * rank)
        for i, axis in enumerate(axes):
            full[axis], full[axis + rank] = pads[i], pads[i + len(axes)]
        pads = full
    return pads, fill


def _dyn_pad(ctx: NodeContext) -> ConvertResult:
    """Pads (or axes) known at run time: [b0.., e0..] becomes the (rank, 2) pad_width of
    dyn.nn.pad; with axes, each axis' pair is scattered into zeros."""
    rank, dtype = ctx.rank(0), ctx.dtype(0)
    pads = relay.cast(ctx.input(1), "int64")
    count = rank if not ctx.has(3) else ctx.shape(3)[0]
    if count is None:
        raise ctx.fail("the pad axes have a dynamic length")
    pairs = relay.transpose(relay.reshape(pads, [2, count]), [1, 0])
    if ctx.has(3):
        axes = relay.cast(ctx.input(3), "int64")
        wrapped = relay.where(relay.less(axes, relay.const(0, "int64")),
                              relay.add(axes, relay.const(rank, "int64")), axes)
        hot = relay.one_hot(wrapped, relay.const(1, "int64"), relay.const(0, "int64"),
                            depth=rank, axis=0, dtype="int64")  # (rank, count)
        pairs = relay.nn.matmul(hot, pairs)
    value = ctx.input(2) if ctx.has(2) else relay.const(np.zeros((), dtype), dtype)
    value = relay.reshape(value, [])
    return relay.dyn.nn.pad(ctx.input(0), pairs, value, ctx.attr("mode", "constant"))


@converter("Pad")
def pad(ctx: NodeContext) -> ConvertResult:
    if ctx.opset >= 11 and any(ctx.has(i) and ctx.value(i) is None for i in (1, 3)):
        return _dyn_pad(ctx)
    pads, fill = _pads_and_value(ctx)
    rank = len(pads) // 2
    width = [(pads[i], pads[i + rank]) for i in range(rank)]
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise ctx.fail(f"pad mode {mode!r} is not supported")
    data = ctx.input(0)
    try:
        crop = crop_of_negative_pads(ctx.static_shape(0), width) if min(pads, default=0) < 0 else None
    except ValueError as err:
        raise ctx.fail(str(err)) from err
    if crop is not None:  # negative pads crop (RWKV's time shift)
        begin, end, width = crop
        data = relay.strided_slice(data, begin, end)
        if not any(b or a for b, a in width):
            return data
    return relay.nn.pad(data, pad_width=width, pad_value=fill, pad_mode=mode)


@converter("Tile", since=6)
def tile(ctx: NodeContext) -> ConvertResult:
    if ctx.value(1) is None:
        return relay.dyn.tile(ctx.input(0), ctx.input(1))
    reps = ctx.ints(1, "repeats")
    shape = ctx.shape(0)
    check_elements([(d or 1) * r for d, r in zip(shape, reps)], f"output of {ctx.name!r}")
    return relay.tile(ctx.input(0), reps=reps)


@converter("Range", since=11)
def range_(ctx: NodeContext) -> ConvertResult:
    dtype = ctx.dtype(0)
    start, limit, delta = (ctx.input(i) for i in range(3))
    return relay.arange(start, limit, delta, dtype=dtype)


@converter("DepthToSpace")
def depth_to_space(ctx: NodeContext) -> ConvertResult:
    return relay.nn.depth_to_space(ctx.input(0), block_size=int(ctx.attr("blocksize")),
                                   layout="NCHW", mode=ctx.attr("mode", "DCR"))


@converter("SpaceToDepth")
def space_to_depth(ctx: NodeContext) -> ConvertResult:
    return relay.nn.space_to_depth(ctx.input(0), block_size=int(ctx.attr("blocksize")),
                                   layout="NCHW", mode=ctx.attr("mode", "DCR"))


@converter("ArgMax", "ArgMin")
def arg_reduce(ctx: NodeContext) -> ConvertResult:
    fn = relay.argmax if ctx.op_type == "ArgMax" else relay.argmin
    out = fn(ctx.input(0), axis=[norm_axis(int(ctx.attr("axis", 0)), ctx.rank(0))],
             keepdims=bool(ctx.attr("keepdims", 1)),
             select_last_index=bool(ctx.attr("select_last_index", 0)))
    return relay.cast(out, "int64")
