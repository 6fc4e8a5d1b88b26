"""Reading a TFLite flatbuffer with the `tflite` package into plain, checked records.

Everything that touches the flatbuffer happens here, inside one guard, so a
corrupt or truncated file is a CorruptModelError and never a struct/Index
error from deep inside flatbuffers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

from engine.relay.frontend.common import CorruptModelError, check_elements
from engine.relay.frontend.tflite.sparse import DimLevel, Sparsity, densify

_OP_NAMES = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
_OPTION_NAMES = {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_")}
TFLITE_DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool",
                 7: "int16", 9: "int8", 10: "float64", 12: "uint64", 15: "uint32",
                 16: "uint16", 18: "bfloat16"}
_PARSE_ERRORS = (struct.error, IndexError, ValueError, TypeError, AttributeError, OverflowError,
                 UnicodeDecodeError)


@dataclass
class Quantization:
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int


@dataclass
class TensorRecord:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    data: np.ndarray | None
    quant: Quantization | None


@dataclass
class OpRecord:
    index: int
    op_type: str
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class TFLiteGraph:
    tensors: list[TensorRecord]
    ops: list[OpRecord]
    inputs: list[int]
    outputs: list[int]


def parse_tflite(data: bytes) -> TFLiteGraph:
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise CorruptModelError("not a TFLite model (no 'TFL3' flatbuffer identifier)")
    try:
        return _parse(data)
    except _PARSE_ERRORS as err:
        raise CorruptModelError(
            f"the TFLite flatbuffer is corrupt or truncated ({type(err).__name__}: {err})"
        ) from None


def _parse(data: bytes) -> TFLiteGraph:
    model = tflite.Model.GetRootAsModel(data, 0)
    if model.SubgraphsLength() < 1:
        raise CorruptModelError("the TFLite model has no subgraph")
    graph = model.Subgraphs(0)
    tensors = [_tensor(model, graph.Tensors(i), i, data) for i in range(graph.TensorsLength())]
    codes = [_op_name(model.OperatorCodes(i)) for i in range(model.OperatorCodesLength())]
    ops = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code_index = op.OpcodeIndex()
        if not 0 <= code_index < len(codes):
            raise CorruptModelError(f"operator {i} names opcode {code_index}, which is missing")
        ops.append(OpRecord(i, codes[code_index], _ints(op.InputsAsNumpy()),
                            _ints(op.OutputsAsNumpy()), _options(op)))
    inputs, outputs = _ints(graph.InputsAsNumpy()), _ints(graph.OutputsAsNumpy())
    for index in [*inputs, *outputs, *(t for op in ops for t in op.inputs + op.outputs)]:
        if index >= len(tensors):
            raise CorruptModelError(f"tensor index {index} is out of range ({len(tensors)})")
    return TFLiteGraph(tensors, ops, inputs, outputs)


def _ints(values: Any) -> list[int]:
    if isinstance(values, int):  # the tflite package returns 0 for an absent vector
        return []
    return [int(v) for v in values]


def _op_name(code: Any) -> str:
    value = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
    if value == BuiltinOperator.CUSTOM:
        custom = code.CustomCode()
        return f"CUSTOM:{custom.decode('utf-8', 'replace') if custom else '?'}"
    return _OP_NAMES.get(value, f"BUILTIN_{value}")


def _options(op: Any) -> dict[str, Any]:
    """The builtin options table as a dict of its scalar fields (`StrideW` -> value)."""
    kind = _OPTION_NAMES.get(op.BuiltinOptionsType())
    table = op.BuiltinOptions()
    if not kind or kind == "NONE" or table is None:
        return {}
    module = getattr(tflite, kind, None)
    if module is None:
        return {}
    options = module()
    options.Init(table.Bytes, table.Pos)
    out: dict[str, Any] = {}
    for attr in dir(options):
        if attr[:1].isupper() and not attr.startswith(("Init", "GetRoot")) and \
                not attr.endswith(("Length", "IsNone")):
            value = getattr(options, attr)
            if callable(value):
                try:
                    out[attr] = value()
                except TypeError:
                    continue  # vector accessors take an index; read via ...AsNumpy
    return out


def _quant(tensor: Any) -> Quantization | None:
    q = tensor.Quantization()
    if q is None or q.ScaleLength() == 0:
        return None
    return Quantization(np.asarray(q.ScaleAsNumpy(), dtype="float32"),
                        np.asarray(q.ZeroPointAsNumpy(), dtype="int64"),
                        int(q.QuantizedDimension()))


def _tensor(model: Any, tensor: Any, index: int, raw: bytes) -> TensorRecord:
    name = (tensor.Name() or b"").decode("utf-8", "replace")
    shape = tuple(_ints(tensor.ShapeAsNumpy()))
    check_elements(shape, f"tensor {name!r}")
    ttype = int(tensor.Type())
    dtype = TFLITE_DTYPES.get(ttype)
    if dtype is None:
        raise CorruptModelError(f"tensor {name!r} has unsupported element type {ttype}")
    return TensorRecord(index, name, shape, dtype, _buffer(model, tensor, name, shape, dtype, raw),
                        _quant(tensor))


def _buffer(model: Any, tensor: Any, name: str, shape: tuple[int, ...], dtype: str,
            raw: bytes) -> np.ndarray | None:
    index = int(tensor.Buffer())
    if index <= 0 or index >= model.BuffersLength():
        return None
    buffer = model.Buffers(index)
    offset = int(buffer.Offset()) if hasattr(buffer, "Offset") else 0
    if offset > 1:
        size = int(buffer.Size())
        payload = raw[offset:offset + size]
        if len(payload) != size:
            raise CorruptModelError(f"the data of tensor {name!r} is truncated")
    else:
        data = buffer.DataAsNumpy()
        if isinstance(data, int):
            return None
        payload = data.tobytes()
    sparsity = _sparsity(tensor)
    if sparsity is not None:
        values = np.frombuffer(payload, dtype=dtype)
        try:
            return densify(values, shape, sparsity)
        except ValueError as err:
            raise CorruptModelError(f"sparse tensor {name!r}: {err}") from None
    expected = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if len(payload) != expected:
        raise CorruptModelError(f"tensor {name!r} holds {len(payload)} bytes, its shape "
                                f"{list(shape)} of {dtype} needs {expected} (truncated?)")
    return np.frombuffer(payload, dtype=dtype).reshape(shape)


_INDEX_VECTORS = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}


def _index_vector(kind: int, table: Any) -> np.ndarray:
    if kind == 0 or table is None:
        return np.zeros(0, dtype=np.int64)
    if kind not in _INDEX_VECTORS:
        raise CorruptModelError(f"unknown sparse index vector type {kind}")
    vector = _INDEX_VECTORS[kind]()
    vector.Init(table.Bytes, table.Pos)
    values = vector.ValuesAsNumpy()
    return np.zeros(0, dtype=np.int64) if isinstance(values, int) else values.astype(np.int64)


def _sparsity(tensor: Any) -> Sparsity | None:
    table = tensor.Sparsity()
    if table is None:
        return None
    levels = []
    for i in range(table.DimMetadataLength()):
        dim = table.DimMetadata(i)
        levels.append(DimLevel(int(dim.Format()), int(dim.DenseSize()),
                               _index_vector(int(dim.ArraySegmentsType()), dim.ArraySegments()),
                               _index_vector(int(dim.ArrayIndicesType()), dim.ArrayIndices())))
    return Sparsity(tuple(_ints(table.TraversalOrderAsNumpy())),
                    tuple(_ints(table.BlockMapAsNumpy())), tuple(levels))
