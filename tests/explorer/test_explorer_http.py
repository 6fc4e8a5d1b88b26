"""HTTP API: sessions, snapshots, diff, backtrace, layers, timing, export/import,
bad inputs answered with 4xx JSON, restart persistence."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from explorer_helpers import MODEL_TEXT, collect_until, start, subscribe, terminal, upload

from explorer import create_app
from explorer.store import Store


def _finished_run(client: Any, sock: Any, passes: list[str]) -> tuple[str, list[dict]]:
    session = upload(client)
    run_id = start(sock, session["id"], passes=passes)
    subscribe(sock, run_id)
    return run_id, collect_until(sock, terminal)


def _post_file(client: Any, data: bytes, name: str, url: str = "/api/sessions") -> Any:
    return client.post(url, data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


def test_upload_describes_the_session_and_lists_it(client):
    session = upload(client)
    assert session["format"] == "relay" and session["name"] == "model.relay"
    assert session["inputs"] == [{"name": "x", "shape": [1, 4], "dtype": "float32"}]
    listed = client.get("/api/sessions").get_json()["sessions"]
    assert [s["id"] for s in listed] == [session["id"]]
    got = client.get(f"/api/sessions/{session['id']}").get_json()
    assert got["session"] == session and got["runs"] == []
    assert set(got["graph"]) == {"layers", "inputs", "outputs"}


def test_pages_and_static_are_served(client):
    upload(client)
    for url in ("/", "/s/abc", "/s/abc/r/def"):
        resp = client.get(url)
        assert resp.status_code == 200 and b"<" in resp.data


def test_snapshot_diff_backtrace_layers_timing(client, sock):
    run_id, events = _finished_run(client, sock, ["ExplorerTestRebuild", "ExplorerTestNoop"])
    started = events[0]["data"]
    leaves = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["depth"]]
    rebuild = leaves[0]
    snap = client.get(f"/api/snapshots/{rebuild['after']}").get_json()["snapshot"]
    assert snap["line_count"] == snap["text"].count("\n") + 1
    relu = [e for e in snap["source_map"] if e["op"] == "nn.relu" and not e.get("ref")]
    assert {tuple(e["spans"]) for e in relu} == {("relu1",), ("relu2",)}

    diff = client.get(f"/api/diff?a={started['initial_snapshot']}&b={rebuild['after']}")
    body = diff.get_json()
    before_ids = {e["node_id"] for e in client.get(
        f"/api/snapshots/{started['initial_snapshot']}").get_json()["snapshot"]["source_map"]}
    assert set(body["nodes"]["added"]) == {e["node_id"] for e in snap["source_map"]} - before_ids
    assert body["nodes"]["added"] and body["nodes"]["removed"] and body["nodes"]["kept"]
    assert body["unified"] == ""  # same text, new node ids: only the node sets differ

    node = relu[0]["node_id"]
    trace = client.get(f"/api/runs/{run_id}/backtrace/{node}").get_json()
    assert trace["layers"] == relu[0]["spans"]
    assert [(s["pass_name"], s["action"]) for s in trace["steps"]] == [
        ("ExplorerTestRebuild", "created")]

    layer = client.get(f"/api/runs/{run_id}/layers/fc1").get_json()
    assert [n["op"] for n in layer["nodes"] if n["kind"] == "call"] == ["add"]

    timing = client.get(f"/api/runs/{run_id}/timing").get_json()
    (root,) = timing["passes"]
    assert [c["name"] for c in root["children"]] == ["ExplorerTestRebuild", "ExplorerTestNoop"]
    assert client.get(f"/api/runs/{run_id}/schedules").get_json() == {"nodes": []}
    assert client.get(f"/api/runs/{run_id}/schedules/0").status_code == 404


def test_backtrace_of_an_imported_node_starts_at_import(client, sock):
    run_id, events = _finished_run(client, sock, ["ExplorerTestNoop"])
    initial = events[0]["data"]["initial_snapshot"]
    smap = client.get(f"/api/snapshots/{initial}").get_json()["snapshot"]["source_map"]
    add = next(e for e in smap if e["op"] == "add")
    trace = client.get(f"/api/runs/{run_id}/backtrace/{add['node_id']}").get_json()
    assert trace["steps"][0]["action"] == "created" and trace["steps"][0]["pass_name"] == "import"
    assert trace["layers"] == ["fc1"]
    assert client.get(f"/api/runs/{run_id}/backtrace/999999999").status_code == 404


def test_export_import_round_trip(client, sock):
    run_id, events = _finished_run(client, sock, ["ExplorerTestRebuild", "ExplorerTestNoop"])
    exported = client.get(f"/api/runs/{run_id}/export")
    assert exported.status_code == 200
    resp = _post_file(client, exported.data, "run.json", "/api/runs/import")
    assert resp.status_code == 201
    body = resp.get_json()
    new_run = body["run"]["id"]
    assert new_run != run_id
    old = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    new = client.get(f"/api/runs/{new_run}/events").get_json()["events"]
    assert [e["type"] for e in new] == [e["type"] for e in old]
    for a, b in zip(old, new):
        if a["type"] == "pass_finished":
            text_a = client.get(f"/api/snapshots/{a['data']['after']}").get_json()
            text_b = client.get(f"/api/snapshots/{b['data']['after']}").get_json()
            assert text_a["snapshot"]["text"] == text_b["snapshot"]["text"]
            assert text_a["snapshot"]["source_map"] == text_b["snapshot"]["source_map"]
    assert body["session"]["name"] == "model.relay"
    bad = _post_file(client, b'{"format": "something else"}', "x.json", "/api/runs/import")
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "bad_export"


@pytest.mark.parametrize(("data", "name", "status", "code"), [
    (b"", "model.onnx", 400, "empty_file"),
    (MODEL_TEXT.encode(), "model.exe", 415, "unsupported_extension"),
    (MODEL_TEXT.encode(), "model", 415, "unsupported_extension"),
    (MODEL_TEXT[: len(MODEL_TEXT) // 2].encode(), "cut.relay", 400, "parse_error"),
    (b"def @main( {{{ not relay", "bad.relay", 400, "parse_error"),
    (MODEL_TEXT.replace("nn.relu(%0)", "nn.frobnicate(%0)").encode(), "op.relay", None, None),
])
def test_bad_uploads_answer_4xx_json_naming_the_problem(client, data, name, status, code):
    resp = _post_file(client, data, name)
    err = resp.get_json()["error"]
    assert 400 <= resp.status_code < 500, err
    if status is not None:
        assert (resp.status_code, err["code"]) == (status, code)
    assert err["message"] and "Traceback" not in err["message"]
    assert "/" not in err["message"].split(":")[0]  # the client's name, never a server path
    assert upload(client)["format"] == "relay"  # the server still answers


def test_a_parse_error_names_the_file_and_keeps_its_caret_block(client):
    text = MODEL_TEXT.replace("nn.relu(%0) /* relu1 */;", "nn.relu(%0 /* relu1 */;")
    err = _post_file(client, text.encode(), "mine.relay").get_json()["error"]
    first, *context = err["message"].split("\n")
    # file:line:col as the user knows the file (not the stored copy's hash name), then the
    # source line and a caret under the column, on lines of their own
    assert first.startswith("mine.relay:4:") and "mine.relay" not in first[len("mine.relay"):]
    assert len(context) == 2 and "nn.relu(%0" in context[0] and context[1].strip() == "^"


def test_upload_without_file_and_bad_shapes(client):
    assert client.post("/api/sessions").get_json()["error"]["code"] == "missing_file"
    resp = client.post("/api/sessions", data={
        "file": (io.BytesIO(MODEL_TEXT.encode()), "m.relay"),
        "input_shapes": json.dumps({"x": [10**6, 10**6, 10**3]})},
        content_type="multipart/form-data")
    assert resp.status_code == 422 and resp.get_json()["error"]["code"] == "tensor_too_large"
    resp = client.post("/api/sessions", data={
        "file": (io.BytesIO(MODEL_TEXT.encode()), "m.relay"), "input_shapes": "{nope"},
        content_type="multipart/form-data")
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "bad_input_shapes"


def test_too_large_upload_is_413_json(data_dir):
    app = create_app({"TESTING": True, "DATA_DIR": str(data_dir), "MAX_CONTENT_LENGTH": 1000})
    resp = _post_file(app.test_client(), b"x" * 5000, "big.onnx")
    assert resp.status_code == 413
    assert resp.get_json()["error"]["code"] == "too_large"


def test_unknown_ids_are_404_json(client):
    for url in ("/api/sessions/nope", "/api/runs/nope", "/api/runs/nope/events",
                "/api/snapshots/12345", "/api/runs/nope/timing", "/api/runs/nope/export",
                "/api/no/such/route"):
        resp = client.get(url)
        assert resp.status_code == 404, url
        assert resp.get_json()["error"]["code"] == "not_found", url
    assert client.get("/api/diff?a=x&b=1").get_json()["error"]["code"] == "bad_argument"


def test_restart_keeps_sessions_runs_and_snapshots(client, sock, data_dir):
    run_id, events = _finished_run(client, sock, ["ExplorerTestRebuild"])
    again = create_app({"TESTING": True, "DATA_DIR": str(data_dir)}).test_client()
    assert again.get(f"/api/runs/{run_id}").get_json()["run"]["status"] == "finished"
    stored = again.get(f"/api/runs/{run_id}/events").get_json()["events"]
    assert stored == events
    final = stored[-1]["data"]["summary"]["final_snapshot"]
    assert "nn.relu" in again.get(f"/api/snapshots/{final}").get_json()["snapshot"]["text"]


def test_a_run_left_running_by_a_dead_server_is_interrupted(data_dir, client):
    session = upload(client)
    store = Store(data_dir / "explorer.sqlite3")  # what a killed server leaves behind
    from explorer.protocol import empty_summary

    store.add_run(empty_summary("deadrun", session["id"], {}))
    snap = store.add_snapshot("deadrun", MODEL_TEXT, [])
    store.append_event("deadrun", session["id"], "run_started",
                       {"options": {}, "initial_snapshot": snap, "num_passes_planned": 3})
    store.close()
    again = create_app({"TESTING": True, "DATA_DIR": str(data_dir)}).test_client()
    run = again.get("/api/runs/deadrun").get_json()["run"]
    assert run["status"] == "interrupted" and run["final_snapshot"] == snap
    events = again.get("/api/runs/deadrun/events").get_json()["events"]
    assert [e["type"] for e in events] == ["run_started", "run_failed"]
    assert events[-1]["data"]["code"] == "interrupted"
