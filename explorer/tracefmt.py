"""The text backtrace of the CLI (`explorer trace`), after the span-filling RFC.

A target is a node id (`123` or `#123`), a bound name of the final IR
(`%12`, as printed), or a frontend layer name.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from explorer import queries
from explorer.protocol import ApiError, bad_request
from explorer.store import Store

_NODE = re.compile(r"#?(\d+)")
_NAME = re.compile(r"%[\w.]+")


@dataclass(frozen=True, slots=True)
class Target:
    node_id: int | None = None
    layer: str | None = None


def _final(store: Store, run_id: str) -> dict[str, Any]:
    snap = store.run(run_id)["final_snapshot"]
    if snap is None:
        raise ApiError(409, "run_not_started", "the run produced no IR")
    return store.snapshot(int(snap))


def resolve_target(store: Store, run_id: str, raw: str) -> Target:
    if _NODE.fullmatch(raw):
        return Target(node_id=int(raw.lstrip("#")))
    final = _final(store, run_id)
    if _NAME.fullmatch(raw):
        return Target(node_id=_bound_node(final, raw))
    layers = sorted({s for e in final["source_map"] for s in e.get("spans") or ()})
    if raw in layers:
        return Target(layer=raw)
    close = difflib.get_close_matches(raw, layers, n=5)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    raise bad_request("unknown_target", f"{raw!r} is neither a node id, a %name of the final "
                      f"IR nor a layer name of its spans{hint}")


def _bound_node(snapshot: dict[str, Any], name: str) -> int:
    """The node whose value the final IR binds to `name` (`  %3 = nn.relu(...)`)."""
    pattern = re.compile(rf"^\s*{re.escape(name)}\s*=\s*")
    for number, line in enumerate(snapshot["text"].splitlines(), start=1):
        found = pattern.match(line)
        if not found:
            continue
        here = [e for e in snapshot["source_map"]
                if e["start"][0] == number and e["kind"] != "var" and not e.get("ref")]
        if here:
            return int(min(here, key=lambda e: e["start"][1])["node_id"])
    raise bad_request("unknown_target", f"{name} is not bound in the final IR")


def _line(text_lines: list[str], entry: dict[str, Any]) -> str:
    line = entry["start"][0]
    return text_lines[line - 1].strip() if 0 < line <= len(text_lines) else ""


def trace_text(store: Store, cache: queries.SnapshotIndexCache, run_id: str,
               target: Target) -> str:
    final = _final(store, run_id)
    lines = final["text"].splitlines()
    if target.layer is not None:
        found = queries.layer_nodes(store, cache, run_id, target.layer)
        out = [f"layer {target.layer!r}: {len(found['nodes'])} expressions in the final IR"]
        for node in found["nodes"]:
            out.append(f"  #{node['node_id']} {node['kind']} {node['op'] or ''} "
                       f"line {node['start'][0]}: {_line(lines, node)}")
        return "\n".join(out)
    assert target.node_id is not None
    trace = queries.backtrace(store, cache, run_id, target.node_id)
    entry = queries.NodeIndex.of(final["source_map"]).entries.get(target.node_id)
    head = (f"#{target.node_id} line {entry['start'][0]}: {_line(lines, entry)}" if entry
            else f"#{target.node_id} (not in the final IR)")
    out = [head, f"frontend layers: {', '.join(trace['layers']) or '(none)'}", "passes:"]
    for step in trace["steps"]:
        index = "" if step["pass_index"] is None else f"#{step['pass_index']} "
        out.append(f"  {index}{step['pass_name']}: {step['action']} "
                   f"(snapshot {step['snapshot_id']})")
    return "\n".join(out)
