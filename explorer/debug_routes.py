"""HTTP API of debugging runs (docs/PROTOCOL.md, "Debugging"): breakpoints, resuming a
paused run, comparing two runs. Thin adapters into the run manager and explorer.compare;
the same controls exist on the socket (`set_breakpoints`, `resume_run`)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from explorer.compare import compare_runs
from explorer.extensions import services
from explorer.protocol import (
    BreakpointList,
    ResumeAck,
    bad_request,
    check_action,
    check_breakpoints,
    check_pause_at,
    check_run_pair,
)

bp = Blueprint("debugging", __name__)


@bp.get("/api/runs/<rid>/breakpoints")
def get_breakpoints(rid: str) -> Response:
    breakpoints, live = services().runs.breakpoints(rid)
    return jsonify(BreakpointList(breakpoints=breakpoints, live=live))


@bp.put("/api/runs/<rid>/breakpoints")
def put_breakpoints(rid: str) -> Response:
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or "breakpoints" not in body:
        raise bad_request("bad_payload", 'send {"breakpoints": [{"kind", "target"}]} as JSON')
    breakpoints = check_breakpoints(body["breakpoints"])
    live = services().runs.set_breakpoints(rid, breakpoints)
    return jsonify(BreakpointList(breakpoints=breakpoints if live else [], live=live))


@bp.post("/api/runs/<rid>/resume")
def resume_run(rid: str) -> Response:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise bad_request("bad_payload", 'send {"action": "continue" | "step" | "stop"} as JSON')
    return jsonify(ResumeAck(ok=services().runs.resume(rid, check_action(body.get("action")),
                                                       check_pause_at(body.get("at")))))


@bp.get("/api/compare")
def compare() -> Response:
    a, b = check_run_pair(request.args.get("a"), request.args.get("b"))
    return jsonify(compare_runs(services().store, a, b))
