"""The run's initial snapshot comes from the upload (run_started is published by the
server before the worker imports the model again), the worker adopts its node ids,
and num_passes_planned is exact."""

from __future__ import annotations

from typing import Any

import pytest
from explorer_helpers import MODEL_TEXT, collect_until, start, terminal, upload

from engine.relay.parser import parse
from engine.relay.printer.table import NODE
from engine.relay.transform import InferType
from engine.transform import PassContext, Sequential, get_pass
from explorer import services
from explorer.node_ids import adopt_node_ids, id_pairs
from explorer.planning import count_planned
from explorer.protocol import NAMESPACE
from explorer.recording import print_snapshot


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
    assert text == print_snapshot(parse(MODEL_TEXT))[0]


def test_run_started_is_stored_when_the_start_is_acknowledged(client, sock, gate):
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestGate"])
    events = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    assert events[0]["type"] == "run_started" and events[0]["index"] == 0
    assert events[0]["data"]["num_passes_planned"] == 1
    initial = events[0]["data"]["initial_snapshot"]
    snap = client.get(f"/api/snapshots/{initial}").get_json()["snapshot"]
    assert "nn.relu" in snap["text"]
    gate.set()
    _subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=60)
    assert [e["index"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("run_started") == 1


def test_first_pass_before_is_the_initial_snapshot_with_its_node_ids(client, sock):
    run_id, events = _run(client, sock, passes=["ExplorerTestNoop", "ExplorerTestRebuild"])
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
        run_id = start(sock, session["id"], passes=["ExplorerTestNoop"])
        _subscribe(sock, run_id)
        events = collect_until(sock, terminal, timeout=60)
        ids.append(next(e["data"]["initial_snapshot"] for e in events
                        if e["type"] == "run_started" and e["run_id"] == run_id))
    assert ids[0] != ids[1]
    with app.app_context():
        store = services().store
        assert store.snapshot_text_hash(ids[0]) == store.snapshot_text_hash(ids[1])
        assert store.snapshot(ids[1])["run_id"] == run_id


def test_numerics_runs_are_announced_by_the_worker(client, sock):
    _, events = _run(client, sock, passes=["ExplorerTestNoop"], check_numerics=True)
    started = [e for e in events if e["type"] == "run_started"]
    assert len(started) == 1 and started[0]["index"] == 0
    assert started[0]["data"]["num_passes_planned"] == 1


@pytest.mark.parametrize("options", [
    {"opt_level": 3},
    {"opt_level": 0},
    {"opt_level": 2, "disabled_pass": ["FoldConstant"], "required_pass": ["FuseOps"]},
    {"passes": ["ExplorerTestNoop", "FoldScaleAxis", "ExplorerTestRebuild"]},
])
def test_planned_equals_the_leaf_passes_that_run(client, sock, options):
    _, events = _run(client, sock, **options)
    assert events[-1]["type"] == "run_finished", events[-1]
    finished = [e["data"] for e in events if e["type"] == "pass_finished"]
    parents = {p["parent_index"] for p in finished}
    leaves = [p for p in finished if p["pass_index"] not in parents]
    assert events[0]["data"]["num_passes_planned"] == len(leaves)


def _noop(name: str, opt_level: int = 0, required: tuple[str, ...] = ()) -> Any:
    from engine.transform import module_pass

    return module_pass(lambda mod, ctx: mod, opt_level=opt_level, name=name,
                       required=list(required))


def test_count_planned_follows_required_disabled_and_nesting():
    inner = Sequential([_noop("A"), _noop("B", opt_level=3)], name="inner")
    empty = Sequential([_noop("C", opt_level=3)], name="empty")
    pipeline = Sequential([_noop("D", required=("InferType",)), inner, empty, _noop("E")])
    assert count_planned(pipeline, PassContext(opt_level=3)) == 6  # InferType D A B C E
    assert count_planned(pipeline, PassContext(opt_level=2)) == 5  # B, C off; empty a leaf
    assert count_planned(pipeline, PassContext(opt_level=2, disabled_pass=["D"])) == 3
    assert count_planned(pipeline, PassContext(opt_level=2, required_pass=["B"])) == 6
    assert count_planned(InferType(), PassContext()) == 1
    bad = Sequential([_noop("F", required=("NoSuchPassAnywhere",))])
    assert count_planned(bad, PassContext()) is None
    assert get_pass("InferType").info.name == "InferType"


def test_adopted_node_ids_pair_two_imports_and_new_nodes_do_not_collide():
    first, second = parse(MODEL_TEXT), parse(MODEL_TEXT)
    text_a, table_a = print_snapshot(first)
    text_b, table_b = print_snapshot(second)
    assert text_a == text_b and (table_a.rows != table_b.rows).any()
    mapping = id_pairs(table_b, table_a)
    assert mapping is not None and adopt_node_ids(second, mapping) > 0
    assert (print_snapshot(second)[1].rows[:, NODE] == table_a.rows[:, NODE]).all()
    fresh = parse(MODEL_TEXT)["main"]
    assert fresh.node_id > max(mapping.values())
    other = print_snapshot(parse(MODEL_TEXT.replace("nn.relu(%2)", "%2")))[1]
    assert id_pairs(other, table_a) is None
