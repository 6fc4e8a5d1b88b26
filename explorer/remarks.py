"""The remarks of a run's passes: recorded as each pass ends, queried per pass or node.

The engine keeps a pass's remarks on its frame of the PassContext (engine.transform.
remarks); `record_remarks` copies them, when there are any, into the run's artifact
`remarks/<pass index>` (at most MAX_PER_PASS; the count says how many there were).
`query` answers GET /api/runs/<rid>/remarks: every remark of the run, or those of one
pass, or those about one node: the remarks naming its node id, and those naming one of
the frontend layers its spans carry (a producer FuseOps left apart is rebuilt inside a
new function, so its id in the later snapshot is not the one the remark names).
"""

from __future__ import annotations

from typing import Any, cast

from explorer import compiler
from explorer.export_schema import invalid
from explorer.protocol import PASS_FAILED, PASS_FINISHED, PassRemarks, RemarkEntry, RemarkList
from explorer.queries import SnapshotIndexCache
from explorer.store import Store

MAX_PER_PASS = 5000
ARTIFACT = "remarks/{}"


def record_remarks(store: Store, run_id: str, pass_index: int) -> int:
    """Store the running pass's remarks under its index; how many it made."""
    found = compiler.frame_remarks()
    if not found:
        return 0
    kept = [r.to_json() for r in found[:MAX_PER_PASS]]
    store.put_artifact(run_id, ARTIFACT.format(pass_index),
                       {"count": len(found), "remarks": kept})
    return len(found)


def exported_artifacts(artifacts: dict[str, Any]) -> dict[str, Any]:
    """A run's artifacts for its export: the per-pass remarks gathered under `remarks`
    (by pass index), the others as they are."""
    out: dict[str, Any] = {}
    remarks: dict[str, PassRemarks] = {}
    prefix = ARTIFACT.format("")
    for key, data in artifacts.items():
        if key.startswith(prefix):
            remarks[key[len(prefix):]] = data
        else:
            out[key] = data
    if remarks:
        out["remarks"] = remarks
    return out


def import_remarks(store: Store, run_id: str, remarks: dict[str, PassRemarks]) -> None:
    """Store an export's remarks (checked by explorer/export_schema.py) under their passes."""
    for index, stored in remarks.items():
        if not index.isdigit():
            raise invalid("artifacts.remarks", f"has the key {index[:40]!r}, not a pass index")
        store.put_artifact(run_id, ARTIFACT.format(int(index)), stored)


def _passes(store: Store, run_id: str) -> list[dict[str, Any]]:
    return [e["data"] for e in store.events(run_id)
            if e["type"] in (PASS_FINISHED, PASS_FAILED)]


def pass_remarks(store: Store, run_id: str, pass_index: int) -> tuple[list[RemarkEntry], int]:
    """The stored remarks of one pass (each with its pass index) and how many it made."""
    stored = store.artifact(run_id, ARTIFACT.format(pass_index))
    if stored is None:
        return [], 0
    return ([cast(RemarkEntry, {**r, "pass_index": pass_index}) for r in stored["remarks"]],
            int(stored["count"]))


def query(store: Store, cache: SnapshotIndexCache, run_id: str, pass_index: int | None,
          node_id: int | None) -> RemarkList:
    """RemarkList: {remarks, count, node?, layers?} (see module docstring)."""
    passes = _passes(store, run_id)
    indexes = [p["pass_index"] for p in passes
               if pass_index is None or p["pass_index"] == pass_index]
    remarks: list[RemarkEntry] = []
    count = 0
    for index in indexes:
        found, made = pass_remarks(store, run_id, index)
        remarks.extend(found)
        count += made
    if node_id is None:
        return RemarkList(remarks=remarks, count=count)
    layers = _node_layers(cache, passes, store.run(run_id), node_id)
    about = [r for r in remarks if r["node_id"] == node_id
             or layers.intersection(r["layers"])]
    return RemarkList(remarks=about, count=len(about), node_id=node_id, layers=sorted(layers))


def _node_layers(cache: SnapshotIndexCache, passes: list[dict[str, Any]],
                 summary: Any, node_id: int) -> set[str]:
    """The layers node `node_id` names in the last snapshot of the run that holds it."""
    snapshots = [summary.get("final_snapshot"), *(p.get("after") for p in reversed(passes)),
                 *(p.get("before") for p in reversed(passes))]
    for snap in snapshots:
        if snap is None:
            continue
        spans = cache.get(int(snap)).spans.get(node_id)
        if spans is not None:
            return set(spans)
    return set()
