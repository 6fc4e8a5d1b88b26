"""relay.build (TVM's `tvm.relay.build_module`): optimize, fuse, lower, graph JSON.

    lib = relay.build(mod, target="llvm", params=params)
    lib.get_graph_json()                       # the graph executor's JSON
    lib.build_module.get_node_schedule(i)      # te.Schedule of tvm_op node i (None: input)
    lib.build_module.get_node_info(i)          # {name, func_name, spans, ops}
    lib.build_module.get_node_steps(i)         # per snapshot: primitive, python, nest, TEDD
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))

Every Primitive function is lowered to one TE schedule whose `spans` are the
fused function's; the record (`te.keep_schedule_record`) is kept per node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.ir.expr import Call, Function
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.relay.expr_functor import post_order_visit
from engine.relay.graph_codegen import Graph, GraphBuilder
from engine.relay.te_compiler import LoweredFunc, ScheduleStep, lower_primitive
from engine.relay.transform.pipeline import bind_params_by_name, optimize
from engine.runtime.ndarray import NDArray
from engine.te import Schedule


class BuildModule:
    """The per-node view of a build: schedules, records and provenance of each graph node."""

    def __init__(self, graph: Graph, lowered: Mapping[str, LoweredFunc]) -> None:
        self.graph = graph
        self.lowered = dict(lowered)

    def _node(self, index: int) -> Any:
        if not 0 <= index < len(self.graph.nodes):
            raise IndexError(f"graph node {index} out of range ({len(self.graph.nodes)} nodes)")
        return self.graph.nodes[index]

    def get_lowered(self, index: int) -> LoweredFunc | None:
        node = self._node(index)
        return self.lowered.get(node.name) if node.op == "tvm_op" else None

    def get_node_schedule(self, index: int) -> Schedule | None:
        """The TE schedule of tvm_op node `index`; None for an input or param node."""
        lowered = self.get_lowered(index)
        return lowered.schedule if lowered is not None else None

    def get_node_steps(self, index: int) -> list[ScheduleStep]:
        lowered = self.get_lowered(index)
        return lowered.steps() if lowered is not None else []

    def get_node_info(self, index: int) -> dict[str, Any]:
        node = self._node(index)
        lowered = self.get_lowered(index)
        if lowered is None:
            return {"name": node.name, "func_name": "", "spans": [], "ops": []}
        return {"name": node.name, "func_name": lowered.name,
                "spans": list(lowered.spans.source_names()) if lowered.spans else [],
                "ops": list(lowered.ops), "anchor": lowered.anchor, "extern": lowered.extern}

    @property
    def num_nodes(self) -> int:
        return len(self.graph.nodes)


class GraphExecutorFactoryModule:
    """What relay.build returns: graph JSON, params, the lowered kernels, the built IR."""

    def __init__(self, ir_mod: IRModule, graph: Graph, lowered: Mapping[str, LoweredFunc],
                 target: str) -> None:
        self.ir_mod = ir_mod
        self.graph = graph
        self.target = target
        self.build_module = BuildModule(graph, lowered)
        self.libmod_name = "default"

    def get_graph_json(self) -> str:
        return json.dumps(self.graph.to_json())

    @property
    def graph_json(self) -> str:
        return self.get_graph_json()

    def get_params(self) -> dict[str, NDArray]:
        return {k: NDArray(v) for k, v in self.graph.params.items()}

    @property
    def params(self) -> dict[str, NDArray]:
        return self.get_params()

    def get_lib(self) -> dict[str, LoweredFunc]:
        """The kernels by name (each lowers with `.lower()`)."""
        return dict(self.build_module.lowered)

    @property
    def lib(self) -> dict[str, LoweredFunc]:
        return self.get_lib()

    def __getitem__(self, key: str) -> Any:
        if key != self.libmod_name:
            raise KeyError(f"no module {key!r} (this build is {self.libmod_name!r})")
        from engine.contrib.graph_executor import GraphRuntime

        return lambda *devices: GraphRuntime(self.graph, devices[0] if devices else None)

    def __iter__(self) -> Any:
        # TVM's old API: graph_json, lib, params = relay.build(...)
        return iter((self.get_graph_json(), self.get_lib(), self.get_params()))


def _needs_fusion(func: Function) -> bool:
    found = []

    def visit(expr: Any) -> None:
        if isinstance(expr, Function) and expr.is_primitive():
            return
        if isinstance(expr, Call) and isinstance(expr.op, Op):
            found.append(expr)
    post_order_visit(func.body, visit)
    # calls inside primitive functions are visited too: only count those outside them
    inside: set[int] = set()

    def mark(expr: Any) -> None:
        if isinstance(expr, Function) and expr.is_primitive():
            post_order_visit(expr.body, lambda e: inside.add(id(e)))
    post_order_visit(func.body, mark)
    return any(id(c) not in inside for c in found)


def _ensure_fused(mod: IRModule) -> IRModule:
    from engine.relay.transform import FuseOps, InferType

    if not _needs_fusion(mod["main"]):
        return mod
    return InferType()(FuseOps(fuse_opt_level=0)(mod))


def lower_graph(graph_main: Function, target: str) -> tuple[Graph, dict[str, LoweredFunc]]:
    """Graph nodes of @main and the lowered kernel of every fused call."""
    lowered: dict[str, LoweredFunc] = {}
    by_func: dict[int, str] = {}
    from engine.relay.transform.fuse_ops import fused_function_name

    def kernel_name(func: Function) -> str:
        known = by_func.get(id(func))
        if known is not None:
            return known
        base = fused_function_name(func)
        name, k = base, 0
        while name in lowered:
            k += 1
            name = f"{base}_{k}"
        lowered[name] = lower_primitive(func, target, name)
        by_func[id(func)] = name
        return name

    graph = GraphBuilder(kernel_name).build(graph_main)
    return graph, lowered


def build(ir_mod: IRModule | Function, target: Any = "llvm", target_host: Any = None,
          executor: Any = None, runtime: Any = None, workspace_memory_pools: Any = None,
          constant_memory_pools: Any = None, params: Mapping[str, Any] | None = None,
          mod_name: str = "default") -> GraphExecutorFactoryModule:
    """Optimize, fuse and lower `ir_mod` for `target`; the factory module of the result."""
    from engine.relay.strategy.base import normalize_target
    from engine.target import Target

    if isinstance(ir_mod, Function):
        ir_mod = IRModule.from_expr(ir_mod)
    if isinstance(target, Mapping) and "kind" not in target:
        target = next(iter(target.values()), "llvm")
    if target is None:
        target = Target.current() or "llvm"
    target = Target(target)
    kind = normalize_target(target)
    mod, _ = optimize(ir_mod, str(target), params)  # under the caller's PassContext
    mod = _ensure_fused(mod)
    graph, lowered = lower_graph(mod["main"], kind)
    factory = GraphExecutorFactoryModule(mod, graph, lowered, kind)
    factory.libmod_name = mod_name
    return factory


def check_numerics(factory: GraphExecutorFactoryModule, max_elements: int = 4096,
                   snapshots: bool = False, rtol: float = 1e-4, atol: float = 1e-4,
                   seed: int = 0) -> dict[str, str]:
    """Evaluate each small kernel's loop nest (engine.tir.eval) against the interpreter.

    Returns kernel name -> "ok" / "skipped: ..." ; raises AssertionError on a mismatch.
    `snapshots=True` checks every snapshot of the record, not just the final schedule.
    """
    from engine.relay.te_numerics import check_lowered

    rng = np.random.default_rng(seed)
    return {name: check_lowered(low, rng, max_elements, snapshots, rtol, atol)
            for name, low in factory.build_module.lowered.items()}


__all__ = ["BuildModule", "GraphExecutorFactoryModule", "bind_params_by_name", "build",
           "check_numerics", "lower_graph", "optimize"]
