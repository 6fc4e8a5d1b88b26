"""Export a whole run as one JSON document, and import it back as a new session + run.

Snapshot ids are database-local: the export keys snapshots by their old ids
and the import renumbers every reference (events, summary) to the new ones.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from explorer.protocol import TERMINAL_EVENTS, ApiError, bad_request
from explorer.sessions import new_id
from explorer.store import Store

EXPORT_FORMAT = "ir-explorer-run"
EXPORT_VERSION = 1
SNAPSHOT_KEYS = ("initial_snapshot", "before", "after", "final_snapshot")


def _snapshot_ids(events: list[dict[str, Any]], summary: Mapping[str, Any]) -> set[int]:
    ids = {summary.get("final_snapshot")}
    for event in events:
        ids.update(event["data"].get(k) for k in SNAPSHOT_KEYS)
    return {int(i) for i in ids if i is not None}


def export_run(store: Store, run_id: str) -> dict[str, Any]:
    summary = store.run(run_id)
    sid = summary["session_id"]
    events = [dict(e) for e in store.events(run_id)]
    snapshots = {}
    for snap_id in sorted(_snapshot_ids(events, summary)):
        snap = store.snapshot(snap_id)
        snapshots[str(snap_id)] = {"text": snap["text"], "source_map": snap["source_map"]}
    return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported": time.time(),
            "session": store.session(sid), "graph": store.session_graph(sid), "run": summary,
            "events": [{"index": e["index"], "type": e["type"], "data": e["data"]}
                       for e in events],
            "snapshots": snapshots, "artifacts": store.artifacts(run_id)}


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise bad_request("bad_export", "the file is not a JSON run export") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise bad_request("bad_export", "the file is not an IR Explorer run export")
    if doc.get("version") != EXPORT_VERSION:
        raise bad_request("bad_export", f"unsupported export version {doc.get('version')!r}")
    for key, kind in (("session", dict), ("graph", dict), ("run", dict), ("events", list),
                      ("snapshots", dict)):
        if not isinstance(doc.get(key), kind):
            raise bad_request("bad_export", f"the export has no valid {key!r}")
    return doc


def _renumber(value: dict[str, Any], mapping: dict[int, int]) -> dict[str, Any]:
    out = dict(value)
    for key in SNAPSHOT_KEYS:
        old = out.get(key)
        if old is not None:
            if int(old) not in mapping:
                raise bad_request("bad_export", f"snapshot {old} is referenced but missing")
            out[key] = mapping[int(old)]
    return out


def import_run(store: Store, raw: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Store an exported run under new ids; returns (session, run summary)."""
    doc = _parse(raw)
    sid, rid = new_id(), new_id()
    try:
        mapping = {int(old): store.add_snapshot(rid, s["text"], s["source_map"])
                   for old, s in doc["snapshots"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise bad_request("bad_export", "a snapshot in the export is malformed") from None
    session = {**doc["session"], "id": sid, "created": time.time()}
    summary = _renumber({**doc["run"], "id": rid, "session_id": sid}, mapping)
    if summary.get("status") == "running":
        summary["status"] = "interrupted"
    store.add_session(session, doc["graph"], None)  # type: ignore[arg-type]
    store.add_run(summary)  # type: ignore[arg-type]
    for event in sorted(doc["events"], key=_event_index):
        store.append_event(rid, sid, str(event["type"]), _renumber(event["data"], mapping))
    if not any(e["type"] in TERMINAL_EVENTS for e in doc["events"]):
        store.append_event(rid, sid, "run_failed", {"pass": None, "code": "interrupted",
                                                    "message": "the exported run was unfinished"})
    for key, data in (doc.get("artifacts") or {}).items():
        store.put_artifact(rid, str(key), data)
    return session, summary


def _event_index(event: Any) -> int:
    if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
        raise ApiError(400, "bad_export", "an event in the export is malformed")
    return int(event.get("index", 0))
