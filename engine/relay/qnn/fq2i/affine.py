"""What FakeQuantizationToInteger knows of each integer value it makes: its affine type
(TVM's TensorAffineType), real = (q - zero_point) * scale, per tensor or along one axis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.ir.errors import EngineError
from engine.ir.expr import Call, Constant, Expr
from engine.runtime.ndarray import NDArray


class Unconvertible(EngineError):
    """A fake-quantized region (or one op in it) that has no integer form."""


@dataclass(frozen=True, slots=True)
class AffineType:
    """real = (q - zero_point) * scale; `axis` is the axis a per-axis scale runs along."""

    scale: Expr
    zero_point: Expr
    dtype: str
    axis: int = -1

    def scale_value(self) -> np.ndarray:
        return constant(self.scale, "scale")

    def zero_point_value(self) -> np.ndarray:
        return constant(self.zero_point, "zero point")

    @property
    def per_axis(self) -> bool:
        return self.scale_value().size > 1 or self.zero_point_value().size > 1

    def same_params(self, other: AffineType) -> bool:
        """The same scales and zero points (by value; a per-axis parameter whose entries
        are all equal is the same as that one value)."""
        pairs = ((self.scale_value(), other.scale_value()),
                 (self.zero_point_value(), other.zero_point_value()))
        for mine, theirs in pairs:
            if mine.size > 1 and theirs.size > 1:
                if mine.shape != theirs.shape or self.axis != other.axis:
                    return False
                if not np.array_equal(mine, theirs):
                    return False
            elif not np.all(np.ravel(mine)[:, None] == np.ravel(theirs)[None, :]):
                return False
        return True

    def with_dtype(self, dtype: str) -> AffineType:
        return AffineType(self.scale, self.zero_point, dtype, self.axis)

    def with_axis(self, axis: int) -> AffineType:
        return AffineType(self.scale, self.zero_point, self.dtype, axis)


@dataclass(frozen=True, slots=True)
class TupleAffineType:
    fields: tuple[AffineType, ...]


Affine = AffineType | TupleAffineType


def constant(expr: Expr, what: str) -> np.ndarray:
    if not isinstance(expr, Constant):
        raise Unconvertible(f"a {what} that is not a constant ({type(expr).__name__})")
    return expr.data.numpy()


def const(value: Any, dtype: str) -> Constant:
    return Constant(NDArray(np.asarray(value, dtype=dtype)))


def tensor_affine(affine: Affine | None, what: str = "operand") -> AffineType:
    if not isinstance(affine, AffineType):
        raise Unconvertible(f"the {what} is not a quantized tensor")
    return affine


@dataclass
class Region:
    """One call of a fake-quantized region being rewritten: the float call (typed), its
    integer arguments, their affine types (None for a constant argument kept as is), the
    affine type the region's quantize asks for when this call is the region's root, and
    how requantizes are made (a `RequantizeConvention`)."""

    pre: Call
    args: tuple[Expr, ...]
    types: tuple[Affine | None, ...]
    out: AffineType | None
    convention: Any
    notes: list[str] = field(default_factory=list)

    def arg_type(self, index: int) -> AffineType:
        return tensor_affine(self.types[index], f"argument {index}")

    def input_scale(self, scales: Sequence[np.ndarray]) -> np.ndarray:
        return self.convention.input_scale(scales)


Rule = Callable[[Region], tuple[Expr, Affine]]

__all__ = ["Affine", "AffineType", "Region", "Rule", "TupleAffineType", "Unconvertible",
           "const", "constant", "tensor_affine"]
