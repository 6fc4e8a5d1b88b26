"""Attribute values of calls and functions: frozen, hashable, compared by value."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np


def normalize_attr(value: Any) -> Any:
    """Make an attribute value immutable and comparable: lists become tuples, numpy scalars
    become Python scalars."""
    if isinstance(value, (list, tuple)):
        return tuple(normalize_attr(v) for v in value)
    if isinstance(value, np.ndarray):
        return tuple(normalize_attr(v) for v in value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Attrs) or value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return Attrs(value)
    return value


class Attrs(Mapping[str, Any]):
    """An ordered, immutable mapping of attribute names to values.

    Reads as TVM's attrs do: `call.attrs.strides` or `call.attrs["strides"]`.
    """

    __slots__ = ("_items", "_hash", "type_key")
    _items: dict[str, Any]
    _hash: int | None
    type_key: str

    def __init__(self, items: Mapping[str, Any] | None = None, type_key: str = "DictAttrs",
                 **kwargs: Any) -> None:
        merged = dict(items or {})
        merged.update(kwargs)
        object.__setattr__(self, "_items", {k: normalize_attr(v) for k, v in merged.items()})
        object.__setattr__(self, "_hash", None)
        object.__setattr__(self, "type_key", type_key)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getattr__(self, key: str) -> Any:
        try:
            return self._items[key]
        except KeyError:
            raise AttributeError(f"{self.type_key} has no attribute {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Attrs are immutable; use with_attr / replace")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attrs):
            return NotImplemented
        return _attr_equal(self._items, other._items)

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(tuple(sorted((k, _hashable(v)) for k, v in self._items.items())))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._items.items())
        return f"{self.type_key}({inner})"

    def replace(self, **changes: Any) -> Attrs:
        merged = dict(self._items)
        merged.update(changes)
        return Attrs(merged, type_key=self.type_key)

    def without(self, *keys: str) -> Attrs:
        return Attrs({k: v for k, v in self._items.items() if k not in keys},
                     type_key=self.type_key)

    def get_int_tuple(self, key: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self._items[key])


def _hashable(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return "nan"
    return value


def _attr_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_attr_equal(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_attr_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return bool(a == b)


EMPTY_ATTRS = Attrs()
DictAttrs = Attrs


def make_attrs(value: Mapping[str, Any] | Attrs | None, type_key: str = "DictAttrs") -> Attrs:
    if value is None:
        return EMPTY_ATTRS if type_key == "DictAttrs" else Attrs(type_key=type_key)
    if isinstance(value, Attrs):
        return value
    return Attrs(value, type_key=type_key)
