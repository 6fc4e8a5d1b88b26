"""torch.export ExportedProgram -> Relay.

Spans are module paths (`encoder.layer.0.attention.self.query`) with, where the program
recorded a stack trace, the line of the innermost frame outside torch itself. Outputs are
the program's user outputs, flattened by its output pytree spec and named by their path in
it (`last_hidden_state`, `0.1`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.errors import UnsupportedOperatorError
from engine.ir.expr import Expr, Function, Tuple, Var
from engine.ir.module import IRModule
from engine.ir.span import SourceName, Span, merge_spans
from engine.ir.type import TensorType
from engine.relay.frontend import result as res
from engine.relay.frontend.common import (
    ConversionError,
    check_elements,
    fill_span_enabled,
    set_parameter_span,
    set_span,
)
from engine.relay.frontend.pytorch.aten_table import CONVERTERS  # noqa: F401 (fills the table)
from engine.relay.frontend.pytorch.ops import (
    AtenCall,
    TensorMeta,
    functional_name,
    is_inplace,
    lookup,
)

_CONVERTER_ERRORS = (TypeError, ValueError, IndexError, KeyError, AttributeError)
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


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


def source_line(node: Any) -> tuple[str, int] | None:
    """(file, line) of the node's innermost stack frame outside torch's own package (the
    model's code calling into torch), else of its innermost frame; None without a trace."""
    frames = [(f, int(n)) for f, n in _FRAME.findall(node.meta.get("stack_trace") or "")]
    if not frames:
        return None
    own = [f for f in frames if "/torch/" not in f[0].replace("\\", "/")]
    return (own or frames)[-1]


def node_span(node: Any) -> Span:
    """The node's layer: its module path. A frontend span has no line (a `line N` span is a
    position in a Relay text file); the stack trace's file:line is the layer's `source`."""
    return Span(SourceName(scope_name(node)))


def _tensor_meta(val: Any) -> TensorMeta | None:
    if val is None or not hasattr(val, "shape") or not hasattr(val, "dtype"):
        return None
    shape = tuple(int(d) if isinstance(d, int) or str(d).isdigit() else -1 for d in val.shape)
    return TensorMeta(shape, str(val.dtype).replace("torch.", ""))


def _value_meta(value: Any) -> Any:
    """TensorMeta of an fx node's value, a list of them for a list of nodes, else None."""
    if isinstance(value, (list, tuple)):
        return [_value_meta(v) for v in value]
    if hasattr(value, "meta"):
        return _tensor_meta(value.meta.get("val"))
    return None


def _out_metas(node: Any) -> list[TensorMeta | None]:
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        return [_tensor_meta(v) for v in val]
    return [_tensor_meta(val)]


def _static_scalar(node: Any) -> int | float | bool | None:
    """The value of a node computing a Python number torch knew at export (a static size)."""
    val = node.meta.get("val")
    if isinstance(val, (bool, int, float)):
        return val
    hint = getattr(getattr(val, "node", None), "maybe_as_int", lambda: None)()
    return int(hint) if hint is not None else None


def _is_view(node: Any) -> bool:
    return node.op == "call_function" and bool(getattr(node.target, "is_view", False))


def _view_positions(shape: tuple[int, ...], chain: list[Any]) -> np.ndarray:
    """Flat positions in a contiguous tensor of `shape` that the view chain (base first)
    selects: the same view ops applied to an arange of positions."""
    import torch

    view = torch.arange(int(np.prod(shape)), dtype=torch.int64).reshape(shape)
    for node in chain:
        args = [view, *node.args[1:]]
        view = node.target(*args, **node.kwargs)
    return np.ascontiguousarray(view.numpy())


def _numpy(tensor: Any) -> np.ndarray:
    return tensor.detach().cpu().contiguous().numpy()


def output_names(spec: Any, count: int) -> list[str]:
    """Leaf paths of a pytree spec: dict and ModelOutput keys, namedtuple fields, indices."""
    names: list[str] = []

    def walk(node: Any, path: str) -> None:
        children = [] if node.is_leaf() else list(node.children())
        if not children:
            names.append(path)
            return
        keys = node.context if isinstance(node.context, (list, tuple)) else None
        fields = getattr(node.type, "_fields", None)
        labels = keys if keys is not None and len(keys) == len(children) else fields
        for i, child in enumerate(children):
            label = str(labels[i]) if labels is not None and i < len(labels) else str(i)
            walk(child, f"{path}.{label}" if path else label)

    if spec is not None:
        walk(spec, "")
    if len(names) != count:
        return [f"output_{i}" for i in range(count)]
    return [n or "output" for n in names]


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
                          if n.op == "call_function" and _static_scalar(n) is None
                          and lookup(target_name(n.target)) is None)
        if missing:
            raise UnsupportedOperatorError("pytorch", dict(missing))
        self._placeholders()
        for node in graph.nodes:
            if node.op == "call_function":
                self._convert(node)
        leaves = self._user_outputs()
        outputs = [self._output(leaf) for leaf in leaves]
        return self._finish(outputs), self._graph(leaves)

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
        meta = _tensor_meta(node.meta.get("val"))
        shape, dtype = (meta.shape, meta.dtype) if meta else (None, None)
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
            if expr is None:
                raise ConversionError(layer, str(value.name), "this value is not computed "
                                      "(an index output such as max-pool indices)")
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
        scalar = _static_scalar(node)
        if scalar is not None:  # sym_size and friends of a static shape: a Python number
            self.values[node.name] = scalar
            return
        layer = scope_name(node)
        target = target_name(node.target)
        metas: dict[int | str, Any] = {i: _value_meta(a) for i, a in enumerate(node.args)}
        metas.update({k: _value_meta(v) for k, v in node.kwargs.items()})
        call = AtenCall(layer, functional_name(target), [self._arg(a, layer) for a in node.args],
                        {k: self._arg(v, layer) for k, v in node.kwargs.items()},
                        _out_metas(node), metas)
        where = source_line(node)
        attrs = {"node": node.name, **({"source": f"{where[0]}:{where[1]}"} if where else {})}
        self.layers.append(res.layer_entry(
            layer, target, [self.tensor_names.get(a.name, a.name) for a in node.all_input_nodes],
            [node.name], attrs))
        convert = lookup(target)
        assert convert is not None  # run() refused the program otherwise
        try:
            out = convert(call)
        except ConversionError:
            raise
        except _CONVERTER_ERRORS as err:
            raise call.fail(f"{type(err).__name__}: {err}") from err
        span = node_span(node)
        out = set_span(out, span)
        self.values[node.name] = out
        self.tensor_names[node.name] = node.name
        if is_inplace(target) and node.args and hasattr(node.args[0], "name"):
            self._write(node.args[0], out, span)

    def _write(self, written: Any, value: Expr, span: Span) -> None:
        """An in-place op wrote `value` into `written`: later readers of it, and of the
        tensor it is a view of (a slice of a mask filled in place), see the write."""
        self.values[written.name] = value
        chain = []
        base = written
        while _is_view(base) and base.args and hasattr(base.args[0], "name"):
            chain.append(base)
            base = base.args[0]
        if not chain:
            return
        meta = _tensor_meta(base.meta.get("val"))
        if meta is None or any(d < 0 for d in meta.shape) or base.name not in self.values:
            raise ConversionError(scope_name(written), target_name(written.target),
                                  "an in-place write into a view of a tensor of unknown shape")
        positions = _view_positions(meta.shape, list(reversed(chain)))
        flat = relay.reshape(self.values[base.name], newshape=[-1])
        updated = relay.scatter_elements(flat, relay.const(positions.reshape(-1)),
                                         relay.reshape(value, newshape=[-1]), axis=0)
        self.values[base.name] = set_span(relay.reshape(updated, newshape=list(meta.shape)),
                                          span)

    def _user_outputs(self) -> list[Any]:
        """The fx values of the program's user outputs (mutated buffers left out)."""
        out_node = next(n for n in self.program.graph.nodes if n.op == "output")
        flat = list(out_node.args[0])
        specs = self.program.graph_signature.output_specs
        if len(specs) != len(flat):
            return flat
        return [v for v, s in zip(flat, specs) if s.kind.name == "USER_OUTPUT"]

    def _output(self, leaf: Any) -> Expr:
        value = self.values.get(leaf.name) if hasattr(leaf, "name") else leaf
        if isinstance(value, Expr):
            return value
        raise ConversionError("output", "output", f"output {leaf} is not a tensor")

    def _finish(self, outputs: list[Expr]) -> IRModule:
        body: Expr = outputs[0] if len(outputs) == 1 else Tuple(
            tuple(outputs), span=merge_spans(o.span for o in outputs))
        main = Function(tuple(self.inputs.values()), body,
                        span=merge_spans(o.span for o in outputs))
        return IRModule.from_expr(main)

    def _graph(self, leaves: list[Any]) -> dict[str, Any]:
        inputs = []
        for var in self.inputs.values():
            ty = var.type_annotation
            assert isinstance(ty, TensorType)
            inputs.append(res.tensor_entry(var.name_hint, [d if isinstance(d, int) else -1
                                                           for d in ty.shape], ty.dtype))
        spec = getattr(getattr(self.program, "call_spec", None), "out_spec", None)
        names = output_names(spec, len(leaves))
        outs = []
        for name, leaf in zip(names, leaves):
            meta = _tensor_meta(leaf.meta.get("val")) if hasattr(leaf, "meta") else None
            outs.append(res.tensor_entry(name, meta.shape if meta else (),
                                         meta.dtype if meta else "float32"))
        return res.frontend_graph(self.layers, inputs, outs)
