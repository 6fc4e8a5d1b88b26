"""The graph executor: run a built graph node by node (`tvm.contrib.graph_executor`).

Each tvm_op node evaluates its fused function with the numpy interpreter (the
lowered loop nests are checked separately on small shapes, see
`relay.build_module.check_numerics`; running them for a whole model in Python
would take hours).

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", x); m.run(); y = m.get_output(0).numpy()
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.ir.type import TupleType
from engine.relay.backend.graph_codegen import Graph
from engine.relay.interpreter import Interpreter
from engine.runtime.ndarray import NDArray


def _numpy(value: Any) -> np.ndarray:
    getter = getattr(value, "numpy", None)
    return np.asarray(getter() if callable(getter) else value)


class GraphRuntime:
    """Holds inputs and outputs of one graph; `run` evaluates every node in order."""

    def __init__(self, graph: Graph, device: Any = None) -> None:
        self.graph = graph
        self.device = device
        self._values: dict[tuple[int, int], np.ndarray] = {}
        self._inputs: dict[str, np.ndarray] = {k: np.asarray(v) for k, v in graph.params.items()}

    def _input_name(self, key: int | str) -> str:
        if isinstance(key, int):
            return self.graph.input_names[key]
        return key

    def set_input(self, key: int | str | None = None, value: Any = None, **params: Any) -> None:
        if key is not None:
            self._inputs[self._input_name(key)] = _numpy(value)
        for name, v in params.items():
            self._inputs[name] = _numpy(v)

    def get_input(self, key: int | str) -> NDArray:
        return NDArray(self._inputs[self._input_name(key)])

    def run(self, **inputs: Any) -> None:
        self.set_input(**inputs)
        interp = Interpreter()
        values: dict[tuple[int, int], np.ndarray] = {}
        for k, node in enumerate(self.graph.nodes):
            if node.op == "null":
                if node.name not in self._inputs:
                    raise KeyError(f"graph input {node.name!r} was not set")
                values[(k, 0)] = self._inputs[node.name]
                continue
            flat = [values[(nid, idx)] for nid, idx, _ in node.inputs]
            assert node.func is not None
            args = [_regroup(flat, p.checked_type) for p in node.func.params]
            result = _flatten(interp.apply(node.func, args))
            for j, out in enumerate(result):
                values[(k, j)] = out
        self._values = values

    def get_num_outputs(self) -> int:
        return len(self.graph.heads)

    def get_num_inputs(self) -> int:
        return len(self.graph.input_names)

    def get_output(self, index: int, out: Any = None) -> NDArray:
        nid, idx, _ = self.graph.heads[index]
        return NDArray(self._values[(nid, idx)])


def _regroup(flat: list[np.ndarray], ty: Any) -> Any:
    """Graph entries are flat; a tuple-typed parameter takes them back as a tuple."""
    if isinstance(ty, TupleType):
        return tuple(_regroup(flat, f) for f in ty.fields)
    return flat.pop(0)


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [x for item in value for x in _flatten(item)]
    return [np.asarray(value)]


class GraphModule:
    """TVM's wrapper: `GraphModule(lib["default"](dev))`."""

    def __init__(self, module: GraphRuntime) -> None:
        self.module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self.module, name)


def create(graph_json_or_factory: Any, lib: Any = None, device: Any = None) -> GraphModule:
    """`graph_executor.create(lib)` with the factory module relay.build returned."""
    factory = graph_json_or_factory
    return GraphModule(factory["default"](device))
