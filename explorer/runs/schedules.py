"""The kernels of a built run: the schedule record of every kernel node.

Each kernel node of the built module keeps its TE schedule; its
`schedule_record` holds one state per primitive (the vanilla schedule first).
Stored as the run's `schedules` artifact: per node a summary and its steps
(primitive, the Python that replays it, the loop nest, the TEDD DOT views).
The kernels are those of the run's final module (LowerTE's globals).
"""

from __future__ import annotations

from typing import Any

from explorer.compiler import GraphExecutorFactoryModule, kernels

TEDD_VIEWS = ("schedule_tree", "itervar", "dataflow")


def schedules_of(lib: GraphExecutorFactoryModule) -> list[dict[str, Any]]:
    """Every kernel node of `lib` with its steps."""
    bm = lib.build_module
    return [node_json(index, bm.get_node_info(index), bm.get_node_steps(index))
            for index, _ in kernels(lib)]


def node_json(index: int, info: dict[str, Any], steps: list[Any]) -> dict[str, Any]:
    shown = [step_json(k, step) for k, step in enumerate(steps)]
    return {"index": index, "name": str(info.get("name", f"node{index}")),
            "func_name": str(info.get("func_name", "")),
            "spans": [str(s) for s in info.get("spans", [])],
            "ops": [str(o) for o in info.get("ops", [])],
            "num_steps": len(shown), "steps": shown}


def step_json(k: int, step: Any) -> dict[str, Any]:
    """One schedule state (a ScheduleStep of the engine)."""
    tedd = step.tedd or {}
    return {"k": k, "primitive": str(step.primitive or ("vanilla" if k == 0 else "")),
            "python": str(step.python), "loop_nest": str(step.loop_nest),
            "tedd": {view: str(tedd.get(view, "")) for view in TEDD_VIEWS}}
