"""Frontends (TVM's `relay.frontend`): ONNX, TFLite and PyTorch importers that fill spans with
the frontend layer names, and `load(path_or_bytes)` that picks the importer by content."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from engine.relay.frontend.common import (
    ConversionError,
    CorruptModelError,
    DynamicShapeError,
    InvalidGraphError,
    TensorTooLargeError,
    UnknownFormatError,
    UnsafeModelError,
    set_span,
)
from engine.relay.frontend.load import describe, detect_format, load
from engine.relay.frontend.result import ImportResult

# (`load` is imported eagerly: the submodule `frontend.load` must not shadow the function.)

_LAZY: dict[str, tuple[str, str]] = {
    "from_onnx": ("engine.relay.frontend.onnx", "from_onnx"),
    "from_tflite": ("engine.relay.frontend.tflite", "from_tflite"),
    "from_pytorch": ("engine.relay.frontend.pytorch", "from_pytorch"),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(
            f"module 'engine.relay.frontend' has no attribute {name!r}") from None
    value = getattr(import_module(module_name), attr)
    globals()[name] = value
    return value


__all__ = [
    "ConversionError", "CorruptModelError", "DynamicShapeError", "ImportResult", "InvalidGraphError",
    "TensorTooLargeError", "UnknownFormatError", "UnsafeModelError", "describe",
    "detect_format", "from_onnx", "from_pytorch", "from_tflite", "load", "set_span",
]
