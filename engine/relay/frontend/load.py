"""`load(path_or_bytes)`: pick the frontend by content, import, return an ImportResult.

Formats, by what the bytes say (a file extension never overrides a magic number):
- TFLite: the flatbuffer file identifier `TFL3` at bytes 4..8;
- PyTorch: a zip archive (`PK\\x03\\x04`) written by `torch.export.save` (`.pt2`);
- Relay text: starts with `#[version` or `def @`, or any other content in a file named
  `*.relay` / `*.txt`; parsed with the engine's parser, its errors naming the file;
- ONNX: a protobuf ModelProto (protobuf has no magic number, so it is tried last).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.ir.expr import Call, Expr, Function, Tuple, TupleGetItem, Var
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.traversal import post_order
from engine.ir.type import TensorType
from engine.relay.frontend import result as res
from engine.relay.frontend.common import CorruptModelError, UnknownFormatError
from engine.relay.frontend.result import ImportResult
from engine.relay.parser import parse

Source = str | os.PathLike | bytes | bytearray | memoryview
ShapeDict = Mapping[str, Sequence[int]] | None

_ZIP_MAGIC = b"PK\x03\x04"
RELAY_SUFFIXES = (".relay", ".txt")


def detect_format(data: bytes, file_name: str | None = None) -> str:
    """"onnx", "tflite", "pytorch" or "relay"; UnknownFormatError for anything else.
    `file_name` only matters for content no magic number claims (Relay text files)."""
    if not data:
        raise CorruptModelError("the file is empty")
    if len(data) >= 8 and data[4:8] == b"TFL3":
        return "tflite"
    if data.startswith(_ZIP_MAGIC):
        return "pytorch"
    head = data[:256].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"#[version", b"def @")):
        return "relay"
    if file_name is not None and file_name.lower().endswith(RELAY_SUFFIXES):
        return "relay"
    if _looks_like_protobuf(data):
        return "onnx"
    raise UnknownFormatError(
        "unrecognized file: not ONNX (protobuf), TFLite (flatbuffer 'TFL3'), a torch.export "
        ".pt2 archive, or Relay text")


def _looks_like_protobuf(data: bytes) -> bool:
    """ModelProto's first field is a varint or a length-delimited field with a small tag."""
    first = data[0]
    field_number, wire_type = first >> 3, first & 7
    return 1 <= field_number <= 20 and wire_type in (0, 2)


HEAD_BYTES = 4096
"""What format detection reads of a file (an ONNX file is then read by its importer,
which leaves big weights in the file)."""


def _read(path: Path, limit: int = -1) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError as err:
        raise CorruptModelError(f"cannot read {path.name}: {err.strerror}") from None


def load(path_or_bytes: Source, shape: ShapeDict = None, dtype: Any = None,
         external_data: bool = True) -> ImportResult:
    """Import a model file of any supported format (detected from its content).

    An ONNX file's big initializers stay in the file, memory-mapped (so do those of its
    external data files). With `external_data=False` the file is a world of its own: an
    ONNX tensor whose data lives in another file is refused (UnsafeModelError) instead of
    being read from the file's folder (for uploads, whose folder holds other people's
    files)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
        fmt = detect_format(data)
        if fmt == "onnx":
            return _load_onnx(data, shape, dtype, external_data)
        return _LOADERS[fmt](data, None, shape, dtype)
    path = Path(path_or_bytes)
    fmt = detect_format(_read(path, HEAD_BYTES), path.name)
    if fmt == "onnx":
        return _load_onnx(path, shape, dtype, external_data)
    return _LOADERS[fmt](_read(path), path, shape, dtype)


def _load_onnx(source: bytes | Path, shape: ShapeDict, dtype: Any,
               external_data: bool) -> ImportResult:
    from engine.relay.frontend.onnx import import_onnx

    return import_onnx(source, shape=shape, dtype=dtype or "float32",
                       external_data=external_data)


def _load_tflite(data: bytes, path: Path | None, shape: ShapeDict, dtype: Any) -> ImportResult:
    from engine.relay.frontend.tflite import import_tflite

    return import_tflite(data, shape_dict=shape, dtype_dict=dtype)


def _load_pytorch(data: bytes, path: Path | None, shape: ShapeDict, dtype: Any) -> ImportResult:
    from engine.relay.frontend.pytorch import import_pt2

    return import_pt2(data)


def _load_relay(data: bytes, path: Path | None, shape: ShapeDict, dtype: Any) -> ImportResult:
    mod = parse(relay_text(data), source_name=path.name if path is not None else "<string>")
    main = _main(mod)
    if main is None:
        raise CorruptModelError("the Relay text defines no function @main")
    params = main.params
    inputs = [res.tensor_entry(p.name_hint, _dims(p.type_annotation), _dtype(p.type_annotation))
              for p in params]
    return ImportResult(mod, {}, "relay", res.frontend_graph(relay_layers(main), inputs, []),
                        ())


def relay_layers(main: Function) -> list[dict[str, Any]]:
    """The layers of Relay text: one per layer name its operator calls' spans carry (the
    span comments, or `line N` where the text has none), in dataflow order; a layer's
    inputs are the layers (or parameters) its calls read."""
    layers: dict[str, dict[str, Any]] = {}
    for node in post_order(main.body):
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            continue
        feeds = [name for arg in node.args for name in _producers(arg)]
        for name in node.span.source_names() if node.span else ():
            layer = layers.setdefault(name, res.layer_entry(name, node.op.name, [], [name]))
            layer["inputs"].extend(f for f in feeds if f != name and f not in layer["inputs"])
    return list(layers.values())


def _producers(arg: Expr) -> tuple[str, ...]:
    while isinstance(arg, TupleGetItem):
        arg = arg.tuple_value
    if isinstance(arg, Var):
        return (arg.name_hint,)
    if isinstance(arg, Tuple):
        return tuple(n for field in arg.fields for n in _producers(field))
    if isinstance(arg, Call) and arg.span:
        return arg.span.source_names()
    return ()


def relay_text(data: bytes) -> str:
    """The text of a Relay file; CorruptModelError when it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptModelError(f"Relay text is not valid UTF-8 (byte {err.start}: "
                                f"{err.reason})") from None


def _main(mod: IRModule) -> Function | None:
    return next((f for gv, f in mod.items() if gv.name_hint == "main"), None)


def _dims(ty: Any) -> list[Any]:
    return [d if isinstance(d, int) else -1 for d in ty.shape] if isinstance(ty, TensorType) \
        else []


def _dtype(ty: Any) -> str:
    return ty.dtype if isinstance(ty, TensorType) else "unknown"


_LOADERS = {"tflite": _load_tflite, "pytorch": _load_pytorch, "relay": _load_relay}


def describe(item: ImportResult | Source) -> dict[str, Any]:
    """A JSON-able summary of an import (or of a model file): format, inputs, outputs, layer
    and op counts, parameter count and bytes, warnings."""
    result = item if isinstance(item, ImportResult) else load(item)
    graph = result.graph
    ops = Counter(layer["op_type"] for layer in graph.get("layers", []))
    main = _main(result.mod)
    return {
        "format": result.format,
        "inputs": graph.get("inputs", []),
        "outputs": graph.get("outputs", []),
        "num_layers": len(graph.get("layers", [])),
        "op_types": dict(sorted(ops.items())),
        "num_params": sum(p.size for p in result.params.values()),
        "param_bytes": sum(p.nbytes for p in result.params.values()),
        "num_function_params": len(main.params) if isinstance(main, Function) else 0,
        "warnings": list(result.warnings),
    }
