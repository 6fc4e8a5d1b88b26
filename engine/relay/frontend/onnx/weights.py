"""Weights left in their file: an ONNX model read without copying its initializers.

`strip_weights` walks the protobuf wire format of a ModelProto (in a memory map of the
file) and rebuilds it without the `raw_data` of the main graph's big initializers,
noting where each one lies in the file (`MappedRef`): protobuf then parses only the
graph (a few MB for a 7B decoder), and the importer makes each such initializer a
memory-mapped constant (engine/runtime/lazy.py) instead of a copy. External data of a
model opened from a path (a trusted file: the user named it) is mapped the same way.
A stripped initializer keeps its name, dims and type, and is marked EXTERNAL so that
nothing reads data it no longer holds.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

from engine.relay.frontend.common import CorruptModelError
from engine.runtime.lazy import LazySource, mapped

MAP_MIN_BYTES = 4096
"""Initializers of at least this many bytes stay in their file; smaller ones (shapes,
scalars, norms of small models) are read, as passes compute on their values."""

_MODEL_GRAPH, _GRAPH_INITIALIZER = 7, 5
_TENSOR_NAME, _TENSOR_RAW_DATA, _TENSOR_DATA_LOCATION = 8, 9, 14
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


@dataclass(frozen=True, slots=True)
class MappedRef:
    """Where an initializer's bytes are: `length` bytes at `offset` of `path`."""

    path: Path
    offset: int
    length: int


def _varint(buf: mmap.mmap | bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise CorruptModelError("not a valid ONNX model (a protobuf varint runs past "
                                    "its message)")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf: mmap.mmap | bytes, pos: int, end: int
            ) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, field start, value start, field end) of each field."""
    while pos < end:
        start = pos
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        value = pos
        if wire == _VARINT:
            _, pos = _varint(buf, pos, end)
        elif wire == _I64:
            pos += 8
        elif wire == _I32:
            pos += 4
        elif wire == _LEN:
            length, value = _varint(buf, pos, end)
            pos = value + length
        else:
            raise CorruptModelError(f"not a valid ONNX model (protobuf wire type {wire})")
        if pos > end:
            raise CorruptModelError("not a valid ONNX model (a protobuf field runs past its "
                                    "message: truncated?)")
        yield number, wire, start, value, pos


def _length_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _LEN) + _encode_varint(len(payload)) + payload


def _strip_tensor(buf: mmap.mmap, start: int, end: int, path: Path, min_bytes: int,
                  refs: dict[str, MappedRef]) -> bytes | None:
    """The tensor without its raw_data when that is big (noted in `refs`), else None."""
    name, raw = None, None
    for number, wire, _, value, stop in _fields(buf, start, end):
        if number == _TENSOR_NAME and wire == _LEN:
            name = bytes(buf[value:stop]).decode("utf-8", "replace")
        elif number == _TENSOR_RAW_DATA and wire == _LEN and stop - value >= min_bytes:
            raw = (value, stop)
    if name is None or raw is None or name in refs:
        return None
    refs[name] = MappedRef(path, raw[0], raw[1] - raw[0])
    kept = bytearray()
    for number, _, field_start, _, stop in _fields(buf, start, end):
        if number not in (_TENSOR_RAW_DATA, _TENSOR_DATA_LOCATION):
            kept += buf[field_start:stop]
    kept += _encode_varint(_TENSOR_DATA_LOCATION << 3 | _VARINT) + _encode_varint(
        TensorProto.EXTERNAL)
    return bytes(kept)


def _strip_graph(buf: mmap.mmap, start: int, end: int, path: Path, min_bytes: int,
                 refs: dict[str, MappedRef]) -> bytes:
    out = bytearray()
    for number, wire, field_start, value, stop in _fields(buf, start, end):
        stripped = None
        if number == _GRAPH_INITIALIZER and wire == _LEN:
            stripped = _strip_tensor(buf, value, stop, path, min_bytes, refs)
        out += buf[field_start:stop] if stripped is None else _length_field(number, stripped)
    return bytes(out)


def strip_weights(path: Path, min_bytes: int = MAP_MIN_BYTES
                  ) -> tuple[bytes, dict[str, MappedRef]]:
    """The model file's bytes without its big inline initializers, and where they are."""
    refs: dict[str, MappedRef] = {}
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        if size == 0:
            return b"", refs
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            _read_sparsely(buf)
            out = bytearray()
            for number, wire, field_start, value, stop in _fields(buf, 0, size):
                if number == _MODEL_GRAPH and wire == _LEN:
                    out += _length_field(number, _strip_graph(buf, value, stop, path,
                                                              min_bytes, refs))
                else:
                    out += buf[field_start:stop]
    return bytes(out), refs


def _read_sparsely(buf: mmap.mmap) -> None:
    """Tell the kernel the scan reads a few bytes here and there: a file not in the page
    cache (an upload written past it, explorer/upload_copy.py) is then read a page per
    initializer header, not a read-ahead window of MBs of weights each (0.05 s for
    BERT-12's 418 MB rather than 0.4-0.5 s)."""
    if hasattr(mmap, "MADV_RANDOM"):
        buf.madvise(mmap.MADV_RANDOM)


def mappable_dtype(tensor: TensorProto) -> np.dtype | None:
    """The numpy dtype whose bytes are the tensor's raw_data, for plain numeric types."""
    if tensor.data_type in (TensorProto.STRING, TensorProto.UNDEFINED, TensorProto.BFLOAT16) \
            or tensor.data_type >= TensorProto.FLOAT8E4M3FN:
        return None
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type))
    except (KeyError, TypeError, ValueError):
        return None


def mapped_source(tensor: TensorProto, ref: MappedRef) -> LazySource | None:
    """The initializer as a memory-mapped lazy source (None: not a plain numeric type)."""
    dtype = mappable_dtype(tensor)
    if dtype is None:
        return None
    dims = tuple(int(d) for d in tensor.dims)
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if ref.length != expected:
        raise CorruptModelError(f"initializer {tensor.name!r} holds {ref.length} bytes; its "
                                f"shape {list(dims)} of {dtype} needs {expected} (truncated?)")
    return mapped(ref.path, ref.offset, dims, dtype)


def read_ref(ref: MappedRef, name: str) -> bytes:
    """The bytes of a stripped initializer (for types that are not mapped)."""
    try:
        with open(ref.path, "rb") as handle:
            handle.seek(ref.offset)
            data = handle.read(ref.length)
    except OSError as err:
        raise CorruptModelError(f"cannot read the data of {name!r}: {err.strerror}") from None
    if len(data) != ref.length:
        raise CorruptModelError(f"the data of {name!r} is truncated")
    return data


__all__ = ["MAP_MIN_BYTES", "MappedRef", "mappable_dtype", "mapped_source", "read_ref",
           "strip_weights"]
