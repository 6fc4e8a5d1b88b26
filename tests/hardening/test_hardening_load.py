"""Load: 8 sessions uploading and running pipelines at once, 20 Socket.IO clients watching,
against a real server on 127.0.0.1. Every watcher gets every event of its own run, once,
and none of another run's (the order on one socket is checked with the synchronous test
client; see Watcher)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hardening_helpers import (
    GATE,
    MODEL_TEXT,
    Watcher,
    close_all,
    real_server,
    stored_events,
    upload_http,
    wait_terminal,
)

SESSIONS = 8
WATCHERS = 20
PASSES = ["InferType", "HardeningSleep", "HardeningGate", "SimplifyExpr", "HardeningSleep",
          "FoldConstant", "HardeningRebuild", "InferType"]


@pytest.fixture()
def server(data_dir: Path) -> Iterator[str]:
    GATE.clear()
    with real_server(data_dir) as base:
        yield base
    GATE.set()


def _model(k: int) -> bytes:
    """Session k's model: the same graph with its own layer names."""
    return MODEL_TEXT.replace("/* fc1 */", f"/* fc1_s{k} */").encode()


@pytest.mark.timeout(180)
def test_eight_runs_twenty_watchers_each_get_exactly_their_run(server: str) -> None:
    sessions: list[str] = [""] * SESSIONS

    def do_upload(k: int) -> None:
        status, body = upload_http(server, f"model{k}.relay", _model(k))
        assert status == 201, body
        sessions[k] = body["session"]["id"]

    uploaders = [threading.Thread(target=do_upload, args=(k,)) for k in range(SESSIONS)]
    for t in uploaders:
        t.start()
    for t in uploaders:
        t.join(timeout=60)
    assert all(sessions), sessions

    watchers = [Watcher(server) for _ in range(WATCHERS)]
    try:
        starters = watchers[:SESSIONS]
        runs = [w.start(sid, passes=PASSES, opt_level=3) for w, sid in zip(starters, sessions)]
        assert len(set(runs)) == SESSIONS
        assignment = {i: runs[i % SESSIONS] for i in range(WATCHERS)}
        # Half subscribe while the runs are held at the gate, half after they finish.
        early = [i for i in range(WATCHERS) if i % 2 == 0]
        late = [i for i in range(WATCHERS) if i % 2 == 1]
        for i in early:
            assert watchers[i].subscribe(assignment[i])["ok"]
        GATE.set()
        for i in late:
            assert watchers[i].subscribe(assignment[i])["ok"]
        finals = {rid: wait_terminal(server, rid, timeout=120) for rid in runs}
        for i, watcher in enumerate(watchers):
            rid = assignment[i]
            expected = finals[rid]
            watcher.wait_complete(rid, timeout=60)
            got = watcher.events
            assert {e["run_id"] for e in got} == {rid}, f"watcher {i} saw another run"
            assert [e["index"] for e in got] == list(range(len(expected))), f"watcher {i}"
            assert got == expected, f"watcher {i}: events differ from the stored run"
        for rid in runs:
            assert finals[rid][-1]["type"] == "run_finished", finals[rid][-1]
            assert stored_events(server, rid) == finals[rid]
    finally:
        close_all(watchers)
