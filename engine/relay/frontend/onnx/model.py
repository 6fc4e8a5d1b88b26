"""Reading an ONNX file safely: decode, external data inside the model's folder, size guards,
topological order, and the onnx checker, each failure a clear FrontendError."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper

from engine.relay.frontend.common import (
    CorruptModelError,
    InvalidGraphError,
    UnsafeModelError,
    check_elements,
)
from engine.relay.frontend.onnx.weights import MAP_MIN_BYTES, MappedRef, read_ref, strip_weights

ModelSource = bytes | bytearray | memoryview | str | os.PathLike | onnx.ModelProto


def decode_model(data: bytes) -> onnx.ModelProto:
    """Parse ONNX protobuf bytes; an empty, corrupt or non-ONNX payload is a CorruptModelError."""
    if not data:
        raise CorruptModelError("the ONNX file is empty")
    try:
        model = onnx.load_model_from_string(bytes(data))
    except (DecodeError, ValueError, RuntimeError) as err:
        raise CorruptModelError(
            f"not a valid ONNX model (protobuf decoding failed: {err}); "
            "the file may be truncated or of another format") from None
    if not model.HasField("graph") or not (len(model.graph.node) or len(model.graph.output)):
        raise CorruptModelError("not an ONNX model: the protobuf holds no graph")
    return model


def read_source(source: ModelSource) -> tuple[onnx.ModelProto, Path | None,
                                             dict[str, MappedRef]]:
    """The ModelProto, the folder its external data may live in (None for bytes), and
    where the big initializers a file holds inline lie in it (weights.py: a file's are
    left there, not copied)."""
    if isinstance(source, onnx.ModelProto):
        return source, None, {}
    if isinstance(source, (bytes, bytearray, memoryview)):
        return decode_model(bytes(source)), None, {}
    path = Path(source).resolve()
    try:
        data, refs = strip_weights(path)
    except OSError as err:
        raise CorruptModelError(f"cannot read {path.name}: {err.strerror}") from None
    return decode_model(data), path.parent, refs


def _external_tensors(graph: onnx.GraphProto, main: bool = True
                      ) -> Iterable[tuple[TensorProto, bool]]:
    """Every tensor of the model, with whether it is an initializer of the main graph."""
    for tensor in graph.initializer:
        yield tensor, main
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                yield attr.t, False
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                yield from _external_tensors(sub, False)


def _external_info(tensor: TensorProto) -> dict[str, str]:
    return {entry.key: entry.value for entry in tensor.external_data}


def load_external_data(model: onnx.ModelProto, base_dir: Path | None,
                       refs: dict[str, MappedRef] | None = None) -> None:
    """Resolve tensors stored in external files, refusing any path outside `base_dir`
    (None: the model may read no other file). With `refs`, a big initializer of the main
    graph is noted there (mapped by the importer, never read here); others are inlined."""
    for tensor, initializer in _external_tensors(model.graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        if refs is not None and tensor.name in refs and not tensor.external_data:
            continue  # stripped from the model file itself (weights.py)
        info = _external_info(tensor)
        location = info.get("location", "")
        if base_dir is None:
            raise UnsafeModelError(
                f"tensor {tensor.name!r} keeps its data in external file {location!r}, which "
                "an upload does not bring: save the model with its weights inside the file "
                "(torch.onnx.export(..., external_data=False), or onnx.save_model(model, path, "
                "save_as_external_data=False))")
        target = (base_dir / location).resolve()
        if os.path.isabs(location) or not target.is_relative_to(base_dir):
            raise UnsafeModelError(
                f"tensor {tensor.name!r} points to external data {location!r} outside the "
                "model's folder; refused")
        if not target.is_file():
            raise CorruptModelError(f"cannot read external data of {tensor.name!r}: no file "
                                    f"{location!r} beside the model")
        check_elements(tensor.dims, f"initializer {tensor.name!r}")
        ref = _external_ref(target, tensor.name, info)
        if refs is not None and initializer and ref.length >= MAP_MIN_BYTES:
            refs[tensor.name] = ref
            continue
        tensor.raw_data = read_ref(ref, tensor.name)
        del tensor.external_data[:]
        tensor.data_location = TensorProto.DEFAULT


def _external_ref(target: Path, name: str, info: dict[str, str]) -> MappedRef:
    """Where an external tensor's bytes are (its whole file from `offset` when no
    `length` is given)."""
    try:
        offset = int(info.get("offset", "0") or 0)
        size = target.stat().st_size
        length = int(info["length"]) if info.get("length") else size - offset
    except (OSError, ValueError) as err:
        raise CorruptModelError(f"cannot read external data of {name!r}: {err}") from None
    if offset < 0 or length < 0 or offset + length > size:
        raise CorruptModelError(f"external data of {name!r} is truncated")
    return MappedRef(target, offset, length)


def tensor_to_array(tensor: TensorProto, what: str) -> np.ndarray:
    """A TensorProto as numpy, after the size guard; short data is a CorruptModelError."""
    check_elements(tensor.dims, what)
    try:
        return numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError) as err:
        raise CorruptModelError(f"{what} has data that does not match its shape "
                                f"{list(tensor.dims)} (truncated?): {err}") from None


def check_declared_sizes(graph: onnx.GraphProto) -> None:
    """Declared sizes within the element limit, and no negative dimension (ONNX writes an
    unknown one as a symbol or leaves it unset, never as a negative number)."""
    for tensor in graph.initializer:
        _check_dims(list(tensor.dims), f"initializer {tensor.name!r}")
        check_elements(tensor.dims, f"initializer {tensor.name!r}")
    for info in [*graph.input, *graph.output, *graph.value_info]:
        dims = [d.dim_value if d.HasField("dim_value") else -1
                for d in info.type.tensor_type.shape.dim]
        _check_dims([d.dim_value for d in info.type.tensor_type.shape.dim
                     if d.HasField("dim_value")], f"tensor {info.name!r}")
        check_elements(dims, f"tensor {info.name!r}")


def _check_dims(dims: list[int], what: str) -> None:
    negative = [d for d in dims if d < 0]
    if negative:
        raise InvalidGraphError(f"{what} declares a negative dimension ({negative[0]})")


def topological_nodes(graph: onnx.GraphProto, outer: Iterable[str] = ()
                      ) -> list[onnx.NodeProto]:
    """The nodes in dependency order; an undefined input or a cycle is an InvalidGraphError.
    `outer`: the names a sub-graph sees from the scopes around it."""
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    available |= set(outer)
    producer: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for out in node.output:
            if out and out in producer:
                raise InvalidGraphError(f"tensor {out!r} is produced by two nodes")
            if out:
                producer[out] = index
    waiting: dict[int, int] = {}
    users: dict[int, list[int]] = {}
    for index, node in enumerate(graph.node):
        deps = set()
        for name in [*node.input, *sorted(implicit_inputs(node))]:
            if name in available and name not in producer:
                continue
            if name not in producer:
                raise InvalidGraphError(
                    f"node {node.name or node.op_type!r} ({node.op_type}) consumes tensor "
                    f"{name!r}, which no node, input or initializer defines")
            deps.add(producer[name])
        waiting[index] = len(deps)
        for dep in deps:
            users.setdefault(dep, []).append(index)
    return [graph.node[i] for i in _kahn(graph, waiting, users)]


def implicit_inputs(node: onnx.NodeProto) -> set[str]:
    """The outer names the sub-graphs of `node` read (an If branch reading a tensor of the
    graph around it): dependencies of the node as real as its inputs."""
    names: set[str] = set()
    for attr in node.attribute:
        for sub in [*attr.graphs, *([attr.g] if attr.HasField("g") else [])]:
            defined = {i.name for i in sub.input} | {t.name for t in sub.initializer}
            defined |= {out for inner in sub.node for out in inner.output}
            for inner in sub.node:
                names |= {n for n in [*inner.input, *implicit_inputs(inner)]
                          if n and n not in defined}
            names |= {o.name for o in sub.output if o.name not in defined}
    return names


def _kahn(graph: onnx.GraphProto, waiting: dict[int, int], users: dict[int, list[int]]) -> list[int]:
    ready = [i for i, n in waiting.items() if n == 0]
    ready.reverse()
    order: list[int] = []
    while ready:
        index = ready.pop()
        order.append(index)
        for user in reversed(users.get(index, [])):
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if len(order) != len(graph.node):
        stuck = [graph.node[i].name or graph.node[i].op_type for i, n in waiting.items() if n > 0]
        raise InvalidGraphError(f"the graph has a cycle through nodes {stuck[:8]}")
    return order


def inline_local_functions(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its model-local functions (torch.onnx's
    `export_modules_as_functions`: one function per module class) expanded where they are
    called, as onnxruntime runs them; the inlined nodes are named by onnx's inliner (the
    function's node name and a call suffix)."""
    if not model.functions:
        return model
    import onnx.inliner

    try:
        return onnx.inliner.inline_local_functions(model)
    except Exception as err:  # the inliner's C++ errors have no common type
        names = ", ".join(f"{f.domain}.{f.name}" for f in model.functions[:5])
        raise InvalidGraphError(f"cannot inline the model's local functions ({names}): "
                                f"{err}") from None


def run_checker(model: onnx.ModelProto) -> str | None:
    """onnx.checker on the (sorted, light) model: its complaint as a warning, never a refusal
    (onnxruntime runs models the checker dislikes; what we cannot convert fails later, by
    name)."""
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"the ONNX checker complains (imported anyway): {first}"
    return None


def opset_version(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return 1


def attribute_values(node: onnx.NodeProto) -> dict[str, Any]:
    """A node's attributes as Python values (tensors as numpy arrays)."""
    out: dict[str, Any] = {}
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.TENSOR:
            out[attr.name] = tensor_to_array(attr.t, f"attribute {attr.name!r} of {node.name!r}")
        elif attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            out[attr.name] = attr
        else:
            out[attr.name] = onnx.helper.get_attribute_value(attr)
    return out
