"""Faults: a socket dropped mid-run, the server killed mid-run, a pass that raises, a pass
that hangs and is cancelled from the socket."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hardening_helpers import (
    GATE,
    HANG,
    HANG_PID,
    HANG_REACHED,
    MODEL_TEXT,
    Watcher,
    close_all,
    free_port,
    http_json,
    process_gone,
    real_server,
    serve_process,
    stored_events,
    upload_http,
    wait_http,
    wait_terminal,
)


@pytest.fixture()
def server(data_dir: Path) -> Iterator[str]:
    GATE.clear()
    HANG.clear()
    HANG_REACHED.clear()
    with real_server(data_dir) as base:
        yield base
    GATE.set()
    HANG.set()


def _session(base: str, name: str = "m.relay") -> str:
    status, body = upload_http(base, name, MODEL_TEXT.encode())
    assert status == 201, body
    return str(body["session"]["id"])


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


@pytest.mark.timeout(90)
def test_a_socket_dropped_mid_run_recovers_everything_with_since(server: str) -> None:
    sid = _session(server)
    first = Watcher(server)
    second = None
    try:
        rid = first.start(sid, passes=["InferType", "HardeningRebuild", "HardeningGate",
                                       "HardeningRebuild", "InferType"])
        first.subscribe(rid)
        first.wait(lambda evs: sum(e["type"] == "pass_finished" for e in evs) >= 2)
        first.client.disconnect()  # the page's connection drops while the run goes on
        # (messages received before the drop may still be on their way to the list)
        first.wait(lambda evs: [e["index"] for e in evs] == list(range(len(evs))))
        seen = first.of(rid)
        GATE.set()
        final = wait_terminal(server, rid)
        assert len(seen) < len(final)
        second = Watcher(server)
        ack = second.subscribe(rid, since=len(seen))
        assert ack == {"ok": True, "replayed": len(final) - len(seen)}
        assert seen + second.wait_complete(rid) == final
        assert _types(final)[-1] == "run_finished"
    finally:
        close_all([w for w in (first, second) if w is not None])


@pytest.mark.timeout(60)
def test_a_pass_that_raises_ends_the_run_cleanly_naming_it(server: str) -> None:
    sid = _session(server)
    watcher = Watcher(server)
    try:
        rid = watcher.start(sid, passes=["InferType", "HardeningRaise", "HardeningRebuild"])
        events = wait_terminal(server, rid)
    finally:
        close_all([watcher])
    failed = [e["data"] for e in events if e["type"] == "pass_failed"]
    assert [f["name"] for f in failed] == ["HardeningRaise", "explicit"]  # + its Sequential
    end = events[-1]
    assert end["type"] == "run_failed" and end["data"]["code"] == "pass_failed"
    assert end["data"]["pass"] == "HardeningRaise"
    assert "deliberate failure" in end["data"]["message"]
    assert "HardeningRebuild" not in {e["data"].get("name") for e in events}
    status, run = http_json(server, f"/api/runs/{rid}")
    assert status == 200 and run["run"]["status"] == "failed"
    assert run["run"]["failed_pass"] == "HardeningRaise"
    assert http_json(server, f"/api/snapshots/{run['run']['final_snapshot']}")[0] == 200
    assert http_json(server, "/api/sessions")[0] == 200  # the server goes on


@pytest.mark.timeout(60)
def test_a_hanging_pass_is_cancelled_from_the_socket(server: str) -> None:
    sid = _session(server)
    watcher = Watcher(server)
    try:
        rid = watcher.start(sid, passes=["InferType", "HardeningHang", "HardeningRebuild",
                                         "InferType"])
        watcher.subscribe(rid)
        assert HANG_REACHED.wait(timeout=30)
        assert watcher.call("cancel_run", {"run_id": rid}) == {"ok": True}
        HANG.set()  # the pass returns; the run must stop before the next one
        events = watcher.wait_complete(rid)
    finally:
        close_all([watcher])
    assert events[-1]["type"] == "run_cancelled"
    assert "HardeningRebuild" not in {e["data"].get("name") for e in events}
    assert http_json(server, f"/api/runs/{rid}")[1]["run"]["status"] == "cancelled"


@pytest.mark.timeout(60)
def test_a_cancel_during_the_last_pass_still_ends_cancelled(server: str) -> None:
    sid = _session(server)
    watcher = Watcher(server)
    try:
        rid = watcher.start(sid, passes=["InferType", "HardeningHang"])
        assert HANG_REACHED.wait(timeout=30)
        assert watcher.call("cancel_run", {"run_id": rid}) == {"ok": True}
        HANG.set()
        events = wait_terminal(server, rid)
    finally:
        close_all([watcher])
    assert events[-1]["type"] == "run_cancelled"


def _hang_run(base: str) -> str:
    """A run on a fresh session, held in HardeningHang (its worker's pid in HANG_PID)."""
    HANG.clear()
    HANG_REACHED.clear()
    HANG_PID.clear()
    sid = _session(base)
    watcher = Watcher(base)
    try:
        rid = watcher.start(sid, passes=["InferType", "HardeningRebuild", "HardeningHang",
                                         "InferType"])
        assert HANG_REACHED.wait(timeout=30), "the run never reached HardeningHang"
    finally:
        close_all([watcher])
    return rid


def _check_interrupted(base: str, rid: str, before: list[dict[str, Any]]) -> None:
    status, run = http_json(base, f"/api/runs/{rid}")
    assert status == 200 and run["run"]["status"] == "interrupted"
    events = stored_events(base, rid)
    assert events[:len(before)] == before
    assert len(events) == len(before) + 1  # the worker wrote nothing after its server died
    assert events[-1]["type"] == "run_failed"
    assert events[-1]["data"]["code"] == "interrupted"
    kept = [e["data"]["after"] for e in events if e["type"] == "pass_finished"]
    assert len(kept) >= 2
    for snap in kept + [run["run"]["final_snapshot"]]:
        assert http_json(base, f"/api/snapshots/{snap}")[0] == 200
    assert _session(base, "after-restart.relay")  # and it works normally again


@pytest.mark.timeout(120)
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "ctrl-c"])
def test_a_server_stopped_mid_run_takes_its_workers_and_shows_the_run_interrupted(
        tmp_path: Path, stop: signal.Signals) -> None:
    data = tmp_path / "served"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = serve_process(port, data)
    try:
        wait_http(base)
        rid = _hang_run(base)
        worker = int(HANG_PID.path.read_text())
        before_stop = stored_events(base, rid)
        proc.send_signal(stop)
        proc.wait(timeout=20)
        assert process_gone(worker), "the run's worker outlived its server"
        HANG.set()  # a surviving worker would go on and write events
    finally:
        if proc.poll() is None:
            proc.kill()
    proc = serve_process(port, data)
    try:
        wait_http(base)
        time.sleep(0.5)
        _check_interrupted(base, rid, before_stop)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
