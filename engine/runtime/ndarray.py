"""A read-only numpy array with TVM's NDArray reading API (`.numpy()`, `.shape`)."""

from __future__ import annotations

import zlib
from collections.abc import Hashable
from typing import Any

import numpy as np

from engine.runtime.lazy import LazySource


class Device:
    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type: str = "cpu", device_id: int = 0) -> None:
        self.device_type = device_type
        self.device_id = device_id

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"


def cpu(dev_id: int = 0) -> Device:
    return Device("cpu", dev_id)


def device(dev_type: str = "cpu", dev_id: int = 0) -> Device:
    return Device(dev_type, dev_id)


class NDArray:
    """Wraps a numpy array without copying it and without letting it change, or a
    `LazySource` (a memory-mapped weight, a deferred computation: engine/runtime/lazy.py)
    whose bytes exist only when `numpy()` asks for them; shape, dtype, size and
    `content_key()` never need them."""

    __slots__ = ("_array", "_lazy")

    def __init__(self, data: Any) -> None:
        self._lazy: LazySource | None = None
        if isinstance(data, LazySource):
            self._array: np.ndarray | None = None
            self._lazy = data
            return
        if isinstance(data, NDArray):
            if data._lazy is not None:
                self._array, self._lazy = None, data._lazy
                return
            data = data.numpy()
        arr = np.asarray(data)
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
        self._array = arr

    def numpy(self) -> np.ndarray:
        if self._array is None:
            return self._lazy.load()  # type: ignore[union-attr]
        return self._array

    asnumpy = numpy

    @property
    def lazy(self) -> LazySource | None:
        """The source of a lazy array (None: the bytes are in memory)."""
        return self._lazy

    @property
    def shape(self) -> tuple[int, ...]:
        if self._lazy is not None:
            return self._lazy.shape
        return tuple(self._array.shape)  # type: ignore[union-attr]

    @property
    def dtype(self) -> str:
        if self._lazy is not None:
            return self._lazy.dtype
        return str(self._array.dtype)  # type: ignore[union-attr]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        if self._lazy is not None:
            return self._lazy.size
        return int(self._array.size)  # type: ignore[union-attr]

    @property
    def nbytes(self) -> int:
        if self._lazy is not None:
            return self._lazy.nbytes
        return int(self._array.nbytes)  # type: ignore[union-attr]

    def content_key(self) -> Hashable:
        """What equal contents share: a lazy source's key (its bytes unread), else the
        dtype, shape and a checksum of the bytes."""
        if self._lazy is not None:
            return self._lazy.key
        arr = np.ascontiguousarray(self._array)
        return (str(arr.dtype), arr.shape, zlib.crc32(arr.view(np.uint8).reshape(-1).data))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __repr__(self) -> str:
        return f"NDArray(shape={self.shape}, dtype={self.dtype})"


def array(data: Any, device: Device | None = None) -> NDArray:
    return NDArray(np.array(data) if not isinstance(data, np.ndarray) else data)
