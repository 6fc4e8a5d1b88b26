"""Lexical pieces of the Relay text format, shared by the printer and the parser.

Names that are not plain are written as escaped, ASCII-only string literals
that never contain `*/`, `<`, `>` or `&`, so a span comment cannot be closed
early and markup in layer names stays inert text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Generic, TypeVar

import numpy as np

from engine.ir.span import UNKNOWN_SPAN, SequentialSpan, Span, SpanLike
from engine.ir.type import AnyDim, FuncType, IncompleteType, TensorType, TupleType, Type

VERSION_LINE = '#[version = "0.0.5"]'
METADATA_LINE = "#[metadata]"
META_OMITTED = "// meta data omitted; print with show_meta_data=True to include it"
VALUES_NOTE = "values="
"""Prefix of a note on a constant's values (`/* values=f32[64] 0.0012..0.031 */`), which the
parser skips: the values themselves are in the metadata."""

PLAIN_SPAN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*\Z")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_K = TypeVar("_K")
_V = TypeVar("_V")


class IdentityMemo(Generic[_K, _V]):
    """`fn(obj)` memoized by object identity, for immutable values whose hash is costly
    (a SequentialSpan of 256 layers hashes 256 dataclasses). It holds the objects it saw
    (so an id is never reused while cached) and forgets everything past `limit` entries."""

    __slots__ = ("_fn", "_table", "_limit")

    def __init__(self, fn: Callable[[_K], _V], limit: int = 1 << 16) -> None:
        self._fn = fn
        self._table: dict[int, tuple[_K, _V]] = {}
        self._limit = limit

    def __call__(self, obj: _K) -> _V:
        hit = self._table.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = self._fn(obj)
        if len(self._table) >= self._limit:
            self._table = {}
        self._table[id(obj)] = (obj, value)
        return value

    def clear(self) -> None:
        self._table = {}


_COMMENT_END = re.compile(r"\*/")

# dtype -> literal suffix of a scalar constant (`1f`, `2i64`, `True`)
SCALAR_SUFFIX: dict[str, str] = {
    "float32": "f", "float64": "f64", "float16": "f16",
    "int32": "", "int64": "i64", "int16": "i16", "int8": "i8",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
}
SUFFIX_DTYPE: dict[str, str] = {v: k for k, v in SCALAR_SUFFIX.items()} | {
    "f32": "float32", "i32": "int32",
}


def quote(text: str) -> str:
    """A double-quoted literal that `json.loads` reads back. Readable as written (markup
    and non-ASCII letters stay as they are: the page shows IR as text), except that `*/`
    becomes `*\\/`, so a quoted name can never close the comment it stands in."""
    return _COMMENT_END.sub(r"*\\/", json.dumps(text, ensure_ascii=False))


def name_or_quoted(name: str, plain: re.Pattern[str] = IDENTIFIER) -> str:
    return name if plain.match(name) else quote(name)


def sanitize_var_name(name: str) -> str:
    """A local variable name the lexer reads as one token (`input.1` -> `input_1`)."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not clean or not (clean[0].isalpha() or clean[0] == "_"):
        clean = "v" + clean
    return clean


# --- spans ------------------------------------------------------------------------


def _span_item(span: Span) -> str:
    text = name_or_quoted(span.source_name.name, PLAIN_SPAN_NAME)
    if span.line or span.column or span.end_line or span.end_column:
        text += f":{span.line}:{span.column}"
        if span.end_line or span.end_column:
            text += f"-{span.end_line}:{span.end_column}"
    return text


@lru_cache(maxsize=1 << 16)
def span_comment(span: SpanLike) -> str:
    """`/* conv1 */`, `/* conv1, bn1 */`, `/* "a b":3:4 */`; "" for an unknown span.

    A one-element SequentialSpan keeps a trailing comma (`/* conv1, */`) so that it
    reads back as a SequentialSpan rather than a Span.
    """
    if isinstance(span, SequentialSpan):
        items = [_span_item(s) for s in span.spans]
        if not items:
            return ""
        tail = "," if len(items) == 1 else ""
        return "/* " + ", ".join(items) + tail + " */"
    if span == UNKNOWN_SPAN:
        return ""
    return f"/* {_span_item(span)} */"


def _span_trailer(span: SpanLike) -> str:
    comment = span_comment(span)
    return " " + comment if comment else ""


def _span_names(span: SpanLike) -> tuple[str, ...]:
    return span.source_names() if span else ()


span_trailer: IdentityMemo[SpanLike, str] = IdentityMemo(_span_trailer)
"""`" /* conv1 */"` (with its leading space), "" for an unknown span; by span identity."""

span_names: IdentityMemo[SpanLike, tuple[str, ...]] = IdentityMemo(_span_names)
"""The layer names of a span, as the source map lists them; by span identity."""


# --- numbers and attribute values ---------------------------------------------------


def float_text(value: float | np.floating) -> str:
    """Shortest text that reads back to the same value at the value's precision."""
    as_float = float(value)
    if math.isnan(as_float):
        return "nan"
    if math.isinf(as_float):
        return "inf" if as_float > 0 else "-inf"
    text = str(value)
    return text[:-2] if text.endswith(".0") else text


def scalar_text(array: np.ndarray) -> str | None:
    """Inline literal of a 0-d constant (`1f`, `0.5f`, `2i64`, `True`), None if it has none."""
    if array.ndim != 0:
        return None
    dtype = str(array.dtype)
    value: Any = array[()]
    if dtype == "bool":
        return "True" if value else "False"
    suffix = SCALAR_SUFFIX.get(dtype)
    if suffix is None:
        return None
    if dtype.startswith("float"):
        return float_text(value) + suffix
    return f"{int(value)}{suffix}"


def _attr_tuple(value: tuple[Any, ...]) -> str:
    return "[" + ", ".join(attr_value_text(v) for v in value) + "]"


def _attr_mapping(value: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{attr_key_text(k)}={attr_value_text(v)}"
                           for k, v in value.items()) + "}"


_ATTR_TEXT: dict[type, Callable[[Any], str]] = {
    type(None): lambda v: "None",
    bool: lambda v: "True" if v else "False",
    int: str,
    float: lambda v: float_text(v) + "f",
    str: quote,
    tuple: _attr_tuple,
}


def attr_value_text(value: Any) -> str:
    """`1`, `0.5f`, `"NCHW"`, `[1, 1]`, `None`, `True`, `{k=v}`."""
    printer = _ATTR_TEXT.get(type(value))
    if printer is not None:
        return printer(value)
    if isinstance(value, Mapping):
        return _attr_mapping(value)
    if isinstance(value, Type):
        return quote(type_text(value))
    return quote(repr(value))


def attr_key_text(key: str) -> str:
    return name_or_quoted(key)


def _attrs_text(attrs: Mapping[str, Any]) -> str:
    return ", ".join(f"{attr_key_text(k)}={attr_value_text(v)}" for k, v in attrs.items())


attrs_text: IdentityMemo[Mapping[str, Any], str] = IdentityMemo(_attrs_text)
"""`strides=[1, 1], padding=[0, 0]` of a call's or function's attrs; by attrs identity."""


# --- types ------------------------------------------------------------------------


def _dim_text(dim: Any) -> str:
    return "?" if isinstance(dim, AnyDim) else str(dim)


def _tensor_text(ty: TensorType) -> str:
    if not ty.shape:
        return ty.dtype
    return "Tensor[(" + ", ".join(_dim_text(d) for d in ty.shape) + f"), {ty.dtype}]"


def _tuple_text(ty: TupleType) -> str:
    inner = ", ".join(type_text(f) for f in ty.fields)
    return f"({inner},)" if len(ty.fields) == 1 else f"({inner})"


def _func_text(ty: FuncType) -> str:
    args = ", ".join(type_text(a) for a in ty.arg_types)
    return f"fn ({args}) -> {type_text(ty.ret_type)}"


_TYPE_TEXT: dict[type, Callable[[Any], str]] = {
    TensorType: _tensor_text,
    TupleType: _tuple_text,
    FuncType: _func_text,
    IncompleteType: lambda ty: "_",
}


def register_type_text(cls: type, printer: Callable[[Any], str]) -> None:
    """Teach the printer a new Type class (its parser support is separate)."""
    _TYPE_TEXT[cls] = printer
    _cached_type_text.cache_clear()
    type_trailer.clear()


def type_text(ty: Type | None) -> str:
    """Relay text of a type: `Tensor[(1, 3), float32]`, `float32`, `(T1, T2)`, `fn (T) -> T`."""
    try:
        return _cached_type_text(ty)
    except TypeError:  # an unhashable Type subclass
        return _type_text(ty)


@lru_cache(maxsize=1 << 14)
def _cached_type_text(ty: Type | None) -> str:
    return _type_text(ty)


def _type_text(ty: Type | None) -> str:
    if ty is None:
        return "_"
    printer = _TYPE_TEXT.get(type(ty))
    if printer is None:
        return f"{type(ty).__name__}"
    return printer(ty)


def _type_trailer(ty: Type) -> str:
    return f" /* ty={type_text(ty)} */"


type_trailer: IdentityMemo[Type, str] = IdentityMemo(_type_trailer)
"""`" /* ty=Tensor[(1, 3), float32] */"` of a checked type; by type identity."""
