"""Breakpoints: a run pauses in its worker before or after a named pass, or after a pass
that touches a chosen layer; it continues, steps one pass or stops, from the socket or
HTTP; every watcher (a second one, one that reconnects) sees the whole event stream once;
a paused run is not a stalled one."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from explorer_helpers import (
    GATE,
    PLUGIN,
    REACHED,
    collect_until,
    run_events,
    subscribe,
    terminal,
    upload,
)

from explorer import create_app, socketio_of
from explorer.protocol import NAMESPACE
from explorer.runs.breakpoints import PauseGate

PASSES = ["ExplorerTestNoop", "ExplorerTestRebuild", "ExplorerTestNoop", "ExplorerTestRebuild"]


def _app(data_dir: Path, **config: Any) -> Any:
    return create_app({"TESTING": True, "DATA_DIR": str(data_dir), "RUN_PLUGINS": [PLUGIN],
                       "RUN_CANCEL_GRACE": 0.3, "RUN_KILL_GRACE": 0.5, **config})


@pytest.fixture()
def app(data_dir: Path) -> Iterator[Any]:
    app = _app(data_dir)
    yield app
    app.extensions["explorer"].runs.shutdown()


def _watch(app: Any) -> Any:
    return socketio_of(app).test_client(app, namespace=NAMESPACE)


def _start(sock: Any, session_id: str, breakpoints: Any, passes: list[str] = PASSES) -> Any:
    return sock.emit("start_run", {"session_id": session_id, "breakpoints": breakpoints,
                                   "options": {"passes": passes}},
                     namespace=NAMESPACE, callback=True)


def _started(app: Any, breakpoints: Any, passes: list[str] = PASSES) -> tuple[Any, Any, str]:
    """A test client, a watcher subscribed to a new run of the test model, the run's id."""
    client, sock = app.test_client(), _watch(app)
    session = upload(client)
    run_id = _start(sock, session["id"], breakpoints, passes)["run_id"]
    subscribe(sock, run_id)
    return client, sock, run_id


def _paused(count: int = 1) -> Any:
    return lambda evs: sum(e["type"] == "run_paused" for e in evs) >= count or terminal(evs)


def _stored(client: Any, run_id: str) -> list[dict[str, Any]]:
    return client.get(f"/api/runs/{run_id}/events").get_json()["events"]


def _resume(client: Any, run_id: str, action: str) -> Any:
    return client.post(f"/api/runs/{run_id}/resume", json={"action": action})


def test_a_breakpoint_before_a_pass_pauses_there_and_continue_finishes(app):
    client, first, run_id = _started(app, [{"kind": "before", "target": "ExplorerTestRebuild"}])
    seen = collect_until(first, _paused())
    paused = seen[-1]
    assert paused["type"] == "run_paused", [e["type"] for e in seen]
    data = paused["data"]
    assert (data["when"], data["name"], data["pass_index"]) == ("before", "ExplorerTestRebuild", 2)
    assert data["breakpoint"] == {"kind": "before", "target": "ExplorerTestRebuild"}
    # Nothing of the paused pass has started (index 0 is the Sequential of the explicit
    # list); the module shown is the one after the no-op.
    assert [e["type"] for e in seen] == ["run_started", "pass_started", "pass_started",
                                         "pass_finished", "run_paused"]
    assert data["snapshot"] == seen[3]["data"]["after"]
    assert client.get(f"/api/snapshots/{data['snapshot']}?part=text").status_code == 200
    # A second watcher, and a reloading page (a new client subscribing from 0), see the pause.
    second = _watch(app)
    assert subscribe(second, run_id)["replayed"] == 5
    reloaded = _watch(app)
    subscribe(reloaded, run_id)
    assert run_events(reloaded)[-1]["type"] == "run_paused"
    reloaded.disconnect(namespace=NAMESPACE)
    assert client.get(f"/api/runs/{run_id}/breakpoints").get_json() == {
        "breakpoints": [{"kind": "before", "target": "ExplorerTestRebuild"}], "live": True}
    # Continue from another client's socket: the run goes on to the breakpoint's next hit.
    ack = second.emit("resume_run", {"run_id": run_id, "action": "continue"},
                      namespace=NAMESPACE, callback=True)
    assert ack == {"ok": True}
    seen += collect_until(first, _paused())
    assert seen[-1]["type"] == "run_paused"
    assert seen[-1]["data"]["pass_index"] == 4  # the second ExplorerTestRebuild
    # The page reconnects while paused: it asks for what it missed and resumes over HTTP.
    back = _watch(app)
    subscribe(back, run_id, since=len(seen) - 1)
    assert [e["type"] for e in run_events(back)] == ["run_paused"]
    assert _resume(client, run_id, "continue").get_json() == {"ok": True}
    assert collect_until(back, terminal)[-1]["type"] == "run_finished"
    seen += collect_until(first, terminal)
    final = _stored(client, run_id)
    assert [e["type"] for e in final].count("run_resumed") == 2
    assert seen == final
    assert run_events(second) == final


def test_two_watchers_and_a_reconnecting_one_get_the_whole_stream_once(app):
    """The acceptance: pause before a pass, watchers come and go, Continue finishes."""
    client, starter = app.test_client(), _watch(app)
    session = upload(client)
    run_id = _start(starter, session["id"], [{"kind": "before", "target": "ExplorerTestRebuild"}],
                    ["ExplorerTestNoop", "ExplorerTestRebuild", "ExplorerTestNoop"])["run_id"]
    a, b = _watch(app), _watch(app)
    subscribe(a, run_id)
    subscribe(b, run_id)
    got_a = collect_until(a, _paused())
    got_b = collect_until(b, _paused())
    # b "reloads": disconnects, reconnects, asks from what it had.
    b.disconnect(namespace=NAMESPACE)
    b = _watch(app)
    subscribe(b, run_id, since=len(got_b))
    ack = a.emit("resume_run", {"run_id": run_id, "action": "continue"}, namespace=NAMESPACE,
                 callback=True)
    assert ack == {"ok": True}
    got_a += collect_until(a, terminal)
    got_b += collect_until(b, terminal)
    stored = _stored(client, run_id)
    assert stored[-1]["type"] == "run_finished"
    assert got_a == stored
    assert got_b == stored
    types = [e["type"] for e in stored]
    assert types.index("run_resumed") == types.index("run_paused") + 1
    # Once over, nothing is paused and no breakpoints are live.
    assert client.get(f"/api/runs/{run_id}/breakpoints").get_json()["live"] is False
    assert _resume(client, run_id, "continue").get_json() == {"ok": False}


def test_step_pauses_after_the_next_leaf_pass_then_stop_cancels(app):
    client, sock, run_id = _started(app, [{"kind": "after", "target": "ExplorerTestNoop"}])
    events = collect_until(sock, _paused())
    first = events[-1]["data"]
    assert (first["when"], first["pass_index"]) == ("after", 1)
    assert first["snapshot"] == events[-2]["data"]["after"]
    assert _resume(client, run_id, "step").get_json() == {"ok": True}
    events += collect_until(sock, _paused(1))
    step = events[-1]
    assert step["type"] == "run_paused"
    assert (step["data"]["name"], step["data"]["when"]) == ("ExplorerTestRebuild", "after")
    assert step["data"]["breakpoint"] is None and "stepped" in step["data"]["reason"]
    assert _resume(client, run_id, "stop").get_json() == {"ok": True}
    events += collect_until(sock, terminal)
    assert events[-1]["type"] == "run_cancelled"
    assert events[-2]["type"] == "run_resumed" and events[-2]["data"] == {"action": "stop"}
    run = client.get(f"/api/runs/{run_id}").get_json()["run"]
    assert run["status"] == "cancelled"
    assert run["final_snapshot"] is not None


def test_a_resume_for_a_pause_that_has_ended_does_not_answer_the_next_one(app):
    """Two pages show the same pause; one steps, the run pauses again, then the other's
    Continue (sent with the first pause's `at`) arrives: the run stays paused."""
    client, sock, run_id = _started(app, [{"kind": "after", "target": "ExplorerTestNoop"}],
                                    ["ExplorerTestNoop", "ExplorerTestRebuild"])
    events = collect_until(sock, _paused())
    first = {k: events[-1]["data"][k] for k in ("pass_index", "when")}
    step = client.post(f"/api/runs/{run_id}/resume", json={"action": "step", "at": first})
    assert step.get_json() == {"ok": True}
    events += collect_until(sock, _paused(1))
    second = {k: events[-1]["data"][k] for k in ("pass_index", "when")}
    assert second != first
    stale = client.post(f"/api/runs/{run_id}/resume", json={"action": "continue", "at": first})
    assert stale.get_json() == {"ok": False}
    ack = sock.emit("resume_run", {"run_id": run_id, "action": "stop", "at": first},
                    namespace=NAMESPACE, callback=True)
    assert ack == {"ok": False}
    time.sleep(0.3)
    assert not [e for e in sock.get_received(NAMESPACE) if e["name"] == "run_event"
                and e["args"][0]["type"] == "run_resumed"]  # still paused
    bad = client.post(f"/api/runs/{run_id}/resume", json={"action": "continue",
                                                           "at": {"pass_index": "3"}})
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "bad_pause"
    ok = client.post(f"/api/runs/{run_id}/resume", json={"action": "continue", "at": second})
    assert ok.get_json() == {"ok": True}
    events += collect_until(sock, terminal)
    assert events[-1]["type"] == "run_finished"
    assert [e["data"]["action"] for e in events if e["type"] == "run_resumed"] == \
        ["step", "continue"]


def test_the_gate_answers_only_the_pause_it_is_in() -> None:
    """The worker's side checks `at` too: the server may not have seen the run resume when
    a second answer to the same pause arrives."""
    gate = PauseGate([{"kind": "before", "target": "B"}], threading.Event())
    published: list[tuple[str, Any]] = []
    gate.bind(lambda kind, data: published.append((kind, data)), None)  # type: ignore[arg-type]
    worker = threading.Thread(target=gate.before_pass, args=(4, "B", 7))
    worker.start()
    for _ in range(200):
        if published:
            break
        time.sleep(0.01)
    assert published[0][0] == "run_paused"
    assert not gate.command("continue", {"pass_index": 3, "when": "before"})
    assert not gate.command("continue", {"pass_index": 4, "when": "after"})
    assert worker.is_alive()
    assert gate.command("continue", {"pass_index": 4, "when": "before"})
    worker.join(5)
    assert not worker.is_alive()
    assert not gate.command("continue", {"pass_index": 4, "when": "before"})  # answered


def test_a_layer_breakpoint_pauses_after_the_pass_that_touches_it(app):
    client, sock, run_id = _started(app, [{"kind": "touches", "target": "relu1"},
                                          {"kind": "touches", "target": "no-such-layer"}])
    events = collect_until(sock, _paused())
    data = events[-1]["data"]
    # The no-op leaves relu1's expression alone; the rebuild gives it a new node id.
    assert (data["name"], data["pass_index"], data["when"]) == ("ExplorerTestRebuild", 2, "after")
    assert data["layers"] == ["relu1"]
    assert data["breakpoint"] == {"kind": "touches", "target": "relu1"}
    # Breakpoints change while paused: none left, the run finishes.
    ack = sock.emit("set_breakpoints", {"run_id": run_id, "breakpoints": []},
                    namespace=NAMESPACE, callback=True)
    assert ack == {"breakpoints": [], "live": True}
    assert _resume(client, run_id, "continue").get_json() == {"ok": True}
    events += collect_until(sock, terminal)
    assert events[-1]["type"] == "run_finished"
    assert [e["type"] for e in events].count("run_paused") == 1


def test_breakpoints_set_while_running_reach_the_worker(app, data_dir):
    GATE.clear()
    REACHED.clear()
    try:
        client, sock, run_id = _started(
            app, [], ["ExplorerTestGate", "ExplorerTestNoop", "ExplorerTestRebuild"])
        assert REACHED.wait(timeout=20)
        resp = client.put(f"/api/runs/{run_id}/breakpoints",
                          json={"breakpoints": [{"kind": "before", "target": "ExplorerTestRebuild"}]})
        assert resp.get_json()["live"] is True
    finally:
        GATE.set()
    events = collect_until(sock, _paused())
    assert events[-1]["data"]["name"] == "ExplorerTestRebuild"
    assert _resume(client, run_id, "continue").get_json() == {"ok": True}
    assert collect_until(sock, terminal)[-1]["type"] == "run_finished"


def test_a_paused_run_is_not_stopped_as_stalled(data_dir):
    app = _app(data_dir, RUN_STALL_TIMEOUT=1.5)  # (the worker's start must stay under it)
    try:
        client, sock, run_id = _started(app, [{"kind": "before", "target": "ExplorerTestNoop"}])
        collect_until(sock, _paused())
        time.sleep(4.0)  # over two stall limits: a stall would have been cancelled by now
        assert client.get(f"/api/runs/{run_id}").get_json()["run"]["status"] == "running"
        assert _stored(client, run_id)[-1]["type"] == "run_paused"
        client.put(f"/api/runs/{run_id}/breakpoints", json={"breakpoints": []})
        assert _resume(client, run_id, "continue").get_json() == {"ok": True}
        assert collect_until(sock, terminal)[-1]["type"] == "run_finished"
    finally:
        app.extensions["explorer"].runs.shutdown()


@pytest.mark.parametrize(("breakpoints", "needle"), [
    ("before", "must be a list"),
    ([{"kind": "during", "target": "FuseOps"}], "kind must be one of"),
    ([{"kind": "before", "target": ""}], "target must be"),
    ([{"kind": "before"}], "breakpoint 0"),
])
def test_bad_breakpoints_are_refused_by_name(app, breakpoints, needle):
    client, sock = app.test_client(), _watch(app)
    session = upload(client)
    ack = _start(sock, session["id"], breakpoints)
    assert ack["error"]["code"] == "bad_breakpoints" and needle in ack["error"]["message"]
    resp = client.put("/api/runs/nope/breakpoints", json={"breakpoints": breakpoints})
    assert resp.status_code == 400 and needle in resp.get_json()["error"]["message"]


def test_resume_answers_for_runs_that_are_not_paused(app):
    client, sock = app.test_client(), _watch(app)
    assert client.post("/api/runs/nope/resume", json={"action": "continue"}).status_code == 404
    session = upload(client)
    run_id = _start(sock, session["id"], [])["run_id"]
    subscribe(sock, run_id)
    collect_until(sock, terminal)
    assert _resume(client, run_id, "continue").get_json() == {"ok": False}
    bad = _resume(client, run_id, "jump")
    assert bad.status_code == 400 and "action must be one of" in bad.get_json()["error"]["message"]
    ack = sock.emit("resume_run", {"run_id": run_id, "action": "continue"}, namespace=NAMESPACE,
                    callback=True)
    assert ack == {"ok": False}


def test_before_fuse_ops_in_relay_build_two_watchers_and_a_reconnecting_one(app):
    """The acceptance on the real pipeline: relay.build pauses before FuseOps; a watcher
    reconnects while paused; Continue builds; every watcher has the whole stream once."""
    client, a, b = app.test_client(), _watch(app), _watch(app)
    session = upload(client)
    ack = a.emit("start_run", {"session_id": session["id"], "options": {"opt_level": 3},
                               "breakpoints": [{"kind": "before", "target": "FuseOps"}]},
                 namespace=NAMESPACE, callback=True)
    run_id = ack["run_id"]
    subscribe(a, run_id)
    subscribe(b, run_id)
    got_a = collect_until(a, _paused())
    got_b = collect_until(b, _paused())
    pause = got_a[-1]["data"]
    assert (pause["name"], pause["when"]) == ("FuseOps", "before")
    assert "FuseOps" not in {e["data"].get("name") for e in got_a if e["type"] == "pass_started"}
    text = client.get(f"/api/snapshots/{pause['snapshot']}?part=text").get_json()
    assert "Primitive" not in text["snapshot"]["text"]  # nothing is fused yet
    b.disconnect(namespace=NAMESPACE)
    b = _watch(app)
    subscribe(b, run_id, since=len(got_b))
    assert _resume(client, run_id, "continue").get_json() == {"ok": True}
    got_a += collect_until(a, terminal, timeout=60)
    got_b += collect_until(b, terminal, timeout=60)
    stored = _stored(client, run_id)
    assert stored[-1]["type"] == "run_finished"
    assert "build_finished" in [e["type"] for e in stored]
    assert got_a == stored and got_b == stored
    fuse = next(e["data"] for e in stored if e["type"] == "pass_finished"
                and e["data"]["name"] == "FuseOps")
    assert fuse["before"] == pause["snapshot"] and fuse["changed"] is True
    fused = client.get(f"/api/snapshots/{fuse['after']}?part=text").get_json()
    assert "Primitive" in fused["snapshot"]["text"]


def test_a_paused_runs_export_imports_with_its_pause_renumbered(app):
    client, sock = app.test_client(), _watch(app)
    session = upload(client)
    run_id = _start(sock, session["id"], [{"kind": "after", "target": "ExplorerTestRebuild"}]
                    )["run_id"]
    subscribe(sock, run_id)
    collect_until(sock, _paused())
    _resume(client, run_id, "continue")
    collect_until(sock, _paused())  # (the events after the first pause)
    _resume(client, run_id, "continue")
    collect_until(sock, terminal)
    exported = client.get(f"/api/runs/{run_id}/export").data
    resp = client.post("/api/runs/import", data={"file": (io.BytesIO(exported), "run.json")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    new_run = resp.get_json()["run"]["id"]
    events = _stored(client, new_run)
    pauses = [e["data"] for e in events if e["type"] == "run_paused"]
    finished = {e["data"]["pass_index"]: e["data"] for e in events
                if e["type"] == "pass_finished"}
    assert len(pauses) == 2
    for pause in pauses:  # the imported pause names the imported snapshot, not the old id
        assert pause["snapshot"] == finished[pause["pass_index"]]["after"]


@pytest.mark.parametrize("where", ["before", "after"])
def test_stop_at_a_pause_cancels_the_run_keeping_its_snapshots(app, where):
    client, sock = app.test_client(), _watch(app)
    session = upload(client)
    run_id = _start(sock, session["id"], [{"kind": where, "target": "ExplorerTestRebuild"}]
                    )["run_id"]
    subscribe(sock, run_id)
    events = collect_until(sock, _paused())
    assert _resume(client, run_id, "stop").get_json() == {"ok": True}
    events += collect_until(sock, terminal)
    types = [e["type"] for e in events]
    assert types[-2:] == ["run_resumed", "run_cancelled"], types
    assert "pass_failed" not in types  # a stop is no failure
    run = client.get(f"/api/runs/{run_id}").get_json()["run"]
    assert run["status"] == "cancelled" and run["final_snapshot"] is not None
    finished = [e["data"]["name"] for e in events if e["type"] == "pass_finished"]
    assert ("ExplorerTestRebuild" in finished) == (where == "after")
