"""relay.build (TVM's `tvm.relay.build_module`): optimize, fuse, lower, graph JSON.

    lib = relay.build(mod, target="llvm", params=params)
    lib.get_graph_json()                       # the graph executor's JSON
    lib.build_module.get_node_schedule(i)      # te.Schedule of tvm_op node i (None: input)
    lib.build_module.get_node_info(i)          # {name, func_name, spans (of this call), ops}
    lib.build_module.get_node_steps(i)         # per snapshot: primitive, python, nest, TEDD
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))

The build is passes all the way: `optimize` (the standard pipeline), FuseOps
when the pipeline left ops unfused, then LowerTE, which lowers every Primitive
function to one TE schedule (its record kept, its `spans` the fused
function's) and calls it as a global kernel. Graph codegen reads the lowered
module; `lib.ir_mod` is that module, the one an instrument saw last.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.ir.expr import Function
from engine.ir.module import IRModule
from engine.relay.backend.graph_codegen import Graph, GraphBuilder
from engine.relay.backend.lower_te import LowerTE, check_static_inputs, lowered_funcs
from engine.relay.backend.te_compiler import LoweredFunc, ScheduleStep
from engine.relay.transform.pipeline import (
    bind_params,
    bind_params_by_name,
    optimize,
    standard_pipeline,
)
from engine.runtime.ndarray import NDArray
from engine.target import Target, target_kind
from engine.te import Schedule
from engine.transform import Pass, PassContext


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
                "spans": list(node.span.source_names()) if node.span else [],
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
        from engine.relay.backend.graph_executor import GraphRuntime

        return lambda *devices: GraphRuntime(self.graph, devices[0] if devices else None)

    def __iter__(self) -> Any:
        # TVM's old API: graph_json, lib, params = relay.build(...)
        return iter((self.get_graph_json(), self.get_lib(), self.get_params()))


def build_passes(target: str = "llvm", build: bool = True,
                 ctx: PassContext | None = None) -> list[Pass]:
    """The passes relay.build (or, with build=False, relay.optimize) applies in order under
    `ctx` (default: the current context): the standard pipeline; then, to build, FuseOps at
    level 0 (with InferType) when the context disables FuseOps, since graph codegen needs
    every op inside a kernel; then LowerTE. A PassInstrument sees exactly these."""
    from engine.relay.transform import FuseOps, InferType

    ctx = ctx or PassContext.current()
    passes: list[Pass] = [standard_pipeline(ctx.opt_level, target)]
    if not build:
        return passes
    fuse = FuseOps(fuse_opt_level=0)
    if not ctx.pass_enabled(fuse.info):
        passes += [fuse, InferType()]
    return [*passes, LowerTE(target_kind(target))]


def build(ir_mod: IRModule | Function, target: Any = "llvm", target_host: Any = None,
          executor: Any = None, runtime: Any = None, workspace_memory_pools: Any = None,
          constant_memory_pools: Any = None, params: Mapping[str, Any] | None = None,
          mod_name: str = "default") -> GraphExecutorFactoryModule:
    """Optimize, fuse and lower `ir_mod` for `target` under the current PassContext; the
    factory module of the result. Every stage is a pass, so a PassInstrument sees the
    whole build: the standard pipeline, then LowerTE."""
    if isinstance(ir_mod, Function):
        ir_mod = IRModule.from_expr(ir_mod)
    full = Target(_build_target(target))
    mod = bind_params(ir_mod, params)
    check_static_inputs(mod)  # before the pipeline, not at its end
    for stage in build_passes(str(full)):
        mod = stage(mod)
    return codegen(mod, full, mod_name)


def codegen(mod: IRModule, target: Any = "llvm", mod_name: str = "default"
            ) -> GraphExecutorFactoryModule:
    """Graph JSON and params of a module LowerTE has lowered (TVM's GraphExecutorCodegen):
    the last step of relay.build, not a pass (it does not change the module)."""
    kind = target_kind(target)
    graph = GraphBuilder(mod).build(mod["main"])
    factory = GraphExecutorFactoryModule(mod, graph, lowered_funcs(mod), kind)
    factory.libmod_name = mod_name
    return factory


def _build_target(target: Any) -> Any:
    """TVM's forms: a target, a string, or {device: target}; None is the current one."""
    if isinstance(target, Mapping) and "kind" not in target:
        return next(iter(target.values()), "llvm")
    if target is None:
        return Target.current() or "llvm"
    return target


def check_numerics(factory: GraphExecutorFactoryModule, max_elements: int = 4096,
                   snapshots: bool = False, rtol: float = 1e-4, atol: float = 1e-4,
                   seed: int = 0) -> dict[str, str]:
    """Evaluate each small kernel's loop nest (engine.tir.eval) against the interpreter.

    Returns kernel name -> "ok" / "skipped: ..." ; raises AssertionError on a mismatch.
    `snapshots=True` checks every snapshot of the record, not just the final schedule.
    """
    from engine.relay.backend.te_numerics import check_lowered

    rng = np.random.default_rng(seed)
    return {name: check_lowered(low, rng, max_elements, snapshots, rtol, atol)
            for name, low in factory.build_module.lowered.items()}


__all__ = ["BuildModule", "GraphExecutorFactoryModule", "bind_params_by_name", "build",
           "build_passes", "check_numerics", "codegen", "optimize"]
