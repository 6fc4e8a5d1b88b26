"""Export a whole run as one JSON document, and import it back as a new session + run.

Snapshot ids are database-local: the export keys snapshots by their old ids
and the import renumbers every reference (events, summary) to the new ones.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from explorer.export_schema import ARTIFACT_FIELDS, check_export, invalid
from explorer.protocol import TERMINAL_EVENTS, bad_request
from explorer.remarks import exported_artifacts, import_remarks
from explorer.session_inputs import clean_name
from explorer.sessions import new_id
from explorer.store import Store

EXPORT_FORMAT = "ir-explorer-run"
EXPORT_VERSION = 1
SNAPSHOT_KEYS = ("initial_snapshot", "before", "after", "final_snapshot", "snapshot")  # run_paused
ARTIFACT_KEYS = tuple(key for key, *_ in ARTIFACT_FIELDS)


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
            "snapshots": snapshots, "artifacts": exported_artifacts(store.artifacts(run_id))}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(raw, parse_constant=_refuse_constant)  # NaN, Infinity: refused
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise bad_request("bad_export", "the file is not a JSON run export") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise bad_request("bad_export", "the file is not an IR Explorer run export")
    if doc.get("version") != EXPORT_VERSION:
        raise bad_request("bad_export", f"unsupported export version {doc.get('version')!r}")
    check_export(doc)
    return doc


def _renumber(value: dict[str, Any], mapping: dict[int, int], where: str) -> dict[str, Any]:
    """A copy of `value` whose snapshot references use the new ids."""
    out = dict(value)
    for key in SNAPSHOT_KEYS:
        old = out.get(key)
        if old is None:
            continue
        if not isinstance(old, int) or isinstance(old, bool):
            raise invalid(f"{where}.{key}", "must be a snapshot id or null")
        if old not in mapping:
            raise invalid(f"{where}.{key}", f"names snapshot {old}, which the export lacks")
        out[key] = mapping[old]
    return out


def _check_references(doc: dict[str, Any]) -> None:
    """Every snapshot id the run and its events name is in the export."""
    known = {int(key): int(key) for key in doc["snapshots"]}
    _renumber(doc["run"], known, "run")
    for k, event in enumerate(doc["events"]):
        _renumber(event["data"], known, f"events[{k}].data")


def import_run(store: Store, raw: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Store an exported run under new ids; returns (session, run summary).

    The whole document is checked (every field, every snapshot reference) before
    anything is stored, so a bad export answers 400 and leaves nothing behind."""
    doc = _parse(raw)
    _check_references(doc)
    sid, rid = new_id(), new_id()
    mapping = {int(old): store.add_snapshot(rid, snap["text"], snap["source_map"])
               for old, snap in doc["snapshots"].items()}
    session = {**doc["session"], "id": sid, "created": time.time(),
               "name": clean_name(doc["session"]["name"])}
    summary = _renumber({**doc["run"], "id": rid, "session_id": sid}, mapping, "run")
    if summary.get("status") == "running":
        summary["status"] = "interrupted"
    store.add_session(session, doc["graph"], None)  # type: ignore[arg-type]
    store.add_run(summary)  # type: ignore[arg-type]
    events = sorted(doc["events"], key=lambda e: e["index"])
    for event in events:
        store.append_event(rid, sid, event["type"], _renumber(event["data"], mapping, "event"))
    if not any(e["type"] in TERMINAL_EVENTS for e in events):
        store.append_event(rid, sid, "run_failed", {"pass": None, "code": "interrupted",
                                                    "message": "the exported run was unfinished"})
    for key, data in (doc.get("artifacts") or {}).items():
        if key == "remarks":
            import_remarks(store, rid, data)
        elif key in ARTIFACT_KEYS:  # what no view reads is not kept
            store.put_artifact(rid, key, data)
    return session, summary
