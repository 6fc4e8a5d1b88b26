"""What the dyn type relations and kernels share: the static length of a shape-like operand,
and reading an operand's run-time value as ints."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.type import AnyDim, Type
from engine.relay.op._typing import tensor_arg
from engine.relay.op.op import TypeRelationError


def static_length(arg_types: Sequence[Type], index: int, what: str) -> int:
    """The length of the 1-D operand `index` (it decides the output rank, so it must be
    static); a 0-D operand counts as one value."""
    ty = tensor_arg(arg_types, index)
    if ty.ndim == 0:
        return 1
    if ty.ndim != 1 or isinstance(ty.shape[0], AnyDim):
        raise TypeRelationError(f"{what} must be a 1-D tensor of static length (it decides "
                                "the output rank)", arg=index, actual=str(ty.shape))
    return int(ty.shape[0])


def check_scalar(arg_types: Sequence[Type], index: int, what: str) -> None:
    """The operand holds one value (0-D, or 1-D of length 1)."""
    ty = tensor_arg(arg_types, index)
    if ty.ndim == 0 or (ty.ndim == 1 and ty.shape[0] == 1):
        return
    raise TypeRelationError(f"{what} must be a scalar (or a 1-element tensor)", arg=index,
                            actual=str(ty.shape))


def int_values(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def scalar(value: np.ndarray) -> int:
    return int(np.asarray(value).reshape(-1)[0])
