"""Inputs an attacker chooses (issue 20): an upload cannot read another session's file, no
input answers a 5xx or poisons what others see (NaN, wrongly typed imports, deep Relay,
invalid UTF-8 names, huge `since`, oversize socket messages), names are cleaned, and an
upload the engine would reject anyway is rejected before it is stored."""

from __future__ import annotations

import copy
import gc
import io
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from corpus import _graph_bytes, _vi, external_data_model, mlp_model
from hardening_helpers import MODEL_TEXT, NAMESPACE, TERMINAL, thread_server
from onnx import TensorProto, helper

from explorer import socketio_of


def upload(client: Any, name: str, data: bytes) -> Any:
    if len(data) < 100_000:
        return client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                           content_type="multipart/form-data")
    boundary = "inputs-boundary-9e4d"  # werkzeug's encoder leaves big bodies' files open
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    body += data + f"\r\n--{boundary}--\r\n".encode()
    return client.post("/api/sessions", data=io.BytesIO(body),
                       content_type=f"multipart/form-data; boundary={boundary}")


def import_doc(client: Any, raw: bytes) -> Any:
    return client.post("/api/runs/import", data={"file": (io.BytesIO(raw), "run.json")},
                       content_type="multipart/form-data")


def assert_home_still_lists(client: Any) -> None:
    resp = client.get("/api/sessions")
    assert resp.status_code == 200
    json.loads(resp.get_data(as_text=True))  # strict JSON: no NaN, no Infinity


# --- an upload is a world of its own --------------------------------------------------------
def test_external_data_cannot_name_another_sessions_file(client: Any, data_dir: Path) -> None:
    victim = upload(client, "victim.onnx", mlp_model().SerializeToString())
    assert victim.status_code == 201
    stored = [p.name for p in (data_dir / "models").rglob("*") if p.is_file()]
    for location in stored + [f"{victim.get_json()['session']['id']}.onnx"]:
        resp = upload(client, "thief.onnx", external_data_model(location))
        assert resp.status_code == 400, (location, resp.get_json())
        error = resp.get_json()["error"]
        assert error["code"] == "unsafe_model" and "external" in error["message"]


# --- no 5xx, nothing poisoned ----------------------------------------------------------------
def test_invalid_utf8_op_name_is_a_4xx(client: Any) -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    data = _graph_bytes([node], [_vi("x", [1, 4])], [_vi("y", [1, 4])])
    broken = data.replace(b"Relu", b"R\xffl\xfe")
    assert broken != data
    resp = upload(client, "badname.onnx", broken)
    assert 400 <= resp.status_code < 500, resp.get_data(as_text=True)[:300]
    assert resp.get_json()["error"]["message"].startswith("badname.onnx")


DEEP = 100_000
DEEP_RELAY = {
    "parens": "def @main(%x: Tensor[(1), float32]) { " + "(" * DEEP + "%x" + ")" * DEEP + " }",
    "calls": "def @main(%x: Tensor[(1), float32]) { " + "nn.relu(" * DEEP + "%x" + ")" * DEEP
             + " }",
    "tuples": "def @main(%x: Tensor[(1), float32]) { " + "(%x, " * DEEP + "%x" + ")" * DEEP
              + " }",
    "braces": "def @main(%x: Tensor[(1), float32]) { " + "{ " * DEEP + "%x" + " }" * DEEP
              + " }",
    "types": "def @main(%x: " + "(" * DEEP + "Tensor[(1), float32]" + ",)" * DEEP + ") { %x }",
}


@pytest.mark.parametrize("kind", DEEP_RELAY)
def test_deeply_nested_relay_is_a_4xx(client: Any, kind: str) -> None:
    resp = upload(client, f"deep_{kind}.relay", DEEP_RELAY[kind].encode())
    assert 400 <= resp.status_code < 500, resp.get_data(as_text=True)[:300]
    assert resp.get_json()["error"]["message"].startswith(f"deep_{kind}.relay")


@pytest.mark.parametrize("text", ["// only a comment\n", "/* nothing */", "#[version = \"0.0.5\"]\n",
                                  "   \n\n"])
def test_relay_without_main_is_a_4xx(client: Any, text: str) -> None:
    resp = upload(client, "empty.relay", text.encode())
    assert 400 <= resp.status_code < 500, resp.get_data(as_text=True)[:300]


def _strict_onnx() -> dict[str, bytes]:
    negative = _graph_bytes([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                            [_vi("x", [1, -4])], [_vi("y", [1, -4])])
    mixed = _graph_bytes(
        [helper.make_node("Add", ["x", "i"], ["y"], name="add")],
        [_vi("x", [1, 4]), helper.make_tensor_value_info("i", TensorProto.INT64, [1, 4])],
        [_vi("y", [1, 4])])
    w = onnx.numpy_helper.from_array(__import__("numpy").ones((5, 7), "float32"), "w")
    gemm = _graph_bytes([helper.make_node("Gemm", ["x", "w"], ["y"], name="fc")],
                        [_vi("x", [1, 4])], [_vi("y", [1, 5])], [w])
    return {"negative.onnx": negative, "mixed.onnx": mixed, "gemm.onnx": gemm}


STRICT_RELAY = {
    "typeerror.relay": 'def @main(%x: Tensor[(1, 4), float32], %i: Tensor[(1, 4), int64]) {'
                       ' add(%x, %i) }',
    "duplicate.relay": 'def @main(%x: Tensor[(1, 4), float32], %x: Tensor[(1, 4), float32]) {'
                       ' add(%x, %x) }',
    "shapes.relay": 'def @main(%x: Tensor[(1, 4), float32], %y: Tensor[(3, 5), float32]) {'
                    ' add(%x, %y) }',
}


def test_strictly_invalid_models_are_rejected_before_they_are_stored(
        client: Any, data_dir: Path) -> None:
    cases = {**_strict_onnx(), **{k: v.encode() for k, v in STRICT_RELAY.items()}}
    for name, data in cases.items():
        resp = upload(client, name, data)
        assert 400 <= resp.status_code < 500, (name, resp.status_code, resp.get_json())
        assert resp.get_json()["error"]["message"].startswith(name)
    assert client.get("/api/sessions").get_json()["sessions"] == []
    assert not [p for p in (data_dir / "models").rglob("*") if p.is_file()]


# --- imports ----------------------------------------------------------------------------------
@pytest.fixture()
def exported(app: Any, client: Any) -> dict[str, Any]:
    sock = socketio_of(app).test_client(app, namespace=NAMESPACE)
    sid = upload(client, "m.relay", MODEL_TEXT.encode()).get_json()["session"]["id"]
    ack = sock.emit("start_run", {"session_id": sid, "options": {
        "passes": ["HardeningRebuild"], "build": False}}, namespace=NAMESPACE, callback=True)
    rid = ack["run_id"]
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = client.get(f"/api/runs/{rid}/events").get_json()["events"]
        if events and events[-1]["type"] in TERMINAL:
            break
        time.sleep(0.05)
    sock.disconnect(namespace=NAMESPACE)
    doc = client.get(f"/api/runs/{rid}/export").get_json()
    doc["artifacts"]["schedules"] = [{"index": 0, "name": "k", "func_name": "f", "spans": [],
                                      "ops": ["add"], "num_steps": 1, "steps": [
                                          {"k": 0, "primitive": "vanilla", "python": "",
                                           "loop_nest": "", "tedd": {"schedule_tree": "",
                                                                     "itervar": "",
                                                                     "dataflow": ""}}]}]
    return doc


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key] if not callable(key) else key(target)
        target[path[-1]] = value
    return change


def _pass_finished(events: list[dict[str, Any]]) -> int:
    return next(k for k, e in enumerate(events) if e["type"] == "pass_finished")


def _event(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["events"][_pass_finished(doc["events"])]["data"][field] = value
    return change


NAN_TEXT = b"NaN"
POISON: dict[str, Callable[[dict[str, Any]], None]] = {
    "run-total-nan": _set(("run", "total_ms"), float("nan")),
    "run-total-inf": _set(("run", "total_ms"), float("inf")),
    "event-elapsed-nan": _event("elapsed_ms", float("nan")),
    "event-coverage-inf": _event("span_coverage", float("-inf")),
    "session-layers-huge": _set(("session", "num_layers"), 2**70),
    "event-stats-typed": _event("stats", {"nodes": "many", "nodes_delta": 0}),
    "event-index-huge": _set(("events", 0, "index"), 2**63),
    "schedules-not-list": _set(("artifacts", "schedules"), {"a": 1}),
    "schedules-step-typed": _set(("artifacts", "schedules", 0, "steps"), [{"k": "zero"}]),
    "schedules-index-text": _set(("artifacts", "schedules", 0, "index"), "0"),
    "source-map-typed": lambda doc: doc["snapshots"][next(iter(doc["snapshots"]))].update(
        source_map=[{"node_id": "x", "kind": 1, "start": "a", "end": None, "spans": 3}]),
    "session-inputs-typed": _set(("session", "inputs"), [{"name": 1, "shape": "x"}]),
    "graph-layers-typed": _set(("graph", "layers"), [{"name": None, "op_type": 3}]),
    "session-name-control": _set(("session", "name"), "a\x00b\x1b[31m\u202e" + "x" * 300000),
}


@pytest.mark.parametrize("name", POISON)
def test_a_poisoned_import_is_refused_and_poisons_nothing(client: Any,
                                                          exported: dict[str, Any],
                                                          name: str) -> None:
    doc = copy.deepcopy(exported)
    POISON[name](doc)
    resp = import_doc(client, json.dumps(doc).encode())
    assert resp.status_code == 400 or name == "session-name-control", (name, resp.get_json())
    assert_home_still_lists(client)
    if resp.status_code == 201:
        session = resp.get_json()["session"]
        assert len(session["name"]) <= 255
        assert not any(ord(c) < 32 or 0x202A <= ord(c) <= 0x202E for c in session["name"])
        run = resp.get_json()["run"]["id"]
        for path in (f"/api/runs/{run}", f"/api/runs/{run}/timing",
                     f"/api/runs/{run}/schedules", f"/api/runs/{run}/schedules/0",
                     f"/api/runs/{run}/export", f"/api/sessions/{session['id']}"):
            assert client.get(path).status_code < 500, path


def test_nan_literal_in_the_json_text_is_refused(client: Any, exported: dict[str, Any]) -> None:
    raw = json.dumps(exported).replace('"total_ms": ', '"total_ms": NaN, "x": ', 1)
    assert import_doc(client, raw.encode()).status_code == 400
    assert_home_still_lists(client)


# --- numbers and messages -------------------------------------------------------------------
def test_huge_since_is_answered(app: Any, client: Any, exported: dict[str, Any]) -> None:
    run = import_doc(client, json.dumps(exported).encode()).get_json()["run"]["id"]
    for since in (2**63, 2**64 + 5, 10**30):
        resp = client.get(f"/api/runs/{run}/events?since={since}")
        assert resp.status_code in (200, 400), (since, resp.status_code)
    sock = socketio_of(app).test_client(app, namespace=NAMESPACE)
    for since in (2**63, 10**30):
        ack = sock.emit("subscribe", {"run_id": run, "since": since}, namespace=NAMESPACE,
                        callback=True)
        assert isinstance(ack, dict) and ("error" in ack or ack.get("ok")), ack
    sock.disconnect(namespace=NAMESPACE)


def test_an_oversize_socket_message_is_refused(app: Any) -> None:
    import socketio

    with thread_server(app) as base:
        client = socketio.Client(reconnection=False)
        client.connect(base, namespaces=[NAMESPACE], transports=["websocket"], wait_timeout=10)
        try:
            with pytest.raises(socketio.exceptions.SocketIOError):
                client.call("subscribe", {"run_id": "x" * (2 * 1024 * 1024), "since": 0},
                            namespace=NAMESPACE, timeout=5)
        finally:
            client.disconnect()
            with warnings.catch_warnings():  # the connection the server closed: collect it here
                warnings.simplefilter("ignore", ResourceWarning)
                del client
                gc.collect()
        again = socketio.Client(reconnection=False)  # the server is still there
        again.connect(base, namespaces=[NAMESPACE], transports=["websocket"], wait_timeout=10)
        ack = again.call("subscribe", {"run_id": "nope", "since": 0}, namespace=NAMESPACE,
                         timeout=10)
        assert ack["error"]["code"] == "not_found"
        again.disconnect()


BAD_NAMES = {"nul": "a\x00b.relay", "ansi": "\x1b[31mred\x1b[0m.relay",
             "rtl": "evil\u202egnp.relay", "long": "x" * 200_000 + ".relay",
             "newline": "two\nlines.relay"}


@pytest.mark.parametrize("kind", BAD_NAMES)
def test_file_names_are_cleaned_and_bounded(client: Any, kind: str) -> None:
    resp = upload(client, BAD_NAMES[kind], MODEL_TEXT.encode())
    assert resp.status_code in (201, 400), resp.status_code
    if resp.status_code == 201:
        name = resp.get_json()["session"]["name"]
        assert len(name) <= 255 and name.endswith(".relay")
        assert not any(ord(c) < 32 or ord(c) == 0x7F or 0x202A <= ord(c) <= 0x202E
                       or 0x2066 <= ord(c) <= 0x2069 for c in name), repr(name)
