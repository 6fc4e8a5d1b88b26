"""The TFLite importer: scan for unsupported ops, convert op by op with span filling (spans are
the TFLite output tensor names), build `main`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.errors import UnsupportedOperatorError
from engine.ir.expr import Constant, Expr, Function, Tuple, Var
from engine.ir.module import IRModule
from engine.ir.span import merge_spans
from engine.ir.type import TensorType
from engine.relay.frontend import result as res
from engine.relay.frontend.common import (
    ConversionError,
    InvalidGraphError,
    LayerNamer,
    check_elements,
    fill_span_enabled,
    set_parameter_span,
    set_span,
)
from engine.relay.frontend.tflite import (  # noqa: F401 (register)
    elemwise,
    integer,
    nn,
    quantize,
    shapes,
    tables,
)
from engine.relay.frontend.tflite.context import (
    CONVERTERS,
    INTEGER_CONVERTERS,
    Converter,
    OpContext,
)
from engine.relay.frontend.tflite.model import OpRecord, TFLiteGraph
from engine.relay.frontend.tflite.quantize import QUANTIZED_DTYPES
from engine.relay.transform.fold_constant import fold_constant
from engine.relay.type_infer import TypeInferencer

_CONVERTER_ERRORS = (TypeError, ValueError, IndexError, KeyError, AttributeError)
# ops that only move, select or describe quantized values (their output keeps the input's
# scale and zero point: the float converters are exact on integers)
_QUANTIZED_SAFE = frozenset({
    "DEQUANTIZE", "SHAPE", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "STRIDED_SLICE",
    "SLICE", "PACK", "UNPACK", "SPLIT", "SPLIT_V", "GATHER", "GATHER_ND", "TILE",
    "BROADCAST_TO", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "REVERSE_V2", "CAST",
    "RESIZE_NEAREST_NEIGHBOR", "REDUCE_MAX", "REDUCE_MIN", "ARG_MAX", "ARG_MIN",
})
FOLD_LIMIT = 1 << 22  # elements: larger results of constant operands stay computed


class TFLiteImporter:
    def __init__(self, graph: TFLiteGraph, shape_dict: Mapping[str, Sequence[int]] | None,
                 dtype_dict: Mapping[str, str] | str | None) -> None:
        self.graph = graph
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dtype_dict
        self.fill_spans = fill_span_enabled()
        self.exprs: dict[int, Expr] = {}
        self.inputs: dict[int, Var] = {}
        self.layers: list[dict[str, Any]] = []
        self.typer = TypeInferencer()

    def run(self) -> tuple[IRModule, dict[str, Any], list[str]]:
        self._check_supported()
        self._make_inputs()
        namer = LayerNamer(t.name for t in self.graph.tensors)
        for op in self.graph.ops:
            self._convert(op, self._layer_name(op, namer))
        return self._finish(), self._graph(), []

    def _check_supported(self) -> None:
        missing = Counter(op.op_type for op in self.graph.ops if op.op_type not in CONVERTERS)
        if missing:
            raise UnsupportedOperatorError("tflite", dict(missing))

    def _dtype(self, name: str, default: str) -> str:
        if isinstance(self.dtype_dict, str):
            return self.dtype_dict
        return str((self.dtype_dict or {}).get(name, default))

    def _make_inputs(self) -> None:
        for index in self.graph.inputs:
            tensor = self.graph.tensors[index]
            shape = list(self.shape_dict.get(tensor.name, tensor.shape))
            check_elements(shape, f"input {tensor.name!r}")
            var = relay.var(tensor.name, shape=shape, dtype=self._dtype(tensor.name, tensor.dtype))
            self.inputs[index] = var
            self.exprs[index] = var

    def _layer_name(self, op: OpRecord, namer: LayerNamer) -> str:
        names = [self.graph.tensors[i].name for i in op.outputs if i >= 0]
        return namer.name(", ".join(n for n in names if n), op.op_type)

    def _operand(self, index: int, layer: str) -> Expr | None:
        if index < 0:
            return None
        expr = self.exprs.get(index)
        tensor = self.graph.tensors[index]
        if expr is None:
            if tensor.data is None:
                raise InvalidGraphError(
                    f"layer {layer!r} consumes tensor {tensor.name!r}, which no operator, input "
                    "or buffer defines")
            expr = relay.const(tensor.data)
        if self.fill_spans and not expr.span:
            expr = set_parameter_span(expr, layer, tensor.name)
            if index in self.inputs:
                self.inputs[index] = expr  # type: ignore[assignment]
        self.exprs[index] = expr
        return expr

    def type_of(self, expr: Expr) -> TensorType:
        """The engine's type inference (types stay on the nodes: each call types only what
        was converted since the last one)."""
        ty = self.typer.infer(expr)
        if not isinstance(ty, TensorType):
            raise TypeError(f"expected a tensor, got {ty}")
        return ty

    def _converter(self, op: OpRecord, layer: str, inputs: list[Expr | None]) -> Converter:
        """The float converter, or the integer kernel when the op computes on a quantized
        run-time tensor (a full-integer model); an integer op without one is refused."""
        quantized = [self.graph.tensors[i] for i, e in zip(op.inputs, inputs)
                     if i >= 0 and not isinstance(e, Constant)
                     and self.graph.tensors[i].quant is not None
                     and self.graph.tensors[i].dtype in QUANTIZED_DTYPES]
        if not quantized or op.op_type in _QUANTIZED_SAFE:
            return CONVERTERS[op.op_type]
        if op.op_type in INTEGER_CONVERTERS:
            return INTEGER_CONVERTERS[op.op_type]
        tensor = quantized[0]
        assert tensor.quant is not None
        raise ConversionError(layer, op.op_type, (
            f"computes on the quantized {tensor.dtype} tensor {tensor.name!r} (scale "
            f"{tensor.quant.scale.reshape(-1)[:4].tolist()}): TFLite's integer kernel for "
            f"{op.op_type} is not converted"))

    def _fold(self, op: OpRecord, inputs: list[Expr | None], outputs: list[Expr]) -> list[Expr]:
        """An op whose operands are all constants becomes constants (shape arithmetic)."""
        present = [e for e in inputs if e is not None]
        if not present or not all(isinstance(e, Constant) for e in present):
            return outputs
        sizes = [int(np.prod(self.graph.tensors[i].shape)) for i in op.outputs]
        if any(size > FOLD_LIMIT for size in sizes):
            return outputs
        return [fold_constant(o) for o in outputs]

    def _convert(self, op: OpRecord, layer: str) -> None:
        inputs = [self._operand(i, layer) for i in op.inputs]
        convert = self._converter(op, layer, inputs)
        self.layers.append(res.layer_entry(
            layer, op.op_type, [self.graph.tensors[i].name for i in op.inputs if i >= 0],
            [self.graph.tensors[i].name for i in op.outputs],
            {k: v for k, v in op.options.items() if not k.endswith("AsNumpy")}))
        ctx = OpContext(layer, op, inputs, self)
        try:
            out = convert(ctx)
        except ConversionError:
            raise
        except _CONVERTER_ERRORS as err:
            raise ctx.fail(f"{type(err).__name__}: {err}") from err
        outputs = self._fold(op, inputs, [out] if isinstance(out, Expr) else list(out))
        outputs = set_span(outputs, layer)
        for index, expr in zip(op.outputs, outputs):
            self.exprs[index] = expr

    def _finish(self) -> IRModule:
        outs = []
        for index in self.graph.outputs:
            if index not in self.exprs:
                name = self.graph.tensors[index].name
                raise InvalidGraphError(f"no operator produces the model output {name!r}")
            outs.append(self.exprs[index])
        body: Expr = outs[0] if len(outs) == 1 else Tuple(
            tuple(outs), span=merge_spans(o.span for o in outs))
        main = Function(tuple(self.inputs.values()), body,
                        span=merge_spans(o.span for o in outs))
        return IRModule.from_expr(main)

    def _graph(self) -> dict[str, Any]:
        def entry(index: int) -> dict[str, Any]:
            tensor = self.graph.tensors[index]
            return res.tensor_entry(tensor.name, tensor.shape, tensor.dtype)

        return res.frontend_graph(self.layers, [entry(i) for i in self.graph.inputs],
                                  [entry(i) for i in self.graph.outputs])
