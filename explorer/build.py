"""After the pipeline: `relay.build` and the schedule record of every graph node.

Each graph node of the built module keeps its TE schedule
(`lib.build_module.get_node_schedule(i)`); its `schedule_record` holds one
state per primitive (the vanilla schedule first). Stored as the run's
`schedules` artifact: per node a summary and its steps (primitive, the Python
that replays it, the loop nest, the TEDD DOT views).
"""

from __future__ import annotations

from typing import Any

from engine.ir import IRModule

TEDD_VIEWS = ("schedule_tree", "itervar", "dataflow")


def build_schedules(mod: IRModule, target: str = "llvm") -> list[dict[str, Any]]:
    from engine import relay

    lib = relay.build(mod, target=target)
    bm = lib.build_module
    nodes = []
    index = 0
    while True:
        try:
            sched = bm.get_node_schedule(index)
        except IndexError:
            break
        if sched is not None:
            nodes.append(node_json(index, bm, sched))
        index += 1
    return nodes


def node_json(index: int, bm: Any, sched: Any) -> dict[str, Any]:
    info = _node_info(bm, index)
    steps = [step_json(k, step) for k, step in enumerate(_steps(bm, index, sched))]
    return {"index": index, "name": str(info.get("name", f"node{index}")),
            "func_name": str(info.get("func_name", "")),
            "spans": [str(s) for s in info.get("spans", [])],
            "ops": [str(o) for o in info.get("ops", [])],
            "num_steps": len(steps), "steps": steps}


def _node_info(bm: Any, index: int) -> dict[str, Any]:
    get = getattr(bm, "get_node_info", None)
    return dict(get(index)) if get is not None else {}


def _steps(bm: Any, index: int, sched: Any) -> list[Any]:
    """Per snapshot what the UI shows: the engine's `get_node_steps` (primitive, Python,
    loop nest and TEDD views computed in one replay), else the bare record."""
    get = getattr(bm, "get_node_steps", None)
    return list(get(index)) if get is not None else _record(sched)


def _record(sched: Any) -> list[Any]:
    record = getattr(sched, "schedule_record", None)
    return list(record) if record is not None else []


def step_json(k: int, step: Any) -> dict[str, Any]:
    """One schedule state: read by attribute (the TE record) or key (a dict)."""
    def get(name: str, default: Any = "") -> Any:
        if isinstance(step, dict):
            return step.get(name, default)
        value = getattr(step, name, default)
        return value() if callable(value) else value

    tedd = get("tedd", {}) or {}
    return {"k": k, "primitive": str(get("primitive", "vanilla" if k == 0 else "")),
            "python": str(get("python")), "loop_nest": str(get("loop_nest")),
            "tedd": {view: str(tedd.get(view, "")) for view in TEDD_VIEWS}}
