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
from explorer.runs.recording import RecordingInstrument, SnapshotRecorder
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


# --- compact source maps ------------------------------------------------------------------


def _printed():
    from engine.relay.printer import print_ir

    mod = parse(MODEL_TEXT)
    return print_ir(mod, show_types=True)


def test_source_map_table_is_stored_as_columns_and_read_as_protocol_json():
    import json
    import zlib

    from explorer.store import decode_source_map

    store = Store(":memory:")
    result = _printed()
    sid = store.add_snapshot("r", result.text, result.source_map_table())
    snap = store.snapshot(sid)
    assert snap["text"] == result.text and snap["source_map"] == result.to_json()
    expected = json.dumps(result.to_json(), separators=(",", ":")).encode()
    assert store.snapshot_part(sid, "source_map") == expected
    assert store.snapshot_part(sid, "text") == result.text.encode()
    raw = zlib.decompress(store._one("SELECT data FROM blobs WHERE hash = ?",
                                     (store._one("SELECT map_hash FROM snapshots WHERE id = ?",
                                                 (sid,))[0],))[0])
    assert decode_source_map(raw) is not None  # columns, not JSON
    assert store.snapshot_source_map_table(sid).to_json() == result.to_json()


def test_dict_and_table_source_maps_share_one_blob():
    store = Store(":memory:")
    result = _printed()
    a = store.add_snapshot("r", result.text, result.source_map_table())
    b = store.add_snapshot("r", result.text, result.to_json())
    assert store.snapshot(a)["source_map"] == store.snapshot(b)["source_map"]
    assert store._one("SELECT COUNT(*) FROM blobs", ())[0] == 2


def test_source_maps_stored_as_json_by_older_versions_still_read():
    import hashlib
    import json
    import zlib

    store = Store(":memory:")
    entries = [{"node_id": 7, "kind": "call", "start": [2, 2], "end": [2, 9],
                "spans": ["conv1"], "op": "nn.relu"}]
    raw = json.dumps(entries, separators=(",", ":")).encode()
    digest = hashlib.sha256(raw).hexdigest()
    text = "x\n"
    text_digest = hashlib.sha256(text.encode()).hexdigest()
    with store._tx() as db:
        db.execute("INSERT INTO blobs VALUES (?, ?)", (digest, zlib.compress(raw, 6)))
        db.execute("INSERT INTO blobs VALUES (?, ?)", (text_digest,
                                                       zlib.compress(text.encode(), 6)))
        cur = db.execute("INSERT INTO snapshots (run_id, text_hash, map_hash, line_count) "
                         "VALUES ('r', ?, ?, 2)", (text_digest, digest))
        sid = int(cur.lastrowid)
    assert store.snapshot(sid)["source_map"] == entries
    assert store.snapshot_part(sid, "source_map") == raw


def test_non_protocol_dicts_are_kept_as_given():
    store = Store(":memory:")
    odd = [{"node_id": 1}, {"node_id": 2, "kind": "call", "start": [1, 0], "end": [1, 3],
                            "spans": [], "op": None, "extra": "kept"}]
    sid = store.add_snapshot("r", "t", odd)
    assert store.snapshot(sid)["source_map"] == odd


