"""The kernels of a built run, and the schedule steps of one when it is opened.

A build lowers each distinct fused function once (the engine's TECompiler), so a
kernel may have many call sites: graph nodes whose layers differ. The run stores
the `schedules` artifact: per kernel its calls (graph node index and layers of
each), its ops, how many steps its schedule record shows, and its source (the
primitive function as Relay text, `kernel_source`). The steps themselves
(primitive, the Python that replays it, the loop nest, the TEDD DOT views) cost
far more than the build, so they are made from that source when a user opens
the kernel (`steps_json`), never up front.
"""

from __future__ import annotations

from typing import Any

from explorer.compiler import GraphExecutorFactoryModule, kernel_source, kernel_steps, kernels
from explorer.protocol import KernelCall, ScheduleNode, ScheduleRecord, ScheduleStep

TEDD_VIEWS = ("schedule_tree", "itervar", "dataflow")


def schedules_of(lib: GraphExecutorFactoryModule) -> list[ScheduleRecord]:
    """Every kernel of `lib` with its call sites, in the order of its first call."""
    bm = lib.build_module
    calls: dict[str, list[KernelCall]] = {}
    for index, _ in kernels(lib):
        info = bm.get_node_info(index)
        calls.setdefault(str(info["func_name"]), []).append(
            KernelCall(index=index, spans=[str(s) for s in info["spans"]]))
    return [kernel_json(bm.lowered[name], sites) for name, sites in calls.items()]


def kernel_json(lowered: Any, calls: list[KernelCall]) -> ScheduleRecord:
    """One kernel (an engine LoweredFunc) and its calls, as the run stores it."""
    layers = list(dict.fromkeys(span for call in calls for span in call["spans"]))
    return ScheduleRecord(index=calls[0]["index"], name=lowered.name, func_name=lowered.name,
                          spans=layers, ops=[str(o) for o in lowered.ops],
                          num_steps=lowered.num_steps(), num_calls=len(calls), calls=calls,
                          source=kernel_source(lowered))


def node_json(record: ScheduleRecord) -> ScheduleNode:
    """What the kernel list shows of a kernel (no source, steps or per-call layers)."""
    return ScheduleNode(index=record["index"], name=record["name"],
                        func_name=record["func_name"], spans=record["spans"],
                        ops=record["ops"], num_steps=record["num_steps"],
                        num_calls=record.get("num_calls", 1))


def find_kernel(records: list[ScheduleRecord], index: int) -> ScheduleRecord | None:
    """The kernel that graph node `index` calls."""
    for record in records:
        if any(call["index"] == index for call in record.get("calls", [])) or \
                record["index"] == index:
            return record
    return None


def steps_json(record: ScheduleRecord) -> list[ScheduleStep]:
    """The kernel's steps: made from its source (a record stored before steps were made on
    demand carries them)."""
    stored = record.get("steps")
    if stored is not None:
        return stored
    return [step_json(k, step) for k, step in
            enumerate(kernel_steps(record["source"], record["func_name"]))]


def step_json(k: int, step: Any) -> ScheduleStep:
    """One schedule state (a ScheduleStep of the engine)."""
    tedd = step.tedd or {}
    return {"k": k, "primitive": str(step.primitive or ("vanilla" if k == 0 else "")),
            "python": str(step.python), "loop_nest": str(step.loop_nest),
            "tedd": {"schedule_tree": str(tedd.get("schedule_tree", "")),
                     "itervar": str(tedd.get("itervar", "")),
                     "dataflow": str(tedd.get("dataflow", ""))}}
