"""The ONNX graph importer: validate, scan for unsupported ops, convert node by node with
span filling, fold what is known at import time, build `main`."""

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
from engine.ir.type import AnyDim, TensorType
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
    elemwise,
    image_ops,
    indexing,
    loss,
    nn,
    norm_ops,
    quantize,
    reduce,
    rotary,
    scatter,
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
from engine.relay.frontend.onnx.shapes import TensorInfo, infer_tensor_info, light_model
from engine.relay.frontend.onnx.table import NodeContext, lookup, supported_ops
from engine.relay.frontend.onnx.util import onnx_dtype
from engine.runtime.ndarray import NDArray

MIN_OPSET, MAX_OPSET = 1, onnx.defs.onnx_opset_version()
_CONVERTER_ERRORS = (TypeError, ValueError, IndexError, KeyError, AttributeError)


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

    def __init__(self, model: onnx.ModelProto, shape: Mapping[str, Sequence[int]] | None,
                 dtype: str | Mapping[str, str], opset: int | None, freeze_params: bool) -> None:
        self.model = model
        self.graph = model.graph
        self.pinned = {k: list(v) for k, v in (shape or {}).items()}
        self.dtype = dtype
        self.opset = int(opset) if opset else opset_version(model)
        self.freeze_params = freeze_params
        self.fill_spans = fill_span_enabled()
        self.tensors: dict[str, Expr] = {}
        self.inputs: dict[str, Var] = {}
        self.params: dict[str, NDArray] = {}
        self.param_vars: dict[str, Var] = {}
        self.info: dict[str, TensorInfo] = {}
        self.warnings: list[str] = []
        self.layers: list[dict[str, Any]] = []
        self.unavailable: dict[str, str] = {}  # optional outputs a converter does not make

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
        # onnx's inference gave up on a dim (it does not propagate values through Where, as
        # TorchScript-exported attention masks need): the converted expression may know it
        inferred = self._inferred(expr, "shape")
        if shape is None or inferred is None or len(inferred) != len(shape):
            return shape if inferred is None else inferred
        return tuple(d if d is not None else i for d, i in zip(shape, inferred))

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

    def _inferred(self, expr: Expr, what: str) -> Any:
        """Fallback: the engine's InferType on the expression."""
        from engine.relay.transform import InferType

        mod = InferType()(IRModule.from_expr(expr))
        ty = mod["main"].body.checked_type
        if not isinstance(ty, TensorType):
            return None
        if what == "dtype":
            return ty.dtype
        return tuple(None if isinstance(d, AnyDim) else int(d) for d in ty.shape)

    # --- the import -------------------------------------------------------------------------
    def run(self) -> tuple[IRModule, dict[str, NDArray], dict[str, Any], list[str]]:
        self._check_opset()
        nodes = self._validate()
        light = light_model(self.model, self.pinned, nodes)
        self.info, inferred = infer_tensor_info(light)
        self.warnings.extend(w for w in (run_checker(light), inferred) if w)
        self._make_inputs()
        self._make_initializers()
        namer = LayerNamer(n.name for n in nodes)
        for node in nodes:
            self._convert(node, namer.name(node.name, node.op_type))
        return self._finish()

    def _check_opset(self) -> None:
        if not MIN_OPSET <= self.opset <= MAX_OPSET:
            self.warnings.append(f"opset {self.opset} is newer than the installed onnx knows "
                                 f"({MAX_OPSET}); converting with the newest rules")

    def _validate(self) -> list[onnx.NodeProto]:
        known = supported_ops()
        missing = [node for node in self.graph.node if op_key(node) not in known]
        if missing:
            raise UnsupportedOperatorError(
                "onnx", dict(Counter(op_key(node) for node in missing)),
                unsupported_lines(missing, self.model))
        check_declared_sizes(self.graph)
        return topological_nodes(self.graph)

    def _input_dtype(self, info: onnx.ValueInfoProto) -> str:
        if isinstance(self.dtype, Mapping) and info.name in self.dtype:
            return str(self.dtype[info.name])
        elem = info.type.tensor_type.elem_type
        if elem:
            return onnx_dtype(elem)
        return str(self.dtype) if isinstance(self.dtype, str) else "float32"

    def _make_inputs(self) -> None:
        initializers = {t.name for t in self.graph.initializer}
        for info in self.graph.input:
            if info.name in initializers:
                continue
            if info.name in self.pinned:
                dims: list[Any] = list(self.pinned[info.name])
            else:
                dims = [d.dim_value if d.HasField("dim_value") else AnyDim()
                        for d in info.type.tensor_type.shape.dim]
            check_elements(dims, f"input {info.name!r}")
            var = relay.var(info.name, shape=dims, dtype=self._input_dtype(info))
            self.inputs[info.name] = var
            self.tensors[info.name] = var
        unknown = sorted(set(self.pinned) - set(self.inputs))
        if unknown:
            self.warnings.append(f"shape= names no model input: {unknown}")

    def _make_initializers(self) -> None:
        for init in self.graph.initializer:
            array = tensor_to_array(init, f"initializer {init.name!r}")
            if self.freeze_params:
                self.tensors[init.name] = relay.const(array, str(array.dtype))
            else:
                self.params[init.name] = NDArray(array)
                var = relay.var(init.name, shape=array.shape, dtype=str(array.dtype))
                self.param_vars[init.name] = var
                self.tensors[init.name] = var

    def _convert(self, node: onnx.NodeProto, layer: str) -> None:
        inputs = [self._consume(name, layer) if name else None for name in node.input]
        attrs = attribute_values(node)
        self.layers.append(res.layer_entry(
            layer, node.op_type, [i for i in node.input if i], [o for o in node.output if o],
            {k: v for k, v in attrs.items() if not isinstance(v, onnx.AttributeProto)}))
        values = [x.data.numpy() if isinstance(x, Constant) else None for x in inputs]
        folded = fold_node(node, values, self.opset)
        if folded is not None:
            outputs: list[Expr | None] = [relay.const(v, str(v.dtype)) for v in folded]
        else:
            ctx = NodeContext(layer, op_key(node), self.opset, attrs, inputs, list(node.input),
                              list(node.output), self)
            outputs = self._call_converter(ctx)
        outputs = set_span(outputs, layer)
        for index, (name, expr) in enumerate(zip(node.output, outputs)):
            if name and expr is not None:
                self.tensors[name] = expr
            elif name:
                self.unavailable[name] = (f"output {index} ({name!r}) of layer {layer!r} "
                                          f"({node.op_type}) is not supported; it is fine "
                                          "as long as nothing reads it")

    def _consume(self, name: str, layer: str) -> Expr:
        if name in self.unavailable:
            raise ConversionError(layer, "input", self.unavailable[name])
        expr = self.tensors[name]
        if not self.fill_spans or expr.span:
            return expr
        spanned = set_parameter_span(expr, layer, name)
        self.tensors[name] = spanned
        if name in self.inputs:
            self.inputs[name] = spanned  # type: ignore[assignment]
        if name in self.param_vars:
            self.param_vars[name] = spanned  # type: ignore[assignment]
        return spanned

    def _call_converter(self, ctx: NodeContext) -> list[Expr | None]:
        fn = lookup(ctx.op_type, self.opset)
        assert fn is not None  # _validate listed every op without a converter
        try:
            out = fn(ctx)
        except ConversionError:
            raise
        except _CONVERTER_ERRORS as err:
            raise ctx.fail(f"{type(err).__name__}: {err}") from err
        outputs: list[Expr | None] = [out] if isinstance(out, Expr) else list(out)
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
            outs.append(self.tensors[info.name])
        body: Expr = outs[0] if len(outs) == 1 else Tuple(
            tuple(outs), span=merge_spans(o.span for o in outs))
        params = [*self.inputs.values(), *self.param_vars.values()]
        main = Function(tuple(params), body, span=merge_spans(o.span for o in outs))
        graph = res.frontend_graph(self.layers, [self._tensor_entry(v) for v in self.inputs.values()],
                                   [self._output_entry(i) for i in self.graph.output])
        return IRModule.from_expr(main), self.params, graph, self.warnings

    def _tensor_entry(self, var: Var) -> dict[str, Any]:
        ty = var.type_annotation
        assert isinstance(ty, TensorType)
        return res.tensor_entry(var.name_hint, [d if isinstance(d, int) else -1 for d in ty.shape],
                                ty.dtype)

    def _output_entry(self, info: onnx.ValueInfoProto) -> dict[str, Any]:
        shape, dtype = self.info.get(info.name, (None, None))
        if shape is None:
            shape = tuple(d.dim_value if d.HasField("dim_value") else None
                          for d in info.type.tensor_type.shape.dim)
        elem = info.type.tensor_type.elem_type
        dtype = dtype or (onnx_dtype(elem) if elem else "float32")
        return res.tensor_entry(info.name, [-1 if d is None else d for d in shape], dtype)
