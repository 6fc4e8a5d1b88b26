"""Store and recording: content-addressed snapshots, gap-free event indexes, and a
recorder that prints only modules that changed."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from explorer_helpers import MODEL_TEXT, _rebuild

from engine.relay.parser import parse
from engine.transform import PassContext, Sequential, get_pass
from explorer.protocol import ApiError, RunOptions, empty_summary
from explorer.recording import RecordingInstrument, SnapshotRecorder
from explorer.store import Store


def test_identical_texts_are_stored_once():
    store = Store(":memory:")
    store.add_run(empty_summary("r", "s", {}))
    a = store.add_snapshot("r", MODEL_TEXT, [{"node_id": 1}])
    size = store.run_bytes("r")
    b = store.add_snapshot("r", MODEL_TEXT, [{"node_id": 1}])
    c = store.add_snapshot("r", MODEL_TEXT + "\n", [{"node_id": 1}])
    assert a != b
    assert store.snapshot_text_hash(a) == store.snapshot_text_hash(b)
    assert store.snapshot_text_hash(c) != store.snapshot_text_hash(a)
    assert store.run_bytes("r") > size  # only the third text added bytes
    assert store.snapshot(b)["text"] == MODEL_TEXT


def test_event_indexes_have_no_gaps_under_concurrent_appends():
    store = Store(":memory:")
    store.add_run(empty_summary("r", "s", {}))

    def writer(k: int) -> None:
        for i in range(50):
            store.append_event("r", "s", "pass_started", {"k": k, "i": i})

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = store.events("r")
    assert [e["index"] for e in events] == list(range(200))
    assert [e["index"] for e in store.events("r", since=190)] == list(range(190, 200))


def test_run_options_validation():
    assert RunOptions.from_json(None) == RunOptions()
    opts = RunOptions.from_json({"opt_level": 2, "disabled_pass": ["FoldConstant"],
                                 "check_numerics": True})
    assert opts.to_json()["disabled_pass"] == ["FoldConstant"] and opts.opt_level == 2
    for bad in ({"opt_level": True}, {"passes": "InferType"}, {"build": "yes"}, {"x": 1}):
        with pytest.raises(ApiError) as info:
            RunOptions.from_json(bad)
        assert info.value.status == 400 and info.value.code == "bad_options"


def test_recorder_prints_only_changed_modules():
    store = Store(":memory:")
    store.add_run(empty_summary("r", "s", {}))
    recorder = SnapshotRecorder(store, "r")
    events: list[tuple[str, dict[str, Any]]] = []
    inst = RecordingInstrument(recorder, lambda t, d: events.append((t, d)))
    mod = parse(MODEL_TEXT)
    passes = [get_pass(n) for n in ("ExplorerTestNoop", "ExplorerTestNoop",
                                     "ExplorerTestRebuild", "ExplorerTestNoop")]
    with PassContext(opt_level=3, instruments=[inst]):
        out = Sequential(passes, name="seq")(mod)
    finished = [d for t, d in events if t == "pass_finished"]
    assert [d["name"] for d in finished] == ["ExplorerTestNoop", "ExplorerTestNoop",
                                             "ExplorerTestRebuild", "ExplorerTestNoop", "seq"]
    assert [d["changed"] for d in finished] == [False, False, True, False, True]
    assert [d["depth"] for d in finished] == [1, 1, 1, 1, 0]
    assert {d["parent_index"] for d in finished[:4]} == {0}
    assert recorder.num_printed == 2  # the input and the rebuilt module, nothing else
    assert out is not mod and _rebuild(out, None) is not out


def test_started_events_precede_finished_in_tree_order():
    store = Store(":memory:")
    store.add_run(empty_summary("r", "s", {}))
    events: list[tuple[str, dict[str, Any]]] = []
    inst = RecordingInstrument(SnapshotRecorder(store, "r"), lambda t, d: events.append((t, d)))
    with PassContext(opt_level=3, instruments=[inst]):
        Sequential([get_pass("ExplorerTestRebuild")], name="outer")(parse(MODEL_TEXT))
    assert [(t, d["name"]) for t, d in events] == [
        ("pass_started", "outer"), ("pass_started", "ExplorerTestRebuild"),
        ("pass_finished", "ExplorerTestRebuild"), ("pass_finished", "outer")]
    assert all(d["elapsed_ms"] >= 0 for t, d in events if t == "pass_finished")
