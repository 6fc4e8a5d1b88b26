"""What the server really answers matches explorer/protocol: every HTTP body and socket
ack of one built run, checked field by field against its declaration, and (once the run
path builds its events with explorer.protocol's builders) every RunEvent's data."""

from __future__ import annotations

import io
from typing import Any

import pytest
from explorer_helpers import collect_until, start, subscribe, terminal, upload

from explorer import protocol as p
from explorer.protocol.checks import event_problems, problems


@pytest.fixture()
def built_run(client: Any, sock: Any) -> tuple[str, str, list[dict[str, Any]]]:
    session = upload(client)
    run_id = start(sock, session["id"], opt_level=3, build=True)
    assert problems(p.SubscribeAck, subscribe(sock, run_id)) == []
    events = collect_until(sock, terminal, timeout=60)
    assert events[-1]["type"] == p.RUN_FINISHED, events[-1]
    return session["id"], run_id, events


def _get(client: Any, url: str, declared: Any) -> Any:
    resp = client.get(url)
    body = resp.get_json()
    assert problems(declared, body, url) == [], body
    return body


def test_http_answers_match_their_declarations(client, built_run):
    sid, rid, events = built_run
    _get(client, "/api/sessions", p.SessionList)
    _get(client, f"/api/sessions/{sid}", p.SessionDetail)
    _get(client, f"/api/runs/{rid}", p.RunDetail)
    _get(client, f"/api/runs/{rid}/events?since=0", p.EventsPage)
    _get(client, "/api/passes", p.PassList)
    _get(client, f"/api/runs/{rid}/timing", p.Timing)
    last = next(e["data"]["after"] for e in reversed(events) if e["type"] == p.PASS_FINISHED)
    first = events[0]["data"]["initial_snapshot"]
    snap = _get(client, f"/api/snapshots/{last}", p.SnapshotDetail)["snapshot"]
    _get(client, f"/api/snapshots/{last}?part=text", p.SnapshotTextDetail)
    _get(client, f"/api/snapshots/{last}?part=source_map", p.SnapshotSourceMapDetail)
    _get(client, f"/api/diff?a={first}&b={last}", p.Diff)
    node = next(e for e in snap["source_map"] if e["spans"])
    _get(client, f"/api/runs/{rid}/backtrace/{node['node_id']}", p.Backtrace)
    _get(client, f"/api/runs/{rid}/layers/{node['spans'][0]}", p.LayerLookup)
    kernels = _get(client, f"/api/runs/{rid}/schedules", p.ScheduleList)["nodes"]
    _get(client, f"/api/runs/{rid}/schedules/{kernels[0]['index']}", p.ScheduleDetail)


def test_errors_export_and_import_match_their_declarations(client, built_run):
    _, rid, _ = built_run
    assert problems(p.ErrorResponse, client.get("/api/runs/nope").get_json()) == []
    export = client.get(f"/api/runs/{rid}/export")
    assert problems(p.RunExport, export.get_json()) == []
    resp = client.post("/api/runs/import", content_type="multipart/form-data",
                       data={"file": (io.BytesIO(export.data), "run.json")})
    assert resp.status_code == 201 and problems(p.RunImported, resp.get_json()) == []


def test_socket_acks_match_their_declarations(client, sock):
    session = upload(client)
    ack = sock.emit(p.START_RUN, {"session_id": session["id"], "options": {"passes": []}},
                    namespace=p.NAMESPACE, callback=True)
    assert problems(p.StartRunAck, ack) == []
    for event, declared in ((p.CANCEL_RUN, p.OkAck), (p.UNSUBSCRIBE, p.OkAck)):
        reply = sock.emit(event, {"run_id": ack["run_id"]}, namespace=p.NAMESPACE,
                          callback=True)
        assert problems(declared, reply) == [], (event, reply)
    bad = sock.emit(p.SUBSCRIBE, {}, namespace=p.NAMESPACE, callback=True)
    assert problems(p.ErrorResponse, bad) == []


def test_every_run_event_matches_its_payload(built_run):
    _, _, events = built_run
    found = sorted({msg for e in events for msg in event_problems(e["type"], e["data"])})
    assert not found, "\n".join(found)
