"""Static shapes and dtypes of every tensor, from onnx's own shape inference.

Inference runs on a light copy of the graph: the given input shapes pinned,
big initializers replaced by typed inputs (their values are not needed for
shapes; small ones are kept so shape-computing subgraphs propagate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx
from onnx import helper

from engine.relay.frontend.onnx.util import onnx_dtype

TensorInfo = tuple[tuple[int | None, ...] | None, str | None]
_KEEP_INITIALIZER_ELEMENTS = 4096


def _dims(type_proto: onnx.TypeProto) -> tuple[int | None, ...] | None:
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None
                 for d in tensor.shape.dim)


def _light_graph(graph: onnx.GraphProto, pinned: Mapping[str, Sequence[int]],
                 nodes: Sequence[onnx.NodeProto]) -> onnx.GraphProto:
    inputs, initializers = [], []
    seen: set[str] = set()
    declared = {info.name: info for info in graph.input}
    for tensor in graph.initializer:
        seen.add(tensor.name)
        count = 1
        for d in tensor.dims:
            count *= d
        if count <= _KEEP_INITIALIZER_ELEMENTS and tensor.data_location != onnx.TensorProto.EXTERNAL:
            initializers.append(tensor)
            if tensor.name in declared:  # IR < 4 lists every initializer as an input too
                inputs.append(declared[tensor.name])
        else:
            inputs.append(helper.make_tensor_value_info(tensor.name, tensor.data_type,
                                                        list(tensor.dims)))
    for info in graph.input:
        if info.name in seen:
            continue
        copy = onnx.ValueInfoProto()
        copy.CopyFrom(info)
        if info.name in pinned:
            dims = copy.type.tensor_type.shape.dim
            del dims[:]
            for d in pinned[info.name]:
                dims.add().dim_value = int(d)
        inputs.append(copy)
    return helper.make_graph(list(nodes), graph.name or "g", inputs, list(graph.output),
                             initializer=initializers, value_info=list(graph.value_info))


def light_model(model: onnx.ModelProto, pinned: Mapping[str, Sequence[int]],
                nodes: Sequence[onnx.NodeProto]) -> onnx.ModelProto:
    """The model with `nodes` (topologically sorted), pinned input shapes, and big
    initializers as typed inputs: what the checker and shape inference need, cheaply."""
    light = helper.make_model(_light_graph(model.graph, pinned, nodes),
                              opset_imports=list(model.opset_import))
    light.ir_version = model.ir_version
    light.functions.extend(model.functions)
    return light


def infer_tensor_info(light: onnx.ModelProto) -> tuple[dict[str, TensorInfo], str | None]:
    """name -> (shape with None for unknown dims, dtype) for every tensor onnx could infer,
    and a warning when inference failed."""
    try:
        inferred = onnx.shape_inference.infer_shapes(light, check_type=False, strict_mode=False,
                                                     data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError,
            RuntimeError, ValueError) as err:
        return {}, f"ONNX shape inference failed ({str(err).strip().splitlines()[0]}); " \
                   "shapes come from the declared inputs only"
    out: dict[str, TensorInfo] = {}
    graph = inferred.graph
    for info in [*graph.input, *graph.value_info, *graph.output]:
        elem = info.type.tensor_type.elem_type
        out[info.name] = (_dims(info.type), onnx_dtype(elem) if elem else None)
    return out, None
