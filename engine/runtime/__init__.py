"""Runtime values: NDArray, the device handles TVM code expects."""

from engine.runtime.ndarray import NDArray, array, cpu, device

__all__ = ["NDArray", "array", "cpu", "device"]
