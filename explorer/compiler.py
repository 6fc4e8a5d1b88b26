"""The explorer's one door into the engine: every explorer module that needs the
compiler imports it from here, and nothing else in explorer/ imports `engine`.

What a run does is the engine's public API at work (TVM's names): import a file
(`relay.frontend.load`), print with a source map, plan and run `relay.build`
(or `relay.optimize`) under a PassContext whose instruments include the
recording one, and read the kernels of the built module. The pass list is the
engine's (`StandardPipeline` + LowerTE); the explorer keeps no copy of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from engine import relay, transform
from engine.instrument import PassInstrument
from engine.ir import IRModule
from engine.ir.errors import PassError
from engine.ir.expr import COMPUTING_KINDS, numbered_from
from engine.ir.traversal import post_order
from engine.ir.type import TensorType
from engine.relay.backend.build_module import (
    GraphExecutorFactoryModule,
    build_passes,
    codegen,
)
from engine.relay.backend.kernel_source import kernel_source, relower
from engine.relay.frontend.onnx.model import inline_local_functions
from engine.relay.frontend.result import json_value
from engine.relay.printer import SourceMapTable, print_ir
from engine.relay.printer import table as source_map_table  # the source map's columns
from engine.relay.qnn import transform as qnn_transform  # registers qnn.CanonicalizeOps
from engine.relay.testing.numerics import (
    NumericsChecker,
    dataflow_node,
    make_inputs,
    tap_values,
    weight_bytes,
)
from engine.relay.testing.reproducer import PassSpec, write_reproducer
from engine.relay.textfile import read_constants, with_metadata
from engine.relay.transform.pipeline import bind_params
from engine.te.config import KEEP_SCHEDULE_RECORD
from engine.transform import PassContext
from engine.transform.remarks import frame_remarks
from explorer.protocol import ModelFormat, PlannedPass, model_format, planned_pass

TARGET = "llvm"
ENGINE_MODULES = ("engine.relay.transform", "engine.relay.frontend", "engine.relay.parser",
                  "engine.relay.frontend.onnx", "engine.relay.frontend.tflite", "onnx",
                  "engine.relay.interpreter", "engine.relay.backend.build_module",
                  "engine.relay.qnn.transform", "engine.relay.op.nn._jit_loops")
"""What the probe and run processes import up front (their fork server preloads these
once; one that cannot be imported is skipped there: the interpreter's numba loops when
numba is not installed; imported there, numba's 0.5 s import is paid once per server,
not once per run that checks numerics)."""

__all__ = ["COUNTED_KINDS", "ENGINE_MODULES", "TARGET", "bind_params", "check_types",
           "compile_module", "Compiled", "dataflow_node", "forget_types", "frame_remarks",
           "GraphExecutorFactoryModule", "Imported", "inline_local_functions", "IRModule",
           "kernel_source", "kernel_steps", "kernels", "load_model", "make_inputs", "model_inputs",
           "NumericsChecker", "pass_context", "PassContext", "PassInstrument", "PassSpec",
           "plan", "print_snapshot", "qnn_transform", "registered_passes",
           "relay_with_constants", "run_passes", "source_map_table", "SourceMapTable",
           "tap_values", "transform", "weight_bytes", "write_reproducer"]


@dataclasses.dataclass(slots=True)
class Imported:
    """An imported model: its module, params, format, frontend graph and warnings."""

    mod: IRModule
    params: dict[str, Any]
    format: ModelFormat
    graph: dict[str, Any]
    warnings: list[str]


@dataclasses.dataclass(slots=True)
class Compiled:
    """What a run's compilation produced: the final module (the one the last pass
    returned) and, when it was built, the factory module relay.build returned."""

    mod: IRModule
    lib: GraphExecutorFactoryModule | None


# --- import ----------------------------------------------------------------------------------
def load_model(path: Path, shapes: dict[str, list[int]] | None,
               trusted: bool = False) -> Imported:
    """Import a model file (ONNX, TFLite, PyTorch .pt2 or Relay text, told apart by the
    engine from its content). Failures are the engine's typed errors (CorruptModelError,
    ParseError, UnsupportedOperatorError, ...). The engine numbers the module's nodes
    deterministically (`numbered_from`): the same file imported in two fresh worker
    processes (the upload's probe, the run's worker) has the same node ids. Big ONNX
    weights stay in the file (memory-mapped constants); an upload brings no other file
    (external data refused), a `trusted` one (a path the user named) reads its own
    folder's external data."""
    with numbered_from():
        result = relay.frontend.load(str(path), shape=shapes, external_data=trusted)
    return Imported(result.mod, dict(result.params or {}), model_format(str(result.format)),
                    graph_json(result.graph), list(result.warnings or []))


def check_types(mod: IRModule) -> None:
    """Type-check an imported module as every run will (InferType): a model the compiler
    would reject raises the engine's error (TypeInferenceError, ...), not a PassError
    around it. InferType records checked types on the nodes, which the printer then
    shows: print a module's snapshot before checking it."""
    try:
        relay.transform.InferType()(mod)
    except PassError as err:
        if isinstance(err.cause, Exception):
            raise err.cause from None
        raise


def forget_types(mod: IRModule) -> None:
    """Clear the types check_types and a run's InferType recorded on `mod`'s nodes, so that
    one import serves several runs in a process: each run records the module as a fresh
    import prints it (no `ty=` trailers), whatever ran on it before."""
    for _, fn in mod.items():
        for node in post_order(fn):
            node.clear_checked_type()


def model_inputs(mod: IRModule, params: dict[str, Any]) -> list[tuple[str, Any]]:
    """(name, type) of each parameter of @main that is not a weight."""
    return [(p.name_hint, p.type_annotation) for p in mod["main"].params
            if p.name_hint not in params]


def static_shape(ty: Any) -> list[int] | None:
    """The concrete shape of a fully static tensor type, else None."""
    if isinstance(ty, TensorType) and ty.is_static:
        return list(ty.concrete_shape)
    return None


def tensor_info(ty: Any) -> tuple[list[int | str], str]:
    """(shape with '?' for unknown dims, dtype) of a type, for display."""
    if isinstance(ty, TensorType):
        return [d if isinstance(d, int) else "?" for d in ty.shape], ty.dtype
    return [], str(ty)


def graph_json(graph: Any) -> dict[str, Any]:
    """A frontend graph (ImportResult.graph) as {layers, inputs, outputs} of plain JSON
    values."""
    raw = json_value(graph or {})
    return {"layers": [_layer_json(layer) for layer in raw.get("layers", [])],
            "inputs": raw.get("inputs", []), "outputs": raw.get("outputs", [])}


def _layer_json(layer: dict[str, Any]) -> dict[str, Any]:
    return {"name": str(layer.get("name", "")), "op_type": str(layer.get("op_type", "")),
            "inputs": [str(x) for x in layer.get("inputs", [])],
            "outputs": [str(x) for x in layer.get("outputs", [])],
            "attrs": layer.get("attrs", {})}


def relay_with_constants(path: Path) -> bytes | None:
    """Relay text with its constants beside it (`NAME.relay` + `NAME.npz`, as a reproducer
    ships them) as one self-contained text, the constants inlined; None for other files."""
    constants = path.with_suffix(".npz")
    if path.suffix.lower() != ".relay" or not constants.exists():
        return None
    return with_metadata(path.read_text(), read_constants(constants)).encode()


# --- printing --------------------------------------------------------------------------------
def print_snapshot(mod: IRModule) -> tuple[str, SourceMapTable]:
    """The module's Relay text (with types) and its source map as a column table."""
    result = print_ir(mod, show_types=True)
    return result.text, result.source_map_table()


# --- passes ----------------------------------------------------------------------------------
COUNTED_KINDS = frozenset(cls.kind for cls in COMPUTING_KINDS) | {"function"}
"""Source-map kinds a node-level diff counts: expressions that compute a value, and functions."""


def registered_passes() -> list[str]:
    return sorted(transform.list_passes())


def pass_context(opt_level: int, required: Iterable[str], disabled: Iterable[str],
                 instruments: Sequence[PassInstrument]) -> PassContext:
    """The context of a run; it keeps TE schedule records (off in TVM and the engine by
    default), which the Schedules tab shows."""
    return PassContext(opt_level=opt_level, required_pass=list(required),
                       disabled_pass=list(disabled), instruments=list(instruments),
                       config={KEEP_SCHEDULE_RECORD: True})


def explicit_pipeline(names: Sequence[str]) -> transform.Pass:
    """A user's explicit pass list, run in order instead of the standard pipeline."""
    return transform.Sequential([transform.get_pass(n) for n in names], opt_level=0,
                                name="explicit")


def run_passes(passes: Sequence[str] | None, build: bool, ctx: PassContext
               ) -> list[transform.Pass]:
    """The top-level passes a run applies under `ctx`: the engine's own list for
    relay.build (build) or relay.optimize, or the user's explicit list (no build)."""
    if passes is not None:
        return [explicit_pipeline(passes)]
    return build_passes(TARGET, build, ctx)


def compile_module(mod: IRModule, params: dict[str, Any], stages: Sequence[transform.Pass],
                   build: bool, ctx: PassContext) -> Compiled:
    """Apply `stages` (from `run_passes`) under `ctx` as relay.build does: params bound
    into @main, each pass in order, then graph codegen when building."""
    mod = bind_params(mod, params)
    with ctx:
        for stage in stages:
            mod = stage(mod)
        return Compiled(mod, codegen(mod, TARGET) if build else None)


def plan(stages: Sequence[transform.Pass], ctx: PassContext) -> list[PlannedPass] | None:
    """The leaf passes `stages` will execute under `ctx`, in order: the engine's dry walk
    (`transform.plan`) of the very passes `compile_module` applies; None when a pass
    requires one that is not registered (the run then fails on it)."""
    try:
        return [planned_pass(name=step.name, depth=step.depth, opt_level=step.opt_level)
                for stage in stages for step in transform.plan(stage, ctx)]
    except transform.PassNotFoundError:
        return None


def kernel_steps(source: str, name: str) -> list[Any]:
    """The schedule steps (engine ScheduleSteps) of a kernel from its `kernel_source`."""
    with PassContext(config={KEEP_SCHEDULE_RECORD: True}):
        return relower(source, TARGET, name).steps()


def kernels(lib: GraphExecutorFactoryModule) -> list[tuple[int, Any]]:
    """(graph node index, schedule) of every kernel node of a built module."""
    bm = lib.build_module
    found = []
    for index in range(bm.num_nodes):
        sched = bm.get_node_schedule(index)
        if sched is not None:
            found.append((index, sched))
    return found
