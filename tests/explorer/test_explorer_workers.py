"""Runs in worker processes: crashes end the run (not the server), hanging passes are
cancelled by signal, stalled runs are stopped, runs beyond the limit wait in a queue."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from explorer_helpers import (
    PLUGIN,
    REACHED,
    collect_until,
    start,
    subscribe,
    terminal,
    upload,
)

from explorer import create_app, socketio_of
from explorer.protocol import NAMESPACE


def _app(data_dir: Path, **config: Any) -> Any:
    return create_app({"TESTING": True, "DATA_DIR": str(data_dir), "RUN_PLUGINS": [PLUGIN],
                       "RUN_CANCEL_GRACE": 0.3, "RUN_KILL_GRACE": 0.5, **config})


@pytest.fixture()
def fast_app(data_dir: Path) -> Iterator[Any]:
    app = _app(data_dir)
    yield app
    app.extensions["explorer"].runs.shutdown()


def _watch(app: Any) -> Any:
    return socketio_of(app).test_client(app, namespace=NAMESPACE)


def _run(app: Any, sock: Any, session_id: str, passes: list[str]) -> tuple[str, list[Any]]:
    run_id = start(sock, session_id, passes=passes)
    subscribe(sock, run_id)
    return run_id, collect_until(sock, terminal, timeout=30)


@pytest.mark.parametrize(("crash", "how"), [("ExplorerTestExit", "exit code 3"),
                                            ("ExplorerTestSigkill", "SIGKILL")])
def test_a_worker_that_dies_fails_its_run_naming_the_pass(fast_app, crash, how):
    client, sock = fast_app.test_client(), _watch(fast_app)
    session = upload(client)
    run_id, events = _run(fast_app, sock, session["id"], ["ExplorerTestRebuild", crash])
    end = events[-1]
    assert end["type"] == "run_failed"
    assert end["data"]["code"] == "worker_crashed"
    assert end["data"]["pass"] == crash
    assert how in end["data"]["message"] and crash in end["data"]["message"]
    assert [e["index"] for e in events] == list(range(len(events)))
    run = client.get(f"/api/runs/{run_id}").get_json()["run"]
    assert run["status"] == "failed" and run["failed_pass"] == crash
    assert run["num_passes"] == 1  # ExplorerTestRebuild finished before the crash
    kept = [e["data"]["after"] for e in events if e["type"] == "pass_finished"]
    assert run["final_snapshot"] == kept[-1]
    assert client.get(f"/api/snapshots/{kept[-1]}").status_code == 200
    # The server and the other sessions go on.
    other = upload(client, name="other.relay")
    _, again = _run(fast_app, sock, other["id"], ["ExplorerTestRebuild"])
    assert again[-1]["type"] == "run_finished"


@pytest.mark.parametrize("hang", ["ExplorerTestHang", "ExplorerTestStubborn"])
def test_a_pass_that_never_returns_is_killed_on_cancel(fast_app, hang):
    client, sock = fast_app.test_client(), _watch(fast_app)
    REACHED.clear()
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestRebuild", hang,
                                                "ExplorerTestNoop"])
    subscribe(sock, run_id)
    assert REACHED.wait(timeout=20)
    pid = fast_app.extensions["explorer"].runs.worker_pid(run_id)
    assert pid is not None and pid != os.getpid()
    asked = time.monotonic()
    ack = sock.emit("cancel_run", {"run_id": run_id}, namespace=NAMESPACE, callback=True)
    assert ack == {"ok": True}
    events = collect_until(sock, terminal, timeout=20)
    assert time.monotonic() - asked < 10
    assert events[-1]["type"] == "run_cancelled"
    assert "ExplorerTestNoop" not in {e["data"].get("name") for e in events}
    run = client.get(f"/api/runs/{run_id}").get_json()["run"]
    assert run["status"] == "cancelled" and run["num_passes"] == 1
    assert run["final_snapshot"] is not None
    assert not _alive(pid)
    cancel_again = sock.emit("cancel_run", {"run_id": run_id}, namespace=NAMESPACE,
                             callback=True)
    assert cancel_again == {"ok": False}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_a_run_without_progress_is_stopped_with_a_message(data_dir):
    app = _app(data_dir, RUN_STALL_TIMEOUT=1.0)
    try:
        client, sock = app.test_client(), _watch(app)
        session = upload(client)
        run_id, events = _run(app, sock, session["id"], ["ExplorerTestNoop", "ExplorerTestHang"])
    finally:
        app.extensions["explorer"].runs.shutdown()
    end = events[-1]
    assert end["type"] == "run_cancelled"
    assert "no progress for 1 s" in end["data"]["message"]
    assert "ExplorerTestHang" in end["data"]["message"]
    run = client.get(f"/api/runs/{run_id}").get_json()["run"]
    assert run["status"] == "cancelled" and run["error"] == end["data"]["message"]


def test_runs_beyond_the_limit_wait_in_a_queue(data_dir, gate):
    app = _app(data_dir, MAX_CONCURRENT_RUNS=1)
    try:
        client = app.test_client()
        socks = [_watch(app) for _ in range(3)]
        sessions = [upload(client, name=f"m{k}.relay") for k in range(3)]
        runs = [start(s, sess["id"], passes=["ExplorerTestGate", "ExplorerTestRebuild"])
                for s, sess in zip(socks, sessions)]
        for s, rid in zip(socks, runs):
            subscribe(s, rid)
        assert REACHED.wait(timeout=20)
        manager = app.extensions["explorer"].runs
        assert manager.active_runs() == [runs[0]] and manager.queued_runs() == runs[1:]
        early = [collect_until(s, lambda ev: len(ev) >= 1) for s in socks]
        firsts = [events[0] for events in early]
        assert firsts[0]["type"] == "run_started"
        assert [(f["type"], f["data"]["position"]) for f in firsts[1:]] == [
            ("run_queued", 1), ("run_queued", 2)]
        assert all(f["data"]["max_concurrent"] == 1 for f in firsts[1:])
        gate.set()
        ends = {rid: collect_until(s, terminal, timeout=30) for s, rid in zip(socks, runs)}
    finally:
        app.extensions["explorer"].runs.shutdown()
    for rid, seen in zip(runs, early):
        events = [*seen, *ends[rid]]
        assert [e["index"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] == "run_finished"
    stored = {rid: client.get(f"/api/runs/{rid}/events").get_json()["events"] for rid in runs}
    assert [e["type"] for e in stored[runs[1]]][:2] == ["run_queued", "run_started"]


def test_a_queued_run_is_cancelled_before_it_starts(data_dir, gate):
    app = _app(data_dir, MAX_CONCURRENT_RUNS=1)
    try:
        client, sock = app.test_client(), _watch(app)
        session = upload(client)
        first = start(sock, session["id"], passes=["ExplorerTestGate"])
        queued = start(sock, session["id"], passes=["ExplorerTestRebuild"])
        subscribe(sock, queued)
        ack = sock.emit("cancel_run", {"run_id": queued}, namespace=NAMESPACE, callback=True)
        assert ack == {"ok": True}
        events = collect_until(sock, terminal)
        assert [e["type"] for e in events] == ["run_queued", "run_cancelled"]
        assert client.get(f"/api/runs/{queued}").get_json()["run"]["status"] == "cancelled"
        gate.set()
        subscribe(sock, first)
        assert collect_until(sock, terminal)[-1]["type"] == "run_finished"
    finally:
        app.extensions["explorer"].runs.shutdown()


def test_a_plugin_pipeline_hook_changes_every_run(data_dir, tmp_path, monkeypatch):
    plugin = tmp_path / "explorer_test_hook_plugin.py"
    plugin.write_text(
        "import explorer_helpers  # registers the test passes\n"
        "from engine.transform import get_pass\n"
        "def wrap_passes(passes, options):\n"
        "    return [*passes, get_pass('ExplorerTestRebuild')]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    app = create_app({"TESTING": True, "DATA_DIR": str(data_dir),
                      "RUN_PLUGINS": "explorer_test_hook_plugin"})
    try:
        client, sock = app.test_client(), _watch(app)
        session = upload(client)
        _, events = _run(app, sock, session["id"], ["ExplorerTestNoop"])
    finally:
        app.extensions["explorer"].runs.shutdown()
    names = [e["data"]["name"] for e in events if e["type"] == "pass_finished"]
    assert names == ["ExplorerTestNoop", "explicit", "ExplorerTestRebuild"]
    assert events[-1]["type"] == "run_finished"
