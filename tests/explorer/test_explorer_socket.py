"""Socket.IO protocol: live events in order, replay with `since`, cancel, failures,
concurrent runs that never mix."""

from __future__ import annotations

import threading
from typing import Any

from explorer_helpers import (
    collect_until,
    run_events,
    start,
    subscribe,
    terminal,
    upload,
)

from explorer import socketio_of
from explorer.protocol import NAMESPACE

PIPELINE = ["ExplorerTestRebuild", "ExplorerTestNoop", "ExplorerTestGate",
            "ExplorerTestRebuild"]


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_events_stream_in_order_while_the_pipeline_runs(client, sock, gate):
    session = upload(client)
    run_id = start(sock, session["id"], passes=PIPELINE)
    assert subscribe(sock, run_id)["ok"] is True
    # The gated pass blocks the pipeline: the first passes arrive before the last finishes.
    early = collect_until(sock, lambda ev: any(
        e["type"] == "pass_started" and e["data"]["name"] == "ExplorerTestGate" for e in ev))
    assert sum(e["type"] == "pass_finished" for e in early) == 2
    assert not terminal(early)
    assert client.get(f"/api/runs/{run_id}").get_json()["run"]["status"] == "running"
    gate.set()
    events = early + collect_until(sock, terminal)
    assert [e["index"] for e in events] == list(range(len(events)))
    assert {e["run_id"] for e in events} == {run_id}
    assert events[0]["type"] == "run_started"
    assert events[-1]["type"] == "run_finished"
    finished = [e["data"] for e in events if e["type"] == "pass_finished"]
    leaves = [f for f in finished if f["depth"] > 0]
    assert [f["name"] for f in leaves] == PIPELINE
    assert [f["changed"] for f in leaves] == [True, False, True, True]
    noop = leaves[1]
    assert noop["before"] == noop["after"]  # unchanged module: snapshot reused
    assert leaves[0]["before"] != leaves[0]["after"]
    assert all(f["span_coverage"] == 1.0 for f in leaves)
    summary = events[-1]["data"]["summary"]
    assert summary["status"] == "finished"
    assert summary["num_passes"] == 4 and summary["num_changed"] == 3


def test_subscribe_since_replays_exactly_the_missed_events(client, app, gate):
    session = upload(client)
    first = socketio_of(app).test_client(app, namespace=NAMESPACE)
    run_id = start(first, session["id"], passes=PIPELINE)
    subscribe(first, run_id)
    seen = collect_until(first, lambda ev: len(ev) >= 3)
    first.disconnect(namespace=NAMESPACE)  # dropped mid-run
    gate.set()
    late = socketio_of(app).test_client(app, namespace=NAMESPACE)
    since = seen[-1]["index"] + 1
    ack = subscribe(late, run_id, since)
    rest = collect_until(late, terminal)
    assert ack["ok"] is True
    assert [e["index"] for e in rest] == list(range(since, since + len(rest)))
    stored = client.get(f"/api/runs/{run_id}/events?since=0").get_json()["events"]
    assert seen + rest == stored
    late.disconnect(namespace=NAMESPACE)


def test_replay_and_live_handover_never_loses_or_duplicates(client, app, sock):
    session = upload(client)
    passes = ["ExplorerTestSleep", "ExplorerTestRebuild"] * 6
    run_id = start(sock, session["id"], passes=passes)
    clients = []
    for _ in range(4):  # subscribe at different moments of the run
        c = socketio_of(app).test_client(app, namespace=NAMESPACE)
        subscribe(c, run_id, 0)
        clients.append(c)
    streams = [collect_until(c, terminal) for c in clients]
    stored = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    for stream in streams:
        assert stream == stored
    for c in clients:
        c.disconnect(namespace=NAMESPACE)


def test_failing_pass_ends_the_run_naming_the_pass_and_keeps_snapshots(client, sock):
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestRebuild", "ExplorerTestFail"])
    subscribe(sock, run_id)
    events = collect_until(sock, terminal)
    failed = [e for e in events if e["type"] == "pass_failed"]
    assert failed[0]["data"]["name"] == "ExplorerTestFail"
    end = events[-1]
    assert end["type"] == "run_failed"
    assert end["data"]["pass"] == "ExplorerTestFail"
    assert "deliberate failure" in end["data"]["message"]
    run = client.get(f"/api/runs/{run_id}").get_json()["run"]
    assert run["status"] == "failed" and run["failed_pass"] == "ExplorerTestFail"
    kept = failed[0]["data"]["before"]
    snap = client.get(f"/api/snapshots/{kept}").get_json()["snapshot"]
    assert "nn.relu" in snap["text"]


def test_cancel_stops_the_run(client, sock, gate):
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestGate"] + ["ExplorerTestNoop"] * 5)
    subscribe(sock, run_id)
    collect_until(sock, lambda ev: any(e["type"] == "pass_started" for e in ev))
    ack = sock.emit("cancel_run", {"run_id": run_id}, namespace=NAMESPACE, callback=True)
    assert ack == {"ok": True}
    gate.set()
    events = collect_until(sock, terminal)
    assert events[-1]["type"] == "run_cancelled"
    names = [e["data"]["name"] for e in events if e["type"] == "pass_started"]
    assert "ExplorerTestNoop" not in names
    assert client.get(f"/api/runs/{run_id}").get_json()["run"]["status"] == "cancelled"


def test_concurrent_runs_in_two_sessions_never_mix(client, app):
    a, b = upload(client), upload(client, name="other.relay")
    ca = socketio_of(app).test_client(app, namespace=NAMESPACE)
    cb = socketio_of(app).test_client(app, namespace=NAMESPACE)
    passes = ["ExplorerTestSleep", "ExplorerTestRebuild"] * 4
    barrier = threading.Barrier(2)
    runs: dict[str, str] = {}

    def go(name: str, c: Any, session: dict[str, Any]) -> None:
        barrier.wait()
        runs[name] = start(c, session["id"], passes=passes)
        subscribe(c, runs[name])

    threads = [threading.Thread(target=go, args=("a", ca, a)),
               threading.Thread(target=go, args=("b", cb, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ea, eb = collect_until(ca, terminal), collect_until(cb, terminal)
    assert {e["run_id"] for e in ea} == {runs["a"]}
    assert {e["session_id"] for e in eb} == {b["id"]}
    assert [e["index"] for e in ea] == list(range(len(ea)))
    assert [e["index"] for e in eb] == list(range(len(eb)))
    ca.disconnect(namespace=NAMESPACE)
    cb.disconnect(namespace=NAMESPACE)


def test_bad_socket_payloads_are_acked_with_errors(client, sock):
    session = upload(client)
    cases = [
        ("start_run", {"session_id": "nope", "options": {}}, "not_found"),
        ("start_run", {"session_id": session["id"], "options": {"opt_level": 9}}, "bad_options"),
        ("start_run", {"session_id": session["id"], "options": {"passes": ["NoSuchPass"]}},
         "unknown_pass"),
        ("start_run", "not an object", "bad_payload"),
        ("subscribe", {"run_id": "nope", "since": 0}, "not_found"),
        ("subscribe", {"run_id": 3}, "bad_payload"),
        ("cancel_run", {"run_id": "nope"}, "not_found"),
    ]
    for event, payload, code in cases:
        ack = sock.emit(event, payload, namespace=NAMESPACE, callback=True)
        assert ack["error"]["code"] == code, (event, payload, ack)
    assert run_events(sock) == []
