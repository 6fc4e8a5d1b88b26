"""Frontends (TVM's `relay.frontend`): ONNX, TFLite and PyTorch importers that fill spans with
the frontend layer names, and `load(path_or_bytes)` that picks the importer by content."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from engine.relay.frontend.common import (
    ConversionError,
    CorruptModelError,
    InvalidGraphError,
    TensorTooLargeError,
    UnknownFormatError,
    UnsafeModelError,
    set_span,
)
from engine.relay.frontend.result import ImportResult

_LAZY: dict[str, tuple[str, str]] = {
    "from_onnx": ("engine.relay.frontend.onnx", "from_onnx"),
    "from_tflite": ("engine.relay.frontend.tflite", "from_tflite"),
    "from_pytorch": ("engine.relay.frontend.pytorch", "from_pytorch"),
    "load": ("engine.relay.frontend.load", "load"),
    "describe": ("engine.relay.frontend.load", "describe"),
    "detect_format": ("engine.relay.frontend.load", "detect_format"),
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
    "ConversionError", "CorruptModelError", "ImportResult", "InvalidGraphError",
    "TensorTooLargeError", "UnknownFormatError", "UnsafeModelError", "describe",
    "detect_format", "from_onnx", "from_pytorch", "from_tflite", "load", "set_span",
]
