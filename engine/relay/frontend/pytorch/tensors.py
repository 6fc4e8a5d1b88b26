"""Shapes, views, copies, dtype casts, joins and splits, creation and padding.

A view's output is a new value here (Relay has no aliasing); the importer makes in-place
ops rebind the tensor they wrote to, so later readers see the write.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.common import crop_of_negative_pads
from engine.relay.frontend.pytorch.ops import (
    AtenCall,
    axis_of,
    cast,
    const,
    converter,
    ints,
    operand,
    tensor,
)


@converter("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
           "aten.flatten.using_ints", "aten.unflatten.int", "aten.unsqueeze.default",
           "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default",
           "aten.view_as.default", "aten.reshape_as.default", "aten._reshape_alias.default",
           "aten.view.dtype", "aten.ravel.default")
def reshape(call: AtenCall) -> Expr:
    if call.target == "aten.view.dtype" and call.out_dtype != call.dtype(0):
        raise call.fail("reinterpreting a tensor as another dtype is not supported")
    return relay.reshape(tensor(call, 0), newshape=list(call.out_shape))


@converter("aten.alias.default", "aten.clone.default", "aten.contiguous.default",
           "aten.detach.default", "aten.lift_fresh_copy.default", "aten.lift_fresh.default",
           "aten.dropout.default", "aten.feature_dropout.default", "aten.alpha_dropout.default",
           "aten.positive.default", "aten.resolve_conj.default", "aten.resolve_neg.default",
           "aten.detach_copy.default", "aten.alias_copy.default", "aten.clone.memory_format")
def identity(call: AtenCall) -> Expr:
    return tensor(call, 0)


@converter("aten.native_dropout.default")
def native_dropout(call: AtenCall) -> list[Expr]:
    if call.arg(2, "train") and float(call.args[1]) > 0:
        raise call.fail("dropout in training mode is not supported (export in eval mode)")
    x = tensor(call, 0)
    return [x, relay.full_like(cast(x, call.dtype(0), "bool"), relay.const(True))]


@converter("aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout", "aten.to.device",
           "aten.to.other", "aten.type_as.default", "aten._to_dtype.default",
           "aten.to.prim_dtype", "aten._autocast_to_reduced_precision.default")
def to(call: AtenCall) -> Expr:
    return cast(tensor(call, 0), call.dtype(0), call.out_dtype)


@converter("aten._assert_tensor_metadata.default", "aten._assert_scalar.default",
           "aten.sym_constrain_range_for_size.default", "aten._assert_async.msg",
           "aten.sym_constrain_range.default", "aten._functional_assert_async.msg")
def assertion(call: AtenCall) -> None:
    return None  # a check torch made at export; the shapes here are static


@converter("aten.copy.default")
def copy(call: AtenCall) -> Expr:
    src = operand(call, 1, call.dtype(0), "src")
    if call.shape(1) != call.shape(0):
        src = relay.broadcast_to(src, list(call.shape(0)))
    return src


@converter("aten.expand.default", "aten.broadcast_to.default", "aten.expand_as.default",
           "aten.expand_copy.default")
def expand(call: AtenCall) -> Expr:
    x = tensor(call, 0)
    return x if call.shape(0) == call.out_shape else relay.broadcast_to(x, list(call.out_shape))


@converter("aten.permute.default", "aten.permute_copy.default")
def permute(call: AtenCall) -> Expr:
    rank = len(call.shape(0))
    return relay.transpose(tensor(call, 0), axes=[axis_of(a, rank) for a in call.args[1]])


@converter("aten.transpose.int", "aten.swapaxes.default", "aten.t.default",
           "aten.numpy_T.default", "aten.mT.default")
def transpose(call: AtenCall) -> Expr:
    rank = len(call.shape(0))
    if rank < 2:
        return tensor(call, 0)
    axes = list(range(rank))
    if call.target.startswith(("aten.transpose", "aten.swapaxes")):
        a, b = axis_of(call.args[1], rank), axis_of(call.args[2], rank)
    elif call.target.startswith("aten.numpy_T"):
        return relay.transpose(tensor(call, 0), axes=axes[::-1])
    else:
        a, b = rank - 2, rank - 1
    axes[a], axes[b] = axes[b], axes[a]
    return relay.transpose(tensor(call, 0), axes=axes)


@converter("aten.movedim.int")
def movedim(call: AtenCall) -> Expr:
    rank = len(call.shape(0))
    source, dest = axis_of(call.args[1], rank), axis_of(call.args[2], rank)
    axes = [a for a in range(rank) if a != source]
    axes.insert(dest, source)
    return relay.transpose(tensor(call, 0), axes=axes)


# --- joins and splits ------------------------------------------------------------------------
@converter("aten.cat.default", "aten.concat.default", "aten.concatenate.default")
def cat(call: AtenCall) -> Expr:
    metas = call.list_metas(0)
    dtype = call.out_dtype
    rank = max(m.rank for m in metas)
    parts = [cast(p, m.dtype, dtype) for p, m in zip(call.args[0], metas)
             if m.rank == rank]  # torch skips the legacy empty 1-D tensors
    return relay.concatenate(parts, axis=axis_of(call.arg(1, "dim", 0), rank))


@converter("aten.stack.default")
def stack(call: AtenCall) -> Expr:
    rank = call.list_metas(0)[0].rank + 1
    return relay.stack(list(call.args[0]), axis=axis_of(call.arg(1, "dim", 0), rank))


@converter("aten.hstack.default", "aten.vstack.default")
def hvstack(call: AtenCall) -> Expr:
    rank = call.list_metas(0)[0].rank
    axis = 1 if call.target.startswith("aten.hstack") and rank > 1 else 0
    return relay.concatenate(list(call.args[0]), axis=axis)


def _split_points(sizes: list[int]) -> list[int]:
    return [int(x) for x in np.cumsum(sizes)[:-1]]


def _split(call: AtenCall, sizes: list[int], axis: int) -> list[Expr]:
    if len(sizes) == 1:
        return [tensor(call, 0)]
    parts = relay.split(tensor(call, 0), _split_points(sizes), axis=axis)
    return [parts[i] for i in range(len(sizes))]


@converter("aten.split.Tensor", "aten.split_with_sizes.default", "aten.split.sizes",
           "aten.split_with_sizes_copy.default", "aten.split_copy.Tensor")
def split(call: AtenCall) -> list[Expr]:
    return _split(call, [m.shape[_dim(call)] for m in _outs(call)], _dim(call))


@converter("aten.chunk.default", "aten.tensor_split.sections", "aten.tensor_split.indices")
def chunk(call: AtenCall) -> list[Expr]:
    return _split(call, [m.shape[_dim(call)] for m in _outs(call)], _dim(call))


def _dim(call: AtenCall) -> int:
    return axis_of(call.arg(2, "dim", 0), len(call.shape(0)))


def _outs(call: AtenCall) -> list[Any]:
    if any(m is None for m in call.outs):
        raise call.fail("the split's output shapes are unknown")
    return call.outs


@converter("aten.unbind.int", "aten.unbind_copy.int")
def unbind(call: AtenCall) -> list[Expr]:
    axis = axis_of(call.arg(1, "dim", 0), len(call.shape(0)))
    count = call.shape(0)[axis]
    parts = _split(call, [1] * count, axis) if count > 1 else [tensor(call, 0)]
    return [relay.squeeze(p, axis=[axis]) for p in parts]


# --- creation ----------------------------------------------------------------------------------
def _fill(call: AtenCall, value: Any) -> Expr:
    """The output's shape filled with `value`: a number, or (fill.Tensor) a 0-d tensor."""
    dtype = call.out_dtype
    if isinstance(value, Expr):
        return relay.broadcast_to(operand(call, 1, dtype), list(call.out_shape))
    return relay.full(const(value, dtype), list(call.out_shape), dtype)


@converter("aten.zeros.default", "aten.ones.default", "aten.empty.memory_format",
           "aten.empty_strided.default", "aten.zeros_like.default", "aten.ones_like.default",
           "aten.empty_like.default", "aten.new_zeros.default", "aten.new_ones.default",
           "aten.new_empty.default", "aten.new_empty_strided.default", "aten.empty.default")
def zeros_ones(call: AtenCall) -> Expr:
    return _fill(call, 1 if "ones" in call.target else 0)


@converter("aten.full.default", "aten.new_full.default", "aten.full_like.default",
           "aten.fill.Scalar", "aten.fill.Tensor")
def full(call: AtenCall) -> Expr:
    if call.target.startswith("aten.new_full"):
        return _fill(call, call.args[2])
    return _fill(call, call.args[1])  # full(size, value), full_like(x, value), fill(x, value)


@converter("aten.scalar_tensor.default")
def scalar_tensor(call: AtenCall) -> Expr:
    return const(call.args[0], call.out_dtype)


@converter("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def arange(call: AtenCall) -> Expr:
    numbers = [a for a in call.args if not isinstance(a, Expr)]
    if call.target.endswith(".default"):
        start, step = 0, 1
    else:
        start = numbers[0]  # the end only bounds the count torch recorded
        step = numbers[2] if len(numbers) > 2 else call.kwargs.get("step", 1)
    count = call.out_shape[0]
    values = np.array([start + i * step for i in range(count)])
    return const(values, call.out_dtype)


@converter("aten.linspace.default")
def linspace(call: AtenCall) -> Expr:
    start, end, steps = call.args[0], call.args[1], int(call.args[2])
    return const(np.linspace(start, end, steps), call.out_dtype)


@converter("aten.eye.default", "aten.eye.m")
def eye(call: AtenCall) -> Expr:
    rows, cols = call.out_shape
    return const(np.eye(rows, cols), call.out_dtype)


@converter("aten.tril.default", "aten.triu.default")
def triangle(call: AtenCall) -> Expr:
    shape = call.shape(0)
    rows, cols = shape[-2], shape[-1]
    diagonal = int(call.arg(1, "diagonal", 0))
    keep = np.tril(np.ones((rows, cols), bool), diagonal) if "tril" in call.target else \
        np.triu(np.ones((rows, cols), bool), diagonal)
    x = tensor(call, 0)
    return relay.where(relay.const(keep), x, relay.zeros_like(x))


# --- padding -----------------------------------------------------------------------------------
def _pad_widths(call: AtenCall, pads: list[int]) -> list[tuple[int, int]]:
    """Per-axis (before, after) from torch's pads, last axis first."""
    rank = len(call.shape(0))
    widths = [(0, 0)] * rank
    for i in range(len(pads) // 2):
        widths[rank - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    return widths


def _pad(call: AtenCall, pads: list[int], mode: str, value: float = 0.0) -> Expr:
    x = tensor(call, 0)
    widths = _pad_widths(call, pads)
    try:
        crop = crop_of_negative_pads(call.shape(0), widths)
    except ValueError as err:
        raise call.fail(str(err)) from err
    if crop is not None:
        begin, end, widths = crop
        x = relay.strided_slice(x, begin, end)
    if not any(b or a for b, a in widths):
        return x
    return relay.nn.pad(x, widths, const(value, call.dtype(0)), pad_mode=mode)


@converter("aten.constant_pad_nd.default", "aten.pad.default")
def constant_pad(call: AtenCall) -> Expr:
    mode = call.arg(2, "mode", "constant") if call.target.startswith("aten.pad") else "constant"
    value = call.arg(3, "value", None) if call.target.startswith("aten.pad") else call.arg(
        2, "value", 0)
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
             "circular": "circular"}
    if mode not in modes or mode == "circular":
        raise call.fail(f"padding mode {mode!r} is not supported")
    return _pad(call, ints(call.args[1]), modes[mode], float(value or 0.0))


@converter("aten.reflection_pad1d.default", "aten.reflection_pad2d.default",
           "aten.reflection_pad3d.default", "aten.replication_pad1d.default",
           "aten.replication_pad2d.default", "aten.replication_pad3d.default")
def mode_pad(call: AtenCall) -> Expr:
    return _pad(call, ints(call.args[1]), "reflect" if "reflection" in call.target else "edge")
