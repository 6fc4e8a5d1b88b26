"""Read-only queries over a recorded run: diff, backtrace, layer lookup, timing tree.

Everything is derived from the stored events and the printer's source maps
(node id -> text range and spans), as the HTTP routes and the CLI show them.
"""

from __future__ import annotations

import difflib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from explorer.nodediff import node_diff
from explorer.protocol import PASS_FINISHED, RUN_STARTED, ApiError, not_found
from explorer.store import Store


@dataclass(frozen=True, slots=True)
class NodeIndex:
    """One snapshot's source map indexed by node id."""

    spans: dict[int, tuple[str, ...]]
    entries: dict[int, dict[str, Any]]

    @staticmethod
    def of(source_map: list[dict[str, Any]]) -> NodeIndex:
        spans: dict[int, tuple[str, ...]] = {}
        entries: dict[int, dict[str, Any]] = {}
        for entry in source_map:
            nid = int(entry["node_id"])
            if nid not in entries or entries[nid].get("ref"):
                entries[nid] = entry  # the definition, not a use of its name
                spans[nid] = tuple(entry.get("spans") or ())
        return NodeIndex(spans, entries)


class SnapshotIndexCache:
    """Small LRU of parsed source maps, shared by the queries of one app."""

    def __init__(self, store: Store, size: int = 64) -> None:
        self.store = store
        self._size = size
        self._items: OrderedDict[int, NodeIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, snapshot_id: int) -> NodeIndex:
        with self._lock:
            hit = self._items.get(snapshot_id)
            if hit is not None:
                self._items.move_to_end(snapshot_id)
                return hit
        index = NodeIndex.of(self.store.snapshot(snapshot_id)["source_map"])
        with self._lock:
            self._items[snapshot_id] = index
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return index


# --- diff -------------------------------------------------------------------------------
def diff(store: Store, a: int, b: int, text: bool = True) -> dict[str, Any]:
    """The text diff (unless `text` is false: `unified` and `hunks` stay empty) and the
    node-level diff with its one-line summary (explorer.nodediff)."""
    left, right = store.snapshot(a), store.snapshot(b)
    unified, hunks = _text_diff(left["text"], right["text"], a, b) if text else ("", [])
    a_ids = {int(e["node_id"]) for e in left["source_map"]}
    b_ids = {int(e["node_id"]) for e in right["source_map"]}
    nodes = node_diff(left, right)
    return {"a": a, "b": b, "unified": unified, "hunks": hunks,
            "nodes": {"added": sorted(b_ids - a_ids), "removed": sorted(a_ids - b_ids),
                      "kept": sorted(a_ids & b_ids), "rewritten": nodes["rewritten"]},
            "summary": nodes["summary"]}


def _text_diff(a_text: str, b_text: str, a: int, b: int) -> tuple[str, list[dict[str, Any]]]:
    a_lines, b_lines = a_text.splitlines(), b_text.splitlines()
    unified = "\n".join(difflib.unified_diff(a_lines, b_lines, f"snapshot {a}", f"snapshot {b}",
                                             lineterm=""))
    matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    hunks = [{"tag": tag, "a_start": i1 + 1, "a_end": i2, "b_start": j1 + 1, "b_end": j2}
             for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    return unified, hunks


# --- backtrace -------------------------------------------------------------------------
def _finished_passes(store: Store, run_id: str) -> tuple[int | None, list[dict[str, Any]]]:
    initial = None
    passes = []
    for event in store.events(run_id):
        if event["type"] == RUN_STARTED:
            initial = event["data"]["initial_snapshot"]
        elif event["type"] == PASS_FINISHED:
            passes.append(event["data"])
    return initial, passes


def _leaves(passes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((p for p in passes if p["leaf"]), key=lambda p: p["pass_index"])


def backtrace(store: Store, cache: SnapshotIndexCache, run_id: str,
              node_id: int) -> dict[str, Any]:
    """Which pass created the node, which rebuilt expressions carrying its spans, and
    the frontend layers its spans name."""
    initial, passes = _finished_passes(store, run_id)
    if initial is None:
        raise ApiError(409, "run_not_started", f"run {run_id!r} has no snapshot yet")
    layers = _layers_of(cache, node_id, [initial, *(p["after"] for p in passes)])
    if layers is None:
        raise not_found("node in this run", node_id)
    steps = []
    if node_id in cache.get(initial).spans:
        steps.append({"pass_index": None, "pass_name": "import", "snapshot_id": initial,
                      "action": "created"})
    for p in _leaves(passes):
        action = _action(cache.get(p["before"]), cache.get(p["after"]), node_id, set(layers))
        if p["changed"] and action is not None:
            steps.append({"pass_index": p["pass_index"], "pass_name": p["name"],
                          "snapshot_id": p["after"], "action": action})
    return {"node_id": node_id, "layers": list(layers), "steps": steps}


def _layers_of(cache: SnapshotIndexCache, node_id: int,
               snapshots: list[int]) -> tuple[str, ...] | None:
    for snap in reversed(snapshots):
        spans = cache.get(snap).spans.get(node_id)
        if spans is not None:
            return spans
    return None


def _action(before: NodeIndex, after: NodeIndex, node_id: int, layers: set[str]) -> str | None:
    if node_id in after.spans and node_id not in before.spans:
        return "created"
    new_nodes = after.spans.keys() - before.spans.keys()
    if layers and any(layers.intersection(after.spans[n]) for n in new_nodes):
        return "changed"
    if node_id in after.spans and node_id in before.spans:
        return "kept"
    return None


# --- layers ----------------------------------------------------------------------------
def layer_nodes(store: Store, cache: SnapshotIndexCache, run_id: str,
                layer: str) -> dict[str, Any]:
    snap = store.run(run_id)["final_snapshot"]
    if snap is None:
        raise ApiError(409, "run_not_started", f"run {run_id!r} has no snapshot yet")
    index = cache.get(int(snap))
    nodes = [_node_brief(index.entries[n]) for n, spans in index.spans.items()
             if layer in spans]
    return {"layer": layer, "snapshot_id": snap, "nodes": nodes}


def _node_brief(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry.get(k) for k in ("node_id", "kind", "start", "end", "op", "spans")}


# --- timing --------------------------------------------------------------------------------
def timing_tree(store: Store, run_id: str) -> dict[str, Any]:
    _, passes = _finished_passes(store, run_id)
    nodes = {p["pass_index"]: {"pass_index": p["pass_index"], "name": p["name"],
                               "elapsed_ms": p["elapsed_ms"], "changed": p["changed"],
                               "children": []} for p in passes}
    roots: list[dict[str, Any]] = []
    for p in sorted(passes, key=lambda p: p["pass_index"]):
        parent = nodes.get(p["parent_index"])
        (parent["children"] if parent else roots).append(nodes[p["pass_index"]])
    total = sum(r["elapsed_ms"] for r in roots)
    return {"total_ms": round(total, 3), "passes": roots}


def render_timing(tree: dict[str, Any]) -> str:
    lines: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        mark = "*" if node["changed"] else " "
        lines.append(f"{'  ' * depth}{node['name']}: {node['elapsed_ms']:.3f} ms {mark}")
        for child in node["children"]:
            walk(child, depth + 1)

    for root in tree["passes"]:
        walk(root, 0)
    return "\n".join(lines)
