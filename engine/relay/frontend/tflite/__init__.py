"""TFLite frontend: `from_tflite(model, shape_dict=None, dtype_dict=None)` (TVM's signature).

`model` is a `tflite.Model` (as TVM takes it), or the flatbuffer bytes, or a path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.ir.module import IRModule
from engine.relay.frontend.common import CorruptModelError
from engine.relay.frontend.result import ImportResult
from engine.relay.frontend.tflite.importer import TFLiteImporter
from engine.relay.frontend.tflite.model import parse_tflite
from engine.runtime.ndarray import NDArray


def _model_bytes(model: Any) -> bytes:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        try:
            return Path(model).read_bytes()
        except OSError as err:
            raise CorruptModelError(f"cannot read {Path(model).name}: {err.strerror}") from None
    raw = getattr(model, "_tab", None)
    if raw is not None:  # a tflite.Model: its whole flatbuffer
        return bytes(raw.Bytes)
    raise TypeError(f"from_tflite takes a tflite.Model, bytes or a path, not {type(model)}")


def import_tflite(model: Any, shape_dict: Mapping[str, Sequence[int]] | None = None,
                  dtype_dict: Mapping[str, str] | str | None = None) -> ImportResult:
    graph = parse_tflite(_model_bytes(model))
    mod, frontend_graph, warnings = TFLiteImporter(graph, shape_dict, dtype_dict).run()
    return ImportResult(mod, {}, "tflite", frontend_graph, tuple(warnings))


def from_tflite(model: Any, shape_dict: Mapping[str, Sequence[int]] | None = None,
                dtype_dict: Mapping[str, str] | str | None = None
                ) -> tuple[IRModule, dict[str, NDArray]]:
    """TVM's `relay.frontend.from_tflite`: returns `(mod, params)`."""
    result = import_tflite(model, shape_dict, dtype_dict)
    return result.mod, result.params


__all__ = ["from_tflite", "import_tflite"]
