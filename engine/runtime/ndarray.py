"""A read-only numpy array with TVM's NDArray reading API (`.numpy()`, `.shape`)."""

from __future__ import annotations

from typing import Any

import numpy as np


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
    """Wraps a numpy array without copying it and without letting it change."""

    __slots__ = ("_array",)

    def __init__(self, data: Any) -> None:
        if isinstance(data, NDArray):
            data = data.numpy()
        arr = np.asarray(data)
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
        self._array: np.ndarray = arr

    def numpy(self) -> np.ndarray:
        return self._array

    asnumpy = numpy

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._array.shape)

    @property
    def dtype(self) -> str:
        return str(self._array.dtype)

    @property
    def size(self) -> int:
        return int(self._array.size)

    @property
    def nbytes(self) -> int:
        return int(self._array.nbytes)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._array if dtype is None else self._array.astype(dtype)

    def __repr__(self) -> str:
        return f"NDArray(shape={self.shape}, dtype={self.dtype})"


def array(data: Any, device: Device | None = None) -> NDArray:
    return NDArray(np.array(data) if not isinstance(data, np.ndarray) else data)
