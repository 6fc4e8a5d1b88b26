"""TFLite operators that move, slice, gather or compute shapes: RESHAPE, SHAPE, PACK,
STRIDED_SLICE, GATHER, SPLIT, ... Shape arithmetic on static shapes becomes constants (the
importer folds an op whose inputs are all constant), as TVM's frontend infers such values."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.tflite.context import OpContext, converter, fused


@converter("RESHAPE")
def reshape(ctx: OpContext) -> Expr:
    if ctx.is_const(1):
        target = ctx.ints(1)
    elif np.asarray(ctx.option("NewShapeAsNumpy", [])).size:
        target = [int(d) for d in np.asarray(ctx.options["NewShapeAsNumpy"]).reshape(-1)]
    else:  # a run-time shape the importer could not fold: the file's static output shape
        target = list(ctx.out_tensor().shape)
    return relay.reshape(ctx.input(0), newshape=target)


@converter("SQUEEZE")
def squeeze(ctx: OpContext) -> Expr:
    dims = [int(d) for d in np.asarray(ctx.option("SqueezeDimsAsNumpy", [])).reshape(-1)]
    shape = ctx.shape(0)
    axes = [d % len(shape) for d in dims] or [i for i, d in enumerate(shape) if d == 1]
    return relay.squeeze(ctx.input(0), axis=axes)


@converter("EXPAND_DIMS")
def expand_dims(ctx: OpContext) -> Expr:
    (axis,) = ctx.ints(1)
    rank = len(ctx.shape(0))
    return relay.expand_dims(ctx.input(0), axis=axis if axis >= 0 else axis + rank + 1)


@converter("CONCATENATION")
def concatenation(ctx: OpContext) -> Expr:
    parts = [ctx.input(i) for i in range(len(ctx.inputs))]
    return fused(ctx, relay.concatenate(parts, axis=int(ctx.option("Axis", 0))))


@converter("TRANSPOSE")
def transpose(ctx: OpContext) -> Expr:
    return relay.transpose(ctx.input(0), axes=ctx.ints(1))


@converter("SHAPE")
def shape(ctx: OpContext) -> Expr:
    dtype = ctx.out_tensor().dtype
    return relay.const(np.asarray(ctx.shape(0), dtype=dtype))


@converter("PACK")
def pack(ctx: OpContext) -> Expr:
    parts = [ctx.input(i) for i in range(len(ctx.inputs))]
    return relay.stack(parts, axis=int(ctx.option("Axis", 0)))


@converter("UNPACK")
def unpack(ctx: OpContext) -> list[Expr]:
    shape = ctx.shape(0)
    axis = int(ctx.option("Axis", 0)) % len(shape)
    count = shape[axis]
    parts = relay.split(ctx.input(0), count, axis=axis)
    return [relay.squeeze(parts[i], axis=[axis]) for i in range(count)]


@converter("SPLIT")
def split(ctx: OpContext) -> list[Expr]:
    (axis,) = ctx.ints(0)  # SPLIT takes the axis first
    count = int(ctx.option("NumSplits", len(ctx.op.outputs)))
    parts = relay.split(ctx.input(1), count, axis=axis)
    return [parts[i] for i in range(count)]


@converter("SPLIT_V")
def split_v(ctx: OpContext) -> list[Expr]:
    shape = ctx.shape(0)
    (axis,) = ctx.ints(2)
    sizes = ctx.ints(1)
    if -1 in sizes:
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    points = [int(p) for p in np.cumsum(sizes)[:-1]]
    parts = relay.split(ctx.input(0), points, axis=axis)
    return [parts[i] for i in range(len(sizes))]


@converter("SLICE")
def slice_op(ctx: OpContext) -> Expr:
    shape = ctx.shape(0)
    begin, size = ctx.ints(1), ctx.ints(2)
    end = [d if s < 0 else b + s for b, s, d in zip(begin, size, shape)]
    return relay.strided_slice(ctx.input(0), begin=begin, end=end)


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


def _slice_bounds(dim: int, begin: int | None, end: int | None, stride: int
                  ) -> tuple[int, int, int]:
    """TF's clamped bounds as (begin, end, length); an end before index 0 of a reversed
    slice is spelled -(dim + 1), which the strided_slice op reads as Python does."""
    start, stop, step = slice(begin, end, stride).indices(dim)
    length = len(range(start, stop, step))
    return start, (-(dim + 1) if stop < 0 else stop), length


class _StridedSpec:
    """TF's sparse-to-dense strided-slice spec: per input axis (begin, end, stride), and the
    output shape after new axes and shrunk axes."""

    def __init__(self, ctx: OpContext, shape: tuple[int, ...]) -> None:
        self.begins: list[int] = []
        self.ends: list[int] = []
        self.strides: list[int] = []
        self.out_shape: list[int] = []
        self.shape = shape
        begin, end, strides = ctx.ints(1), ctx.ints(2), ctx.ints(3)
        masks = {k: int(ctx.option(k, 0)) for k in (
            "BeginMask", "EndMask", "EllipsisMask", "NewAxisMask", "ShrinkAxisMask")}
        offset = bool(ctx.option("Offset", False))
        for i in range(len(begin)):
            if _bit(masks["EllipsisMask"], i):
                later = sum(1 for j in range(i + 1, len(begin))
                            if not _bit(masks["NewAxisMask"], j))
                while len(self.begins) < len(shape) - later:
                    self._full()
            elif _bit(masks["NewAxisMask"], i):
                self.out_shape.append(1)
            else:
                self._axis(begin[i], end[i] + (begin[i] if offset else 0), strides[i],
                           _bit(masks["BeginMask"], i), _bit(masks["EndMask"], i),
                           _bit(masks["ShrinkAxisMask"], i))
        while len(self.begins) < len(shape):
            self._full()

    def _full(self) -> None:
        dim = self.shape[len(self.begins)]
        self.begins.append(0)
        self.ends.append(dim)
        self.strides.append(1)
        self.out_shape.append(dim)

    def _axis(self, begin: int, end: int, stride: int, no_begin: bool, no_end: bool,
              shrink: bool) -> None:
        dim = self.shape[len(self.begins)]
        if shrink:
            index = begin + dim if begin < 0 else begin
            self.begins.append(index)
            self.ends.append(index + 1)
            self.strides.append(1)
            return
        start, stop, length = _slice_bounds(dim, None if no_begin else begin,
                                            None if no_end else end, stride)
        self.begins.append(start)
        self.ends.append(stop)
        self.strides.append(stride)
        self.out_shape.append(length)


@converter("STRIDED_SLICE")
def strided_slice(ctx: OpContext) -> Expr:
    shape = ctx.shape(0)
    spec = _StridedSpec(ctx, shape)
    out = relay.strided_slice(ctx.input(0), begin=spec.begins, end=spec.ends,
                              strides=spec.strides)
    sliced = [len(range(*slice(b, e, s).indices(d)))
              for b, e, s, d in zip(spec.begins, spec.ends, spec.strides, shape)]
    return out if sliced == spec.out_shape else relay.reshape(out, newshape=spec.out_shape)


@converter("GATHER")
def gather(ctx: OpContext) -> Expr:
    axis = int(ctx.option("Axis", 0))
    batch_dims = int(ctx.option("BatchDims", 0))
    return relay.take(ctx.input(0), ctx.input(1), axis=axis, batch_dims=batch_dims)


@converter("EMBEDDING_LOOKUP")
def embedding_lookup(ctx: OpContext) -> Expr:
    return relay.take(ctx.input(1), ctx.input(0), axis=0)  # (ids, table)


@converter("GATHER_ND")
def gather_nd(ctx: OpContext) -> Expr:
    rank = len(ctx.shape(1))
    indices = relay.transpose(ctx.input(1), axes=[rank - 1, *range(rank - 1)])
    return relay.gather_nd(ctx.input(0), indices)


@converter("TILE")
def tile(ctx: OpContext) -> Expr:
    return relay.tile(ctx.input(0), reps=ctx.ints(1))


@converter("BROADCAST_TO")
def broadcast_to(ctx: OpContext) -> Expr:
    return relay.broadcast_to(ctx.input(0), shape=ctx.ints(1))


@converter("FILL")
def fill(ctx: OpContext) -> Expr:
    value = relay.reshape(ctx.input(1), newshape=[])
    return relay.full(value, shape=ctx.ints(0), dtype=ctx.out_tensor().dtype)


@converter("RANGE")
def range_op(ctx: OpContext) -> Expr:
    start, limit, delta = (ctx.value(i).reshape(-1)[0].item() for i in range(3))
    return relay.const(np.arange(start, limit, delta).astype(ctx.out_tensor().dtype))


_REDUCE: dict[str, Callable[..., Expr]] = {
    "MEAN": relay.mean, "SUM": relay.sum, "REDUCE_MAX": relay.max, "REDUCE_MIN": relay.min,
    "REDUCE_PROD": relay.prod, "REDUCE_ANY": relay.any,
}


@converter(*_REDUCE)
def reduce_op(ctx: OpContext) -> Expr:
    rank = len(ctx.shape(0))
    axes = sorted({a % rank for a in ctx.ints(1)}) if rank else []
    return _REDUCE[ctx.op.op_type](ctx.input(0), axis=axes,
                                   keepdims=bool(ctx.option("KeepDims", False)))


@converter("ARG_MAX", "ARG_MIN")
def arg_reduce(ctx: OpContext) -> Expr:
    (axis,) = ctx.ints(1)
    fn = relay.argmax if ctx.op.op_type == "ARG_MAX" else relay.argmin
    return relay.cast(fn(ctx.input(0), axis=[axis]), ctx.out_tensor().dtype)


@converter("CUMSUM")
def cumsum(ctx: OpContext) -> Expr:
    (axis,) = ctx.ints(1)
    x = ctx.input(0)
    reverse = bool(ctx.option("Reverse", False))
    if reverse:
        x = relay.reverse(x, axis=axis)
    out = relay.cumsum(x, axis=axis, exclusive=bool(ctx.option("Exclusive", False)))
    return relay.reverse(out, axis=axis) if reverse else out


@converter("REVERSE_V2")
def reverse(ctx: OpContext) -> Expr:
    out = ctx.input(0)
    for axis in ctx.ints(1):
        out = relay.reverse(out, axis=axis)
    return out


@converter("MIRROR_PAD")
def mirror_pad(ctx: OpContext) -> Expr:
    if int(ctx.option("Mode", 0)) != 0:
        raise ctx.fail("SYMMETRIC mirror padding is not supported (REFLECT is)")
    widths = [(int(b), int(e)) for b, e in ctx.value(1).reshape(-1, 2)]
    return relay.nn.pad(ctx.input(0), pad_width=widths, pad_mode="reflect")


@converter("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def depth_space(ctx: OpContext) -> Expr:
    block = int(ctx.option("BlockSize", 2))
    fn = relay.nn.depth_to_space if ctx.op.op_type == "DEPTH_TO_SPACE" else \
        relay.nn.space_to_depth
    return fn(ctx.input(0), block, layout="NHWC")
