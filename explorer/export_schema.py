"""The shape of a run export (docs/PROTOCOL.md, "Export"), checked field by field.

`check_export(doc)` raises a 400 `bad_export` ApiError naming the first missing
or invalid field (`run.status`, `events[3].data`, `snapshots["7"].text` ...)
and its expectation, so an import never fails later on a half-stored run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from explorer.protocol import (
    MAX_SAFE_INT,
    ApiError,
    Layer,
    NumericsBreak,
    PassRemarks,
    ScheduleRecord,
    SourceMapEntry,
    TensorInfo,
)
from explorer.protocol.checks import event_problems, problems

Check = Callable[[Any], bool]
Fields = tuple[tuple[str, Check, str, bool], ...]  # (key, check, expectation, required)

RUN_STATUSES = ("running", "finished", "failed", "cancelled", "interrupted")


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: Any) -> bool:
    return _int(v) and v >= 0


def _number(v: Any) -> bool:
    return (isinstance(v, int | float)) and not isinstance(v, bool)


def _opt(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _list_of(check: Check) -> Check:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _dict(v: Any) -> bool:
    return isinstance(v, dict)


def _declared(declared: Any) -> Check:
    """The check of a protocol declaration (explorer.protocol.checks)."""
    return lambda v: not problems(declared, v)


SESSION_FIELDS: Fields = (
    ("name", _str, "a string", True),
    ("format", _str, "a string", True),
    ("num_layers", _count, "a non-negative integer", False),
    ("inputs", _declared(list[TensorInfo]), "a list of TensorInfo", False),
    ("outputs", _declared(list[TensorInfo]), "a list of TensorInfo", False),
)
GRAPH_FIELDS: Fields = (
    ("layers", _declared(list[Layer]), "a list of Layer objects", False),
    ("inputs", lambda v: isinstance(v, list), "a list", False),
    ("outputs", lambda v: isinstance(v, list), "a list", False),
)
RUN_FIELDS: Fields = (
    ("status", lambda v: v in RUN_STATUSES, f"one of {', '.join(RUN_STATUSES)}", True),
    ("options", _dict, "an object", True),
    ("num_passes", _count, "a non-negative integer", True),
    ("num_changed", _count, "a non-negative integer", True),
    ("total_ms", _number, "a number", True),
    ("first_numerics_break", _opt(_str), "a string or null", False),
    ("drifted_layers", _list_of(_str), "a list of strings", False),
    ("failed_pass", _opt(_str), "a string or null", False),
    ("error", _opt(_str), "a string or null", False),
    ("final_snapshot", _opt(_int), "a snapshot id or null", False),
    ("numerics_break", _opt(_declared(NumericsBreak)), "a NumericsBreak or null", False),
)
EVENT_FIELDS: Fields = (
    ("index", _count, "a non-negative integer", True),
    ("type", lambda v: _str(v) and bool(v), "an event type", True),
    ("data", _dict, "an object", True),
)
SNAPSHOT_FIELDS: Fields = (
    ("text", _str, "a string", True),
    ("source_map", _declared(list[SourceMapEntry]), "a list of SourceMapEntry", True),
)
ARTIFACT_FIELDS: Fields = (
    ("schedules", _declared(list[ScheduleRecord]), "a list of ScheduleRecord", False),
    ("remarks", _declared(dict[str, PassRemarks]), "an object of PassRemarks by pass index",
     False),
)
DOCUMENT_FIELDS: Fields = (
    ("session", _dict, "an object", True),
    ("graph", _dict, "an object", True),
    ("run", _dict, "an object", True),
    ("events", lambda v: isinstance(v, list), "a list", True),
    ("snapshots", _dict, "an object", True),
    ("artifacts", _opt(_dict), "an object", False),
)


def invalid(field: str, problem: str) -> ApiError:
    return ApiError(400, "bad_export", f"the export's {field} {problem}", {"field": field})


def check_fields(value: Any, fields: Fields, where: str) -> None:
    if not isinstance(value, Mapping):
        raise invalid(where, "must be an object")
    for key, check, expected, required in fields:
        name = f"{where}.{key}" if where else key
        if key not in value:
            if required:
                raise invalid(name, "is missing")
            continue
        if not check(value[key]):
            raise invalid(name, f"must be {expected}")


def check_numbers(value: Any) -> None:
    """Every number in a JSON value is finite and within +-MAX_SAFE_INT (iterative: an export
    nested deeper than Python's recursion limit is still checked)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise invalid("numbers", f"must be finite, not {item!r}")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_SAFE_INT:
            raise invalid("numbers", f"must be at most {MAX_SAFE_INT} in size, not {item}")


def check_export(doc: Mapping[str, Any]) -> None:
    """Raise a 400 naming the first missing or invalid field of a run export."""
    check_numbers(doc)
    check_fields(doc, DOCUMENT_FIELDS, "")
    check_fields(doc["session"], SESSION_FIELDS, "session")
    check_fields(doc["graph"], GRAPH_FIELDS, "graph")
    check_fields(doc["run"], RUN_FIELDS, "run")
    for k, event in enumerate(doc["events"]):
        check_fields(event, EVENT_FIELDS, f"events[{k}]")
        found = event_problems(event["type"], event["data"], f"events[{k}].data")
        if found:
            field, _, problem = found[0].partition(": ")
            raise invalid(field, problem)
    indices = [e["index"] for e in doc["events"]]
    if len(set(indices)) != len(indices):
        raise invalid("events", "must have distinct indices")
    for key, snapshot in doc["snapshots"].items():
        if not (isinstance(key, str) and key.isdigit()):
            raise invalid(f"snapshots[{key!r}]", "must be keyed by a snapshot id")
        check_fields(snapshot, SNAPSHOT_FIELDS, f"snapshots[{key!r}]")
    check_fields(doc.get("artifacts") or {}, ARTIFACT_FIELDS, "artifacts")
