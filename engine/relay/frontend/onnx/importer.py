"""The ONNX graph importer: validate, scan for unsupported ops, convert node by node with
span filling, fold what is known at import time, build `main`.

Sub-graphs (If branches, Loop and Scan bodies) are converted by `import_subgraph` in a
scope nested in the current one (scope.py). A sequence is a Relay tuple and must have a
length known at import time; an optional must be known present or empty. A graph input
of either kind is pinned through `shape=`: a list of element shapes for a sequence,
None for an empty optional."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx

import engine.relay as relay
from engine.ir.errors import UnsupportedOperatorError
from engine.ir.expr import Constant, Expr, Function, Tuple, Var
from engine.ir.module import IRModule
from engine.ir.span import merge_spans
from engine.ir.type import AnyDim, TensorType, TupleType, Type
from engine.relay.frontend import result as res
from engine.relay.frontend.common import (
    ConversionError,
    LayerNamer,
    check_elements,
    fill_span_enabled,
    set_parameter_span,
    set_span,
)
from engine.relay.frontend.onnx import (  # noqa: F401 (register the converters)
    activation,
    attention,
    cache_ops,
    cast,
    classic,
    control,
    datadep,
    elemwise,
    image_ops,
    indexing,
    linear_attention,
    loss,
    nn,
    norm_ops,
    qlinear,
    quantize,
    reduce,
    rnn,
    rotary,
    scatter,
    sequence,
    signal,
    tensor,
)
from engine.relay.frontend.onnx.fold import fold_node
from engine.relay.frontend.onnx.model import (
    attribute_values,
    check_declared_sizes,
    opset_version,
    run_checker,
    tensor_to_array,
    topological_nodes,
)
from engine.relay.frontend.onnx.scope import EMPTY_OPTIONAL, Scope
from engine.relay.frontend.onnx.shapes import TensorInfo, infer_tensor_info, light_model
from engine.relay.frontend.onnx.table import NodeContext, Subgraph, lookup, supported_ops
from engine.relay.frontend.onnx.util import onnx_dtype
from engine.relay.frontend.onnx.weights import MappedRef, mapped_source, read_ref
from engine.runtime.ndarray import NDArray

MIN_OPSET, MAX_OPSET = 1, onnx.defs.onnx_opset_version()
_CONVERTER_ERRORS = (TypeError, ValueError, IndexError, KeyError, AttributeError)
_UNPINNED = object()
Pin = Sequence[Any] | None
"""What `shape=` gives an input: its shape; for a sequence, one shape per element; for an
optional, None when it is empty (else what its element takes)."""


def graph_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes of `graph` and of every sub-graph in it."""
    nodes = []
    for node in graph.node:
        nodes.append(node)
        for attr in node.attribute:
            for sub in [*attr.graphs, *([attr.g] if attr.HasField("g") else [])]:
                nodes.extend(graph_nodes(sub))
    return nodes


def op_key(node: onnx.NodeProto) -> str:
    """The converter-table key: the op type, prefixed by its domain outside the default one
    (`com.microsoft.FastGelu`)."""
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return f"{node.domain}.{node.op_type}"


def unsupported_lines(nodes: Sequence[onnx.NodeProto], model: onnx.ModelProto) -> list[str]:
    """One line per unsupported op: `unsupported: Op (domain, opset N) at node 'a', 'b'`."""
    versions = {entry.domain or "ai.onnx": int(entry.version) for entry in model.opset_import}
    where: dict[str, list[str]] = {}
    for index, node in enumerate(nodes):
        where.setdefault(op_key(node), []).append(node.name or f"#{index} {node.op_type}")
    lines = []
    for key, names in sorted(where.items()):
        node = next(n for n in nodes if op_key(n) == key)
        domain = node.domain or "ai.onnx"
        shown = ", ".join(repr(n) for n in names[:5])
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        lines.append(f"unsupported: {node.op_type} ({domain}, opset "
                     f"{versions.get(domain, '?')}) at node{'s' if len(names) > 1 else ''} "
                     f"{shown}{more}")
    return lines


class OnnxImporter:
    """Converts one ModelProto; `run()` returns (mod, params, graph, warnings)."""

    def __init__(self, model: onnx.ModelProto, shape: Mapping[str, Pin] | None,
                 dtype: str | Mapping[str, str], opset: int | None, freeze_params: bool,
                 mapped: Mapping[str, MappedRef] | None = None) -> None:
        self.model = model
        self.mapped = dict(mapped or {})  # initializers left in their file (weights.py)
        self.graph = model.graph
        self.pinned = {k: None if v is None else list(v) for k, v in (shape or {}).items()}
        self.dtype = dtype
        self.opset = int(opset) if opset else opset_version(model)
        self.freeze_params = freeze_params
        self.fill_spans = fill_span_enabled()
        self.root = self.scope = Scope()
        self.namer = LayerNamer()
        self.inputs: dict[str, Var] = {}
        self.params: dict[str, NDArray] = {}
        self.param_vars: dict[str, Var] = {}
        self.info: dict[str, TensorInfo] = {}
        self.warnings: list[str] = []
        self.layers: list[dict[str, Any]] = []
        self.symbols: dict[str, list[str]] = {}  # an input's dim_param names ("" if unnamed)

    @property
    def tensors(self) -> dict[str, Expr | None]:
        """The names the current scope defines (None: an empty optional)."""
        return self.scope.tensors

    @property
    def unavailable(self) -> dict[str, str]:
        """Outputs of the current scope a converter does not make, with the reason."""
        return self.scope.unavailable

    # --- lookups converters use -----------------------------------------------------------
    def shape_of(self, name: str, expr: Expr) -> tuple[int | None, ...] | None:
        if isinstance(expr, Constant):
            return tuple(expr.data.shape)
        if isinstance(expr, Var) and isinstance(expr.type_annotation, TensorType):
            return tuple(None if isinstance(d, AnyDim) else int(d)
                         for d in expr.type_annotation.shape)
        shape = self.info.get(name, (None, None))[0]
        if shape is not None and None not in shape:
            return shape
        # onnx's inference loses dims that only data propagation through Range, Gather or
        # Squeeze would give; the converted expression, folded at import, often has them
        ours = self._inferred(expr, "shape")
        if shape is None or ours is None or len(ours) != len(shape):
            return shape if shape is not None else ours
        return tuple(d if d is not None else o for d, o in zip(shape, ours))

    def dtype_of(self, name: str, expr: Expr) -> str:
        if isinstance(expr, Constant):
            return expr.data.dtype
        if isinstance(expr, Var) and isinstance(expr.type_annotation, TensorType):
            return expr.type_annotation.dtype
        dtype = self.info.get(name, (None, None))[1]
        return dtype if dtype is not None else self._inferred(expr, "dtype") or "float32"

    def param_value(self, name: str) -> np.ndarray | None:
        value = self.params.get(name)
        return value.numpy() if value is not None else None

    def type_of(self, expr: Expr) -> Type:
        """The engine's type inference on the expression (types stay on the nodes, so each
        call types only what was converted since the last one)."""
        from engine.relay.type_infer import TypeInferencer

        return TypeInferencer().infer(expr)

    def _inferred(self, expr: Expr, what: str) -> Any:
        """Fallback: the engine's type inference on the expression."""
        ty = self.type_of(expr)
        if not isinstance(ty, TensorType):
            return None
        if what == "dtype":
            return ty.dtype
        return tuple(None if isinstance(d, AnyDim) else int(d) for d in ty.shape)

    # --- the import -------------------------------------------------------------------------
    def run(self) -> tuple[IRModule, dict[str, NDArray], dict[str, Any], list[str]]:
        self._check_opset()
        nodes = self._validate()
        tensor_inputs = {i.name for i in self.graph.input if i.type.HasField("tensor_type")}
        tensor_pins = {k: v for k, v in self.pinned.items() if k in tensor_inputs and v is not None}
        light = light_model(self.model, tensor_pins, nodes)
        self.info, inferred = infer_tensor_info(light)
        self.warnings.extend(w for w in (run_checker(light), inferred) if w)
        self._make_inputs()
        self._make_initializers()
        self.namer = LayerNamer(n.name for n in graph_nodes(self.graph))
        for node in nodes:
            self._convert(node, self.namer.name(node.name, node.op_type))
        return self._finish()

    def import_subgraph(self, graph: onnx.GraphProto, inputs: Sequence[Expr | None],
                        function: bool, layer: str) -> Subgraph:
        """Convert `graph` in a scope nested in the current one, its inputs bound to `inputs`
        (None: an empty optional); `function` for a body run once per loop iteration."""
        if len(inputs) != len(graph.input):
            raise ConversionError(layer, "subgraph", f"graph {graph.name!r} takes "
                                  f"{len(graph.input)} inputs, {len(inputs)} given")
        scope = Scope(self.scope, function)
        scope.tensors.update(zip((i.name for i in graph.input), inputs))
        for init in graph.initializer:
            array = tensor_to_array(init, f"initializer {init.name!r}")
            scope.tensors[init.name] = relay.const(array, str(array.dtype))
        self.scope = scope
        try:
            for node in topological_nodes(graph, self.scope.names()):
                self._convert(node, self.namer.name(node.name, node.op_type))
            outputs = [self._consume(info.name, layer) for info in graph.output]
        finally:
            self.scope = scope.parent  # type: ignore[assignment]
        return Subgraph(outputs, list(scope.captures))

    def _check_opset(self) -> None:
        if not MIN_OPSET <= self.opset <= MAX_OPSET:
            self.warnings.append(f"opset {self.opset} is newer than the installed onnx knows "
                                 f"({MAX_OPSET}); converting with the newest rules")

    def _validate(self) -> list[onnx.NodeProto]:
        known = supported_ops()
        missing = [node for node in graph_nodes(self.graph) if op_key(node) not in known]
        if missing:
            raise UnsupportedOperatorError(
                "onnx", dict(Counter(op_key(node) for node in missing)),
                unsupported_lines(missing, self.model))
        check_declared_sizes(self.graph)
        return topological_nodes(self.graph)

    def _input_dtype(self, info: onnx.ValueInfoProto, declared: onnx.TypeProto.Tensor) -> str:
        if isinstance(self.dtype, Mapping) and info.name in self.dtype:
            return str(self.dtype[info.name])
        if declared.elem_type:
            return onnx_dtype(declared.elem_type)
        return str(self.dtype) if isinstance(self.dtype, str) else "float32"

    def _make_inputs(self) -> None:
        initializers = {t.name for t in self.graph.initializer}
        for info in self.graph.input:
            if info.name in initializers:
                continue
            ty = self._input_type(info, info.type, self.pinned.get(info.name, _UNPINNED))
            if ty is None:  # an optional pinned empty
                self.tensors[info.name] = None
                continue
            var = relay.var(info.name, type_annotation=ty)
            self.inputs[info.name] = var
            self.tensors[info.name] = var
        unknown = sorted(set(self.pinned) - set(self.tensors))
        if unknown:
            self.warnings.append(f"shape= names no model input: {unknown}")

    def _input_type(self, info: onnx.ValueInfoProto, proto: onnx.TypeProto, pin: Any
                    ) -> Type | None:
        """The Relay type of a graph input of type `proto` (None: an empty optional)."""
        kind = proto.WhichOneof("value")
        if kind == "optional_type":
            return None if pin is None else self._input_type(info, proto.optional_type.elem_type,
                                                             pin)
        if kind == "sequence_type":
            if pin is None or pin is _UNPINNED:
                raise ConversionError(info.name, "input", "the length of this sequence input "
                                      "is not known: pin it with shape={name: [shape of each "
                                      "element, ...]}")
            elem = proto.sequence_type.elem_type
            return TupleType([self._input_type(info, elem, list(p)) for p in pin])  # type: ignore[misc]
        if kind != "tensor_type":
            raise ConversionError(info.name, "input", f"inputs of type {kind} are not supported")
        declared = proto.tensor_type
        if pin is not None and pin is not _UNPINNED:
            dims: list[Any] = list(pin)
        else:
            dims = [d.dim_value if d.HasField("dim_value") else AnyDim()
                    for d in declared.shape.dim]
            if proto is info.type:  # a tensor input: keep its dim_param names for display
                self.symbols[info.name] = [d.dim_param for d in declared.shape.dim]
        check_elements(dims, f"input {info.name!r}")
        return TensorType(dims, self._input_dtype(info, declared))

    def _initializer(self, init: onnx.TensorProto) -> NDArray:
        """An initializer's value: memory-mapped when it stayed in its file, else read."""
        ref = self.mapped.get(init.name)
        if ref is None:
            return NDArray(tensor_to_array(init, f"initializer {init.name!r}"))
        check_elements(init.dims, f"initializer {init.name!r}")
        source = mapped_source(init, ref)
        if source is not None:
            return NDArray(source)
        plain = onnx.TensorProto()
        plain.CopyFrom(init)
        plain.data_location = onnx.TensorProto.DEFAULT
        plain.raw_data = read_ref(ref, init.name)
        return NDArray(tensor_to_array(plain, f"initializer {init.name!r}"))

    def _make_initializers(self) -> None:
        for init in self.graph.initializer:
            array = self._initializer(init)
            if self.freeze_params:
                self.tensors[init.name] = Constant(array)
            else:
                self.params[init.name] = array
                var = relay.var(init.name, shape=array.shape, dtype=array.dtype)
                self.param_vars[init.name] = var
                self.tensors[init.name] = var

    def _convert(self, node: onnx.NodeProto, layer: str) -> None:
        inputs = [self._consume(name, layer) if name else None for name in node.input]
        attrs = attribute_values(node)
        self.layers.append(res.layer_entry(
            layer, node.op_type, [i for i in node.input if i], [o for o in node.output if o],
            {k: v for k, v in attrs.items() if not isinstance(v, onnx.AttributeProto)}))
        values = [x.data.numpy() if isinstance(x, Constant) and x.data.lazy is None else None
                  for x in inputs]  # a weight left in its file is not folded at import
        folded = fold_node(node, values, self.opset)
        if folded is not None:
            outputs: list[Any] = [relay.const(v, str(v.dtype)) for v in folded]
        else:
            ctx = NodeContext(layer, op_key(node), self.opset, attrs, inputs, list(node.input),
                              list(node.output), self)
            outputs = self._call_converter(ctx)
        spanned = set_span([None if o is EMPTY_OPTIONAL else o for o in outputs], layer)
        outputs = [o if o is EMPTY_OPTIONAL else s for o, s in zip(outputs, spanned)]
        for index, (name, expr) in enumerate(zip(node.output, outputs)):
            if name and expr is EMPTY_OPTIONAL:
                self.tensors[name] = None
            elif name and expr is not None:
                self.tensors[name] = expr
            elif name:
                self.unavailable[name] = (f"output {index} ({name!r}) of layer {layer!r} "
                                          f"({node.op_type}) is not supported; it is fine "
                                          "as long as nothing reads it")

    def _consume(self, name: str, layer: str) -> Expr | None:
        """The value of `name` for a node of layer `layer` (None: an empty optional)."""
        owner = self.scope.owner(name)
        if owner is None:
            raise ConversionError(layer, "input", f"no node, input or initializer defines "
                                  f"tensor {name!r}")
        if name in owner.unavailable:
            raise ConversionError(layer, "input", owner.unavailable[name])
        expr = owner.tensors[name]
        if self.fill_spans and expr is not None and not expr.span:
            self._fill_parameter_span(owner, name, expr, layer)
        return self.scope.read(name, self.type_of)

    def _fill_parameter_span(self, owner: Scope, name: str, expr: Expr, layer: str) -> None:
        spanned = set_parameter_span(expr, layer, name)
        owner.tensors[name] = spanned
        if owner is self.root and name in self.inputs:
            self.inputs[name] = spanned  # type: ignore[assignment]
        if owner is self.root and name in self.param_vars:
            self.param_vars[name] = spanned  # type: ignore[assignment]

    def _call_converter(self, ctx: NodeContext) -> list[Any]:
        fn = lookup(ctx.op_type, self.opset)
        assert fn is not None  # _validate listed every op without a converter
        try:
            out = fn(ctx)
        except ConversionError:
            raise
        except _CONVERTER_ERRORS as err:
            raise ctx.fail(f"{type(err).__name__}: {err}") from err
        outputs: list[Any] = [out] if isinstance(out, Expr) else list(out)
        if not outputs or outputs[0] is None:
            raise ctx.fail("the converter produced no output")
        return outputs + [None] * (len(ctx.output_names) - len(outputs))

    def _finish(self) -> tuple[IRModule, dict[str, NDArray], dict[str, Any], list[str]]:
        outs = []
        for info in self.graph.output:
            if info.name in self.unavailable:
                raise ConversionError(info.name, "output", self.unavailable[info.name])
            if info.name not in self.tensors:
                raise ConversionError(info.name, "output", "no node produces this graph output")
            out = self.tensors[info.name]
            if out is None:
                raise ConversionError(info.name, "output", "this graph output is an empty "
                                      "optional, which a Relay function cannot return")
            outs.append(out)
        body: Expr = outs[0] if len(outs) == 1 else Tuple(
            tuple(outs), span=merge_spans(o.span for o in outs))
        params = [*self.inputs.values(), *self.param_vars.values()]
        main = Function(tuple(params), body, span=merge_spans(o.span for o in outs))
        graph = res.frontend_graph(self.layers, [e for v in self.inputs.values()
                                                 for e in self._tensor_entries(v)],
                                   [self._output_entry(i) for i in self.graph.output])
        return IRModule.from_expr(main), self.params, graph, self.warnings

    def dynamic_inputs(self) -> dict[str, list[int | str]]:
        """The tensor inputs with a dynamic dim: their shapes, a dynamic dim as its symbol
        ("batch") or "?"."""
        out: dict[str, list[int | str]] = {}
        for var in self.inputs.values():
            if isinstance(var.type_annotation, TensorType):
                entry = self._tensor_entries(var)[0]
                if any(not isinstance(d, int) for d in entry["shape"]):
                    out[var.name_hint] = list(entry["shape"])
        return out

    def _tensor_entries(self, var: Var) -> list[dict[str, Any]]:
        """One entry per tensor of an input (a sequence's elements as `name[k]`)."""
        ty = var.type_annotation
        fields = ty.fields if isinstance(ty, TupleType) else (ty,)
        names = [f"{var.name_hint}[{k}]" for k in range(len(fields))] \
            if isinstance(ty, TupleType) else [var.name_hint]
        symbols = self.symbols.get(var.name_hint, []) if isinstance(ty, TensorType) else []
        return [res.tensor_entry(name, [d if isinstance(d, int) else
                                        (symbols[i] if i < len(symbols) else "?")
                                        for i, d in enumerate(t.shape)], t.dtype)
                for name, t in zip(names, fields) if isinstance(t, TensorType)]

    def _output_entry(self, info: onnx.ValueInfoProto) -> dict[str, Any]:
        shape, dtype = self.info.get(info.name, (None, None))
        if shape is None:
            shape = tuple(d.dim_value if d.HasField("dim_value") else None
                          for d in info.type.tensor_type.shape.dim)
        elem = info.type.tensor_type.elem_type
        dtype = dtype or (onnx_dtype(elem) if elem else "float32")
        symbols = [d.dim_param for d in info.type.tensor_type.shape.dim]
        dims = [d if d is not None else (symbols[i] if i < len(symbols) else "?")
                for i, d in enumerate(shape)]
        return res.tensor_entry(info.name, dims, dtype)
