"""Real models through the app: the bundled demo (ONNX), the numerics check and its
drift bisection, and bad ONNX uploads."""

from __future__ import annotations

import io

import numpy as np
import onnx
from explorer_helpers import collect_until, start, subscribe, terminal
from onnx import TensorProto, helper

from explorer.demo import DEMO_NAME, build_demo_model


def _post(client, data: bytes, name: str):
    return client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


def test_demo_model_is_deterministic_and_valid():
    data = build_demo_model()
    assert data == build_demo_model()
    model = onnx.load_from_string(data)
    names = [n.name for n in model.graph.node]
    assert len(names) == len(set(names)) and "block1.a.conv" in names
    assert len(data) < 4 * 1024 * 1024


def test_demo_session_is_created_once(client):
    first = client.post("/api/sessions/demo")
    second = client.post("/api/sessions/demo")
    assert first.status_code == second.status_code == 201
    s = first.get_json()["session"]
    assert s["id"] == second.get_json()["session"]["id"]
    assert (s["name"], s["format"]) == (DEMO_NAME, "onnx")
    assert s["num_layers"] > 20
    graph = client.get(f"/api/sessions/{s['id']}").get_json()["graph"]
    assert "stem.conv" in {layer["name"] for layer in graph["layers"]}


def test_numerics_names_the_breaking_pass_and_the_drifted_layers(client, sock):
    session = client.post("/api/sessions/demo").get_json()["session"]
    run_id = start(sock, session["id"], check_numerics=True,
                   passes=["InferType", "ExplorerTestRebuild", "ExplorerTestPerturb",
                           "ExplorerTestNoop"])
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=120)
    leaves = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["depth"]]
    oks = [f["numerics"]["ok"] for f in leaves]
    assert oks == [True, True, False, False]
    assert leaves[1]["numerics"]["max_abs_err"] < 1e-4
    assert leaves[2]["numerics"]["max_abs_err"] > 1e-3
    summary = events[-1]["data"]["summary"]
    assert summary["first_numerics_break"] == "ExplorerTestPerturb"
    drifted = summary["drifted_layers"]
    assert drifted[0] == "down.conv"
    assert not any(name.startswith(("stem.", "block1.")) for name in drifted)


def _unsupported_model() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("FrobnicateOp", ["r"], ["y"], name="frob", domain="")]
    graph = helper.make_graph(nodes, "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


def test_bad_onnx_uploads_name_the_problem(client):
    demo = build_demo_model()
    cases = {
        "truncated.onnx": demo[: len(demo) // 3],
        "random.onnx": np.random.default_rng(0).bytes(4096),
        "text.onnx": b"hello, this is not a model",
        "unsupported.onnx": _unsupported_model(),
    }
    for name, data in cases.items():
        resp = _post(client, data, name)
        err = resp.get_json()["error"]
        assert 400 <= resp.status_code < 500, (name, err)
        assert err["message"].startswith(name), err
        assert "/tmp" not in err["message"] and "Traceback" not in err["message"]
    resp = _post(client, cases["unsupported.onnx"], "unsupported.onnx")
    assert resp.status_code == 422
    err = resp.get_json()["error"]
    assert err["code"] == "unsupported_operators" and "FrobnicateOp" in err["message"]
    assert client.post("/api/sessions/demo").status_code == 201  # still serving
