"""torch.export ExportedProgram -> Relay, spans = module scope names (`layer1.0.conv1`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.errors import UnsupportedOperatorError
from engine.ir.expr import Expr, Function, Tuple, Var
from engine.ir.module import IRModule
from engine.ir.span import merge_spans
from engine.ir.type import TensorType
from engine.relay.frontend import result as res
from engine.relay.frontend.common import (
    ConversionError,
    check_elements,
    fill_span_enabled,
    set_parameter_span,
    set_span,
)
from engine.relay.frontend.pytorch.ops import CONVERTERS, AtenCall

_CONVERTER_ERRORS = (TypeError, ValueError, IndexError, KeyError, AttributeError)


def target_name(target: Any) -> str:
    """`aten.conv2d.default` for ATen overloads, `_operator.getitem` for Python operators."""
    if getattr(target, "__module__", None) in ("_operator", "operator"):
        return f"_operator.{target.__name__}"
    return str(target)


def scope_name(node: Any) -> str:
    """The innermost module path of the node (`layer1.0.conv1`), else the node's name."""
    stack = node.meta.get("nn_module_stack") or {}
    for value in reversed(list(stack.values())):
        path = value[0] if isinstance(value, (tuple, list)) else str(value)
        if path:
            return str(path).replace("L['self'].", "")
    return str(node.name)


def _meta(node: Any) -> tuple[tuple[int, ...] | None, str | None]:
    val = node.meta.get("val")
    if val is None or not hasattr(val, "shape"):
        return None, None
    shape = tuple(int(d) if isinstance(d, int) or str(d).isdigit() else -1 for d in val.shape)
    return shape, str(val.dtype).replace("torch.", "")


def _numpy(tensor: Any) -> np.ndarray:
    return tensor.detach().cpu().contiguous().numpy()


class TorchImporter:
    def __init__(self, program: Any, input_infos: Sequence[Any] | None) -> None:
        self.program = program
        self.input_infos = list(input_infos or [])
        self.fill_spans = fill_span_enabled()
        self.values: dict[str, Any] = {}
        self.tensor_names: dict[str, str] = {}
        self.inputs: dict[str, Var] = {}
        self.layers: list[dict[str, Any]] = []

    def run(self) -> tuple[IRModule, dict[str, Any]]:
        graph = self.program.graph
        missing = Counter(target_name(n.target) for n in graph.nodes
                          if n.op == "call_function" and target_name(n.target) not in CONVERTERS)
        if missing:
            raise UnsupportedOperatorError("pytorch", dict(missing))
        self._placeholders()
        outputs: list[Expr] = []
        for node in graph.nodes:
            if node.op == "call_function":
                self._convert(node)
            elif node.op == "output":
                outputs = [self.values[a.name] for a in node.args[0] if a is not None]
        return self._finish(outputs), self._graph(outputs)

    def _placeholders(self) -> None:
        sig = self.program.graph_signature
        lifted = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
                  **getattr(sig, "inputs_to_lifted_tensor_constants", {})}
        tensors = {**self.program.state_dict, **self.program.constants}
        user_index = 0
        for node in self.program.graph.nodes:
            if node.op != "placeholder":
                continue
            if node.name in lifted:
                fqn = lifted[node.name]
                self.values[node.name] = relay.const(_numpy(tensors[fqn]))
                self.tensor_names[node.name] = fqn
                continue
            self._user_input(node, user_index)
            user_index += 1

    def _user_input(self, node: Any, index: int) -> None:
        shape, dtype = _meta(node)
        name = node.name
        if index < len(self.input_infos):
            name, info = self.input_infos[index][0], self.input_infos[index][1]
            if isinstance(info, tuple) and len(info) == 2 and isinstance(info[1], str):
                shape, dtype = tuple(info[0]), info[1]
            else:
                shape = tuple(info)
        if shape is None:
            raise ConversionError(name, "placeholder", "the input shape is unknown")
        check_elements(shape, f"input {name!r}")
        var = relay.var(name, shape=shape, dtype=dtype or "float32")
        self.values[node.name] = var
        self.tensor_names[node.name] = name
        self.inputs[node.name] = var

    def _arg(self, value: Any, layer: str) -> Any:
        if hasattr(value, "op") and hasattr(value, "name") and value.name in self.values:
            expr = self.values[value.name]
            if self.fill_spans and isinstance(expr, Expr) and not expr.span:
                expr = set_parameter_span(expr, layer, self.tensor_names.get(value.name,
                                                                              value.name))
                self.values[value.name] = expr
                if value.name in self.inputs:
                    self.inputs[value.name] = expr  # type: ignore[assignment]
            return expr
        if isinstance(value, (list, tuple)):
            return type(value)(self._arg(v, layer) for v in value)
        return value

    def _convert(self, node: Any) -> None:
        layer = scope_name(node)
        target = target_name(node.target)
        args = [self._arg(a, layer) for a in node.args]
        kwargs = {k: self._arg(v, layer) for k, v in node.kwargs.items()}
        shapes = {i: _meta(a)[0] for i, a in enumerate(node.args) if hasattr(a, "meta")}
        out_shape, out_dtype = _meta(node)
        call = AtenCall(layer, target, args, kwargs, out_shape, out_dtype,
                        {i: s for i, s in shapes.items() if s is not None})
        self.layers.append(res.layer_entry(
            layer, target, [self.tensor_names.get(a.name, a.name) for a in node.all_input_nodes],
            [node.name], {"node": node.name}))
        try:
            out = CONVERTERS[target](call)
        except ConversionError:
            raise
        except _CONVERTER_ERRORS as err:
            raise call.fail(f"{type(err).__name__}: {err}") from err
        self.values[node.name] = set_span(out, layer)
        self.tensor_names[node.name] = node.name

    def _finish(self, outputs: list[Expr]) -> IRModule:
        body: Expr = outputs[0] if len(outputs) == 1 else Tuple(
            tuple(outputs), span=merge_spans(o.span for o in outputs))
        main = Function(tuple(self.inputs.values()), body,
                        span=merge_spans(o.span for o in outputs))
        return IRModule.from_expr(main)

    def _graph(self, outputs: list[Expr]) -> dict[str, Any]:
        inputs = []
        for var in self.inputs.values():
            ty = var.type_annotation
            assert isinstance(ty, TensorType)
            inputs.append(res.tensor_entry(var.name_hint, [d if isinstance(d, int) else -1
                                                           for d in ty.shape], ty.dtype))
        out_nodes = [n for n in self.program.graph.nodes if n.op == "output"]
        outs = []
        for arg in (out_nodes[0].args[0] if out_nodes else []):
            shape, dtype = _meta(arg)
            outs.append(res.tensor_entry(arg.name, shape or (), dtype or "float32"))
        return res.frontend_graph(self.layers, inputs, outs)
