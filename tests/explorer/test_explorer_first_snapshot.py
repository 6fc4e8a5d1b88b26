"""The run's first event carries the imported module: the server announces run_started
with the upload's snapshot (imported in the probe child) before the worker imports the
model again; the engine numbers an import's nodes deterministically, so the worker's
module prints to that very snapshot, node ids included (it checks), and
num_passes_planned is exact."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from explorer_helpers import MODEL_TEXT, collect_until, start, terminal, upload

from engine.relay.parser import parse
from explorer import services
from explorer.compiler import print_snapshot
from explorer.protocol import NAMESPACE
from explorer.runs.recording import ImportMismatchError, SnapshotRecorder
from explorer.store import Store


def _subscribe(sock: Any, run_id: str) -> None:
    sock.emit("subscribe", {"run_id": run_id, "since": 0}, namespace=NAMESPACE, callback=True)


def _run(client: Any, sock: Any, **options: Any) -> tuple[str, list[dict[str, Any]]]:
    session = upload(client)
    run_id = start(sock, session["id"], **options)
    _subscribe(sock, run_id)
    return run_id, collect_until(sock, terminal, timeout=60)


def test_upload_stores_the_initial_snapshot(app, client):
    session = upload(client)
    with app.app_context():
        store = services().store
        snap = store.session_snapshot(session["id"])
        assert snap is not None
        text = store.snapshot(snap)["text"]
    stored = hashlib.sha256(MODEL_TEXT.encode()).hexdigest() + ".relay"  # the upload's file
    assert text == print_snapshot(parse(MODEL_TEXT, source_name=stored))[0]


def test_run_started_is_stored_when_the_start_is_acknowledged(client, sock, gate):
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestGate"], build=False)
    events = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    assert events[0]["type"] == "run_started" and events[0]["index"] == 0
    assert events[0]["data"]["num_passes_planned"] == 1
    assert [p["name"] for p in events[0]["data"]["plan"]] == ["ExplorerTestGate"]
    initial = events[0]["data"]["initial_snapshot"]
    snap = client.get(f"/api/snapshots/{initial}").get_json()["snapshot"]
    assert "nn.relu" in snap["text"]
    gate.set()
    _subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=60)
    assert [e["index"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("run_started") == 1


def test_the_workers_import_has_the_uploads_node_ids(client, sock):
    run_id, events = _run(client, sock, passes=["ExplorerTestNoop", "ExplorerTestRebuild"],
                          build=False)
    assert events[-1]["type"] == "run_finished", events[-1]
    initial = events[0]["data"]["initial_snapshot"]
    finished = {e["data"]["name"]: e["data"] for e in events if e["type"] == "pass_finished"}
    noop = finished["ExplorerTestNoop"]
    assert (noop["before"], noop["after"], noop["changed"]) == (initial, initial, False)
    rebuild = finished["ExplorerTestRebuild"]
    nodes = client.get(f"/api/diff?a={initial}&b={rebuild['after']}").get_json()["nodes"]
    # Only calls are rebuilt: the parameter and constants keep the upload's node ids.
    assert nodes["kept"] and nodes["added"] and nodes["removed"]
    smap = client.get(f"/api/snapshots/{initial}").get_json()["snapshot"]["source_map"]
    add = next(e for e in smap if e["op"] == "add" and not e.get("ref"))
    trace = client.get(f"/api/runs/{run_id}/backtrace/{add['node_id']}").get_json()
    assert trace["steps"][0]["pass_name"] == "import"


def test_two_runs_get_their_own_initial_snapshots_of_one_text(app, client, sock):
    session = upload(client)
    ids = []
    for _ in range(2):
        run_id = start(sock, session["id"], passes=["ExplorerTestNoop"], build=False)
        _subscribe(sock, run_id)
        events = collect_until(sock, terminal, timeout=60)
        assert events[-1]["type"] == "run_finished", events[-1]
        ids.append(next(e["data"]["initial_snapshot"] for e in events
                        if e["type"] == "run_started" and e["run_id"] == run_id))
    assert ids[0] != ids[1]
    with app.app_context():
        store = services().store
        assert store.snapshot_text_hash(ids[0]) == store.snapshot_text_hash(ids[1])
        assert store.snapshot(ids[1])["run_id"] == run_id


def test_numerics_runs_are_announced_before_the_check_is_set_up(client, sock, gate):
    """With the numerics check, run_started still comes when the start is acknowledged:
    the worker evaluates the imported module for the check's reference after it."""
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestGate"], build=False,
                   check_numerics=True)
    events = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    assert events[0]["type"] == "run_started" and events[0]["index"] == 0
    assert events[0]["data"]["num_passes_planned"] == 1
    gate.set()
    _subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=60)
    assert [e["type"] for e in events].count("run_started") == 1
    assert "numerics_unavailable" not in [e["type"] for e in events]
    finished = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["leaf"]]
    assert finished and all(f["numerics"]["ok"] for f in finished)


@pytest.mark.parametrize("options", [
    {"opt_level": 3},
    {"opt_level": 0},
    {"opt_level": 2, "disabled_pass": ["FoldConstant"], "required_pass": ["FuseOps"]},
    {"opt_level": 3, "build": False},
    {"passes": ["ExplorerTestNoop", "FoldScaleAxis", "ExplorerTestRebuild"]},
])
def test_the_plan_is_the_leaf_passes_that_run(client, sock, options):
    _, events = _run(client, sock, **options)
    assert events[-1]["type"] == "run_finished", events[-1]
    leaves = [(e["data"]["name"], e["data"]["depth"]) for e in events
              if e["type"] == "pass_finished" and e["data"]["leaf"]]
    started = [(e["data"]["name"], e["data"]["depth"]) for e in events
               if e["type"] == "pass_started"]
    plan = [(p["name"], p["depth"]) for p in events[0]["data"]["plan"]]
    assert plan == [step for step in started if step in set(leaves)]
    assert events[0]["data"]["num_passes_planned"] == len(leaves)


def test_a_module_that_is_not_the_announced_snapshot_is_refused(tmp_path):
    store = Store(tmp_path / "db.sqlite3")
    text, table = print_snapshot(parse(MODEL_TEXT))
    announced = store.add_snapshot("run", text, table)
    same_text = parse(MODEL_TEXT)  # same text, other node ids (this process numbered on)
    with pytest.raises(ImportMismatchError, match=f"snapshot {announced}"):
        SnapshotRecorder(store, "run").record_as(same_text, announced)
    other = parse(MODEL_TEXT.replace("nn.relu(%2)", "%2"))
    with pytest.raises(ImportMismatchError):
        SnapshotRecorder(store, "run").record_as(other, announced)
