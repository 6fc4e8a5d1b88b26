"""What an import returns: the module, its params, and the frontend graph the explorer shows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.ir.module import IRModule
from engine.runtime.ndarray import NDArray


@dataclass(frozen=True, eq=False)
class ImportResult:
    """`mod`, `params` (name -> NDArray), `format` ("onnx" | "tflite" | "pytorch" | "relay"),
    `graph` (docs/PROTOCOL.md FrontendGraph, JSON-able) and import `warnings`."""

    mod: IRModule
    params: dict[str, NDArray]
    format: str
    graph: dict[str, Any]
    warnings: tuple[str, ...] = field(default=())


def json_float(value: float) -> float | str:
    """A float as JSON can hold it: infinities and NaN (an attention mask's -inf fill, a
    clip without a bound) become their text, "-inf", "inf", "nan"."""
    return value if math.isfinite(value) else str(value)


def json_value(value: Any) -> Any:
    """An attribute value made JSON-able (arrays become lists, bytes become text)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        if value.size > 64:
            return f"<tensor {list(value.shape)} {value.dtype}>"
        return json_value(value.tolist())
    if isinstance(value, np.generic):
        return json_value(value.item())
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, float):
        return json_float(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def layer_entry(name: str, op_type: str, inputs: Sequence[str], outputs: Sequence[str],
                attrs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "op_type": op_type, "inputs": list(inputs), "outputs": list(outputs),
            "attrs": {str(k): json_value(v) for k, v in (attrs or {}).items()}}


def tensor_entry(name: str, shape: Sequence[Any], dtype: str) -> dict[str, Any]:
    """A graph input or output for display: a dimension is its size, the exporter's symbol
    for it (ONNX's `dim_param`, e.g. "batch") or "?" when it is unknown and unnamed."""
    dims = [_display_dim(int(x) if isinstance(x, (int, np.integer)) else x) for x in shape]
    return {"name": name, "shape": dims, "dtype": str(dtype)}


def _display_dim(dim: Any) -> int | str:
    if isinstance(dim, int):
        return dim if dim >= 0 else "?"
    if isinstance(dim, str) and dim.strip():
        return dim.strip()
    return "?"


def frontend_graph(layers: list[dict[str, Any]], inputs: list[dict[str, Any]],
                   outputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"layers": layers, "inputs": inputs, "outputs": outputs}
