"""TVM's graph executor JSON from a lowered @main (GraphExecutorCodegen).

Reads the module LowerTE made: inputs of @main and the constants it passes
to kernels become "null" nodes (constants named p0, p1, ... and returned as
params); every call of a global kernel becomes a "tvm_op" node naming it. Tuples only
group node entries; a TupleGetItem picks one. Storage ids are planned
greedily: an intermediate's buffer is reused once its last reader has run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.ir.errors import EngineError
from engine.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from engine.ir.module import IRModule
from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.ir.type import TensorType
from engine.relay.analysis.dataflow import dataflow_post_order
from engine.relay.backend.lower_te import lowered_funcs
from engine.relay.strategy.base import out_types, static_shape
from engine.runtime.ndarray import NDArray

Entry = tuple[int, int, int]  # (node index, output index, version)


class GraphCodegenError(EngineError):
    """@main is not a dataflow graph of fused calls (let, if, closures...)."""


@dataclass
class GraphNode:
    op: str
    name: str
    inputs: list[Entry] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    types: list[TensorType] = field(default_factory=list)
    func: Function | None = None
    span: SpanLike = UNKNOWN_SPAN  # a tvm_op's call site: the layers of this call

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "name": self.name,
                               "inputs": [list(e) for e in self.inputs]}
        if self.op != "null":
            out["attrs"] = dict(self.attrs)
        return out


@dataclass
class Graph:
    nodes: list[GraphNode]
    heads: list[Entry]
    params: dict[str, NDArray]
    input_names: list[str]

    def entry_types(self) -> list[TensorType]:
        return [ty for node in self.nodes for ty in node.types]

    def row_ptr(self) -> list[int]:
        ptr = [0]
        for node in self.nodes:
            ptr.append(ptr[-1] + len(node.types))
        return ptr

    def storage_ids(self) -> list[int]:
        return plan_storage(self)

    def to_json(self) -> dict[str, Any]:
        types = self.entry_types()
        return {
            "nodes": [n.as_json() for n in self.nodes],
            "arg_nodes": [k for k, n in enumerate(self.nodes) if n.op == "null"],
            "heads": [list(h) for h in self.heads],
            "node_row_ptr": self.row_ptr(),
            "attrs": {
                "shape": ["list_shape", [list(static_shape(t)) for t in types]],
                "dltype": ["list_str", [t.dtype for t in types]],
                "storage_id": ["list_int", self.storage_ids()],
            },
        }


def plan_storage(graph: Graph) -> list[int]:
    """Greedy reuse: an op output takes a freed buffer of the same byte size."""
    ptr = graph.row_ptr()
    types = graph.entry_types()
    owner = [k for k, node in enumerate(graph.nodes) for _ in node.types]  # entry -> node
    last_use: dict[int, int] = {}
    for k, node in enumerate(graph.nodes):
        for nid, idx, _ in node.inputs:
            last_use[ptr[nid] + idx] = k
    for nid, idx, _ in graph.heads:
        last_use[ptr[nid] + idx] = len(graph.nodes)
    storage: list[int] = [-1] * len(types)
    free: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    next_id = 0
    for k, node in enumerate(graph.nodes):
        for j in range(len(node.types)):
            entry = ptr[k] + j
            size = _nbytes(types[entry])
            pool = free.get(size) if node.op != "null" else None
            if pool:
                storage[entry] = pool.pop()
            else:
                storage[entry], next_id = next_id, next_id + 1
                sizes[storage[entry]] = size
        for entry in {ptr[nid] + idx for nid, idx, _ in node.inputs}:
            if last_use.get(entry) == k and graph.nodes[owner[entry]].op != "null":
                free.setdefault(sizes[storage[entry]], []).append(storage[entry])
    return storage


def _nbytes(ty: TensorType) -> int:
    count = 1
    for d in static_shape(ty):
        count *= d
    return count * np.dtype(ty.dtype if ty.dtype != "bool" else "bool").itemsize


class GraphBuilder:
    """Walks the lowered @main of `mod` in post-order, emitting nodes."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.kernels = set(lowered_funcs(mod))
        self.nodes: list[GraphNode] = []
        self.entries: dict[Expr, list[Entry]] = {}
        self.params: dict[str, NDArray] = {}
        self._handlers: dict[type, Callable[[Any], list[Entry]]] = {
            Var: self._var, Constant: self._constant, Call: self._call, Tuple: self._tuple,
            TupleGetItem: self._getitem, Function: lambda f: [],
        }

    def build(self, main: Function) -> Graph:
        for param in main.params:
            self.entries[param] = self._null(param.name_hint, param.checked_type)
        for expr in dataflow_post_order(main.body):
            self._visit(expr)
        return Graph(self.nodes, self.entries[main.body], self.params,
                     [p.name_hint for p in main.params])

    def _visit(self, expr: Expr) -> None:
        if expr in self.entries:
            return
        handler = self._handlers.get(type(expr))
        if isinstance(expr, (If, Let)):
            raise GraphCodegenError(
                f"graph codegen: @main has control flow ({type(expr).__name__}), which the "
                "graph executor cannot run (TVM compiles such a module for its VM); evaluate "
                "it with relay.create_executor('vm', mod) instead")
        if handler is None:
            raise GraphCodegenError(f"graph codegen: {type(expr).__name__} in @main is not "
                                    "supported (only calls of fused functions, tuples)")
        self.entries[expr] = handler(expr)

    def _null(self, name: str, ty: Any) -> list[Entry]:
        self.nodes.append(GraphNode("null", name, types=out_types(ty)))
        return [(len(self.nodes) - 1, 0, 0)]

    def _var(self, var: Var) -> list[Entry]:
        raise GraphCodegenError(f"graph codegen: free variable {var.name_hint} in @main")

    def _constant(self, const: Constant) -> list[Entry]:
        name = f"p{len(self.params)}"
        self.params[name] = const.data  # a lazy weight stays unread until executed
        return self._null(name, TensorType(const.data.shape, const.data.dtype))

    def _tuple(self, tup: Tuple) -> list[Entry]:
        return [e for f in tup.fields for e in self.entries[f]]

    def _getitem(self, item: TupleGetItem) -> list[Entry]:
        return [self.entries[item.tuple_value][item.index]]

    def _call(self, call: Call) -> list[Entry]:
        gv = call.op
        if not isinstance(gv, GlobalVar) or gv.name_hint not in self.kernels:
            raise GraphCodegenError("graph codegen: @main may only call kernels made by "
                                    f"LowerTE; found a call of {gv}")
        inputs = [e for arg in call.args for e in self.entries[arg]]
        types = out_types(call.checked_type)
        name = gv.name_hint
        node = GraphNode("tvm_op", name, inputs, {
            "func_name": name, "flatten_data": "0", "num_inputs": str(len(inputs)),
            "num_outputs": str(len(types))}, types, self.mod[gv], call.span)
        self.nodes.append(node)
        index = len(self.nodes) - 1
        return [(index, k, 0) for k in range(len(types))]
