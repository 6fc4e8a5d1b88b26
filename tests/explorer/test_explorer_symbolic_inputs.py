"""Symbolic input dimensions: an upload says which inputs have them (by the exporter's
symbol), a build of such a session is refused at start naming them, and pinning them makes
a new session that runs the whole pipeline and builds."""

from __future__ import annotations

import io
from typing import Any

import pytest
from explorer_helpers import collect_until, start, subscribe, terminal
from shared_models import dynamic_batch_head, symbolic_model

from explorer.protocol import NAMESPACE, SYMBOLIC_INPUTS


def _upload(client: Any) -> dict[str, Any]:
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(symbolic_model()), "sym.onnx")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()["session"]


def _pin(client: Any, sid: str, shapes: dict[str, list[int]]) -> Any:
    return client.post(f"/api/sessions/{sid}/pin", json={"input_shapes": shapes})


def test_the_upload_names_the_symbolic_dimensions(client):
    session = _upload(client)
    shapes = {t["name"]: t["shape"] for t in session["inputs"]}
    assert shapes == {"pixels": ["batch", 3, 8, 8], "bias": ["?"]}
    assert session["outputs"][0]["shape"] == ["batch", 4, 8, 8]


def test_a_build_of_a_symbolic_session_is_refused_at_start_naming_the_inputs(client, sock):
    session = _upload(client)
    ack = sock.emit("start_run", {"session_id": session["id"], "options": {"build": True}},
                    namespace=NAMESPACE, callback=True)
    error = ack["error"]
    assert error["code"] == SYMBOLIC_INPUTS
    assert "pixels (batch, 3, 8, 8)" in error["message"] and "bias (?)" in error["message"]
    assert error["detail"]["inputs"] == {"pixels": ["batch", 3, 8, 8], "bias": ["?"]}
    assert client.get(f"/api/sessions/{session['id']}").get_json()["runs"] == []


def test_without_build_the_symbolic_module_runs_the_pipeline(client, sock):
    session = _upload(client)
    run_id = start(sock, session["id"], build=False)
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=60)
    assert events[-1]["type"] == "run_finished", events[-1]


def test_pinning_makes_a_new_session_that_builds(client, sock):
    session = _upload(client)
    resp = _pin(client, session["id"], {"pixels": [2, 3, 8, 8], "bias": [5]})
    assert resp.status_code == 201, resp.get_json()
    pinned = resp.get_json()["session"]
    assert pinned["id"] != session["id"] and pinned["name"] == "sym.onnx"
    assert {t["name"]: t["shape"] for t in pinned["inputs"]} == {"pixels": [2, 3, 8, 8],
                                                                 "bias": [5]}
    # the original is kept as it was
    original = client.get(f"/api/sessions/{session['id']}").get_json()["session"]
    assert original["inputs"] == session["inputs"]

    run_id = start(sock, pinned["id"], build=True)
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=120)
    assert events[-1]["type"] == "run_finished", events[-1]
    passes = [e["data"]["name"] for e in events if e["type"] == "pass_finished"]
    assert "LowerTE" in passes


def test_pinning_one_input_keeps_the_other_symbolic(client):
    session = _upload(client)
    pinned = _pin(client, session["id"], {"pixels": [1, 3, 8, 8]}).get_json()["session"]
    assert {t["name"]: t["shape"] for t in pinned["inputs"]} == {"pixels": [1, 3, 8, 8],
                                                                 "bias": ["?"]}
    # pinning the pinned session's remaining input carries the first pin over
    both = _pin(client, pinned["id"], {"bias": [3]}).get_json()["session"]
    assert {t["name"]: t["shape"] for t in both["inputs"]} == {"pixels": [1, 3, 8, 8],
                                                               "bias": [3]}


def test_bad_pins_name_the_problem(client):
    sid = _upload(client)["id"]
    cases = [
        ({"pixels": [2, 4, 8, 8]}, "dimension 1 fixed at 3"),
        ({"pixels": [2, 3, 8]}, "has rank 4"),
        ({"nope": [1]}, "'nope' is not an input with symbolic dimensions"),
        ({"pixels": [0, 3, 8, 8]}, "positive integers"),
        ({}, "names no input"),
    ]
    for shapes, expected in cases:
        resp = _pin(client, sid, shapes)
        assert resp.status_code == 400, shapes
        error = resp.get_json()["error"]
        assert error["code"] == "bad_input_shapes" and expected in error["message"], error
    resp = client.post(f"/api/sessions/{sid}/pin", json=["x"])
    assert resp.get_json()["error"]["code"] == "bad_payload"
    assert client.post("/api/sessions/missing/pin",
                       json={"input_shapes": {"x": [1]}}).status_code == 404
    assert len(client.get("/api/sessions").get_json()["sessions"]) == 1


def test_a_torch_onnx_export_with_a_dynamic_batch_pins_and_builds(client, sock, tmp_path):
    """The same flow on a file torch.onnx wrote (its dim_param is the dynamic_axes name; its
    Reshape target is computed from the input's shape)."""
    pytest.importorskip("torch")
    path = tmp_path / "head.onnx"
    dynamic_batch_head(path, "pixels")
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(path.read_bytes()), path.name)},
                       content_type="multipart/form-data")
    session = resp.get_json()["session"]
    assert session["inputs"][0]["shape"] == ["batch", 3, 6, 6]
    pinned = _pin(client, session["id"], {"pixels": [3, 3, 6, 6]}).get_json()["session"]
    run_id = start(sock, pinned["id"], build=True)
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=120)
    assert events[-1]["type"] == "run_finished", events[-1]
    assert "LowerTE" in [e["data"]["name"] for e in events if e["type"] == "pass_finished"]
