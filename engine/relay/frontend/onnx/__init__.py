"""ONNX frontend: `from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True)`."""

from __future__ import annotations

from collections.abc import Mapping

from engine.ir.module import IRModule
from engine.relay.frontend.onnx.importer import OnnxImporter, Pin
from engine.relay.frontend.onnx.model import (
    ModelSource,
    inline_local_functions,
    load_external_data,
    read_source,
)
from engine.relay.frontend.result import ImportResult
from engine.runtime.ndarray import NDArray


def import_onnx(model: ModelSource, shape: Mapping[str, Pin] | None = None,
                dtype: str | Mapping[str, str] = "float32", opset: int | None = None,
                freeze_params: bool = True, external_data: bool = True) -> ImportResult:
    """Import an ONNX model (ModelProto, bytes or path) into an ImportResult. `shape` pins
    an input's shape; a sequence input's, a list of its element shapes; an optional
    input's, None when it is empty. From a path, big initializers stay in the file
    (memory-mapped constants, weights.py), external data files beside it included;
    `external_data=False` refuses external data (an upload reads no other file)."""
    proto, base_dir, refs = read_source(model)
    load_external_data(proto, base_dir if external_data else None, refs)
    proto = inline_local_functions(proto)
    mod, params, graph, warnings = OnnxImporter(proto, shape, dtype, opset, freeze_params,
                                                refs).run()
    return ImportResult(mod, params, "onnx", graph, tuple(warnings))


def from_onnx(model: ModelSource, shape: Mapping[str, Pin] | None = None,
              dtype: str | Mapping[str, str] = "float32", opset: int | None = None,
              freeze_params: bool = True) -> tuple[IRModule, dict[str, NDArray]]:
    """TVM's `relay.frontend.from_onnx`: returns `(mod, params)`."""
    result = import_onnx(model, shape, dtype, opset, freeze_params)
    return result.mod, result.params


__all__ = ["from_onnx", "import_onnx"]
