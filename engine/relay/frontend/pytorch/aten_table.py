"""The whole converter table: importing this module registers every family's converters.

Besides the families, the Python-number ops a program computes from shapes (`sym_size`,
`sym_numel`, ...) fold to numbers here when the shapes are static.
"""

from __future__ import annotations

import math

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.pytorch import (  # noqa: F401 (each registers its converters)
    elementwise,
    indexing,
    nn_ops,
    reductions,
    tensors,
)
from engine.relay.frontend.pytorch.ops import (
    CONVERTERS,
    AtenCall,
    axis_of,
    converter,
    lookup,
    tensor,
)


def _known(call: AtenCall) -> tuple[int, ...]:
    shape = call.shape(0)
    if any(d < 0 for d in shape):
        raise call.fail("the shape is symbolic; only static shapes are supported")
    return shape


@converter("aten.sym_size.int")
def sym_size(call: AtenCall) -> int:
    shape = _known(call)
    return shape[axis_of(call.args[1], len(shape))]


@converter("aten.sym_numel.default", "aten.numel.default")
def sym_numel(call: AtenCall) -> int:
    return math.prod(_known(call))


@converter("aten.sym_stride.int")
def sym_stride(call: AtenCall) -> int:
    shape = _known(call)
    axis = axis_of(call.args[1], len(shape))
    return math.prod(shape[axis + 1:])


@converter("aten.sym_storage_offset.default")
def sym_storage_offset(call: AtenCall) -> int:
    return 0  # every value here is its own contiguous tensor


@converter("aten._local_scalar_dense.default", "aten.item.default")
def local_scalar(call: AtenCall) -> Expr:
    return relay.reshape(tensor(call, 0), newshape=[])


__all__ = ["CONVERTERS", "lookup"]
