"""Relay types: frozen values compared by value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any as _Any

import numpy as np

from engine.ir.dtype import dtype_name
from engine.ir.text import type_text


class AnyDim:
    """A dimension unknown until run time, printed `?` (TVM's `relay.Any()`)."""

    __slots__ = ()
    _instance: AnyDim | None = None

    def __new__(cls) -> AnyDim:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "?"

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (AnyDim, ())


def Any() -> AnyDim:  # TVM's name
    return AnyDim()


Dim = int | AnyDim


def _dim(value: _Any) -> Dim:
    if isinstance(value, AnyDim):
        return value
    if value is None or (isinstance(value, str) and value in ("?", "")):
        return AnyDim()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if value < 0:
            return AnyDim()
        return int(value)
    if isinstance(value, str):
        return AnyDim()  # a symbolic dim name such as "batch"
    raise TypeError(f"a tensor dimension must be an int or relay.Any(), got {value!r}")


@dataclass(frozen=True, slots=True)
class Type:
    """Base of all Relay types."""


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    shape: tuple[Dim, ...]
    dtype: str = "float32"

    def __init__(self, shape: Iterable[_Any] = (), dtype: str = "float32") -> None:
        object.__setattr__(self, "shape", tuple(_dim(d) for d in shape))
        object.__setattr__(self, "dtype", dtype_name(dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        if not self.is_static:
            raise ValueError(f"shape {self.shape} has dynamic dimensions")
        return tuple(int(d) for d in self.shape)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return type_text(self)


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    fields: tuple[Type, ...]

    def __init__(self, fields: Iterable[Type]) -> None:
        object.__setattr__(self, "fields", tuple(fields))

    def __str__(self) -> str:
        return type_text(self)


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[Type, ...] = ()
    type_constraints: tuple[Type, ...] = ()

    def __init__(self, arg_types: Iterable[Type], ret_type: Type,
                 type_params: Iterable[Type] = (), type_constraints: Iterable[Type] = ()) -> None:
        object.__setattr__(self, "arg_types", tuple(arg_types))
        object.__setattr__(self, "ret_type", ret_type)
        object.__setattr__(self, "type_params", tuple(type_params))
        object.__setattr__(self, "type_constraints", tuple(type_constraints))

    def __str__(self) -> str:
        return type_text(self)


_incomplete_ids = iter(range(1, 1 << 62))


@dataclass(frozen=True, slots=True)
class IncompleteType(Type):
    """A type not yet known: a hole for type inference to fill."""

    kind: int = 0
    uid: int = field(default_factory=lambda: next(_incomplete_ids), compare=False)

    def __str__(self) -> str:
        return "_"


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)
