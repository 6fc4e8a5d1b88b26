"""Numerics per pass through the app: the error each pass adds (against the snapshot
before it and against the imported model), the first pass that broke numerics with its
drifted layers and nodes, and the bisection within that pass (a user pass that corrupts
one conv weight; numerics_plugin)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from explorer_helpers import run_leaves
from numerics_plugin import BROKEN_LAYER, LAYERS, PASS_NAME, PIPELINE, conv_chain_onnx


@pytest.fixture(scope="module")
def conv_chain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return conv_chain_onnx(tmp_path_factory.mktemp("numerics") / "conv_chain.onnx")


def _session(client: Any, path: Path) -> dict[str, Any]:
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(path.read_bytes()),
                                                       path.name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()["session"]


_run = run_leaves


def test_only_the_pass_that_broke_numerics_is_marked(client, sock, conv_chain):
    session = _session(client, conv_chain)
    leaves, summary = _run(sock, session["id"], check_numerics=True, build=False,
                           passes=PIPELINE)
    assert [leaf["name"] for leaf in leaves if leaf["numerics"]["introduced"]] == [PASS_NAME]
    at = [leaf["name"] for leaf in leaves].index(PASS_NAME)
    bad = leaves[at]["numerics"]
    assert not bad["ok"] and not bad["step_ok"] and bad["step_max_abs_err"] > 1.0
    later = [leaf["numerics"] for leaf in leaves[at + 1:]]
    assert later and all(not n["ok"] and n["step_ok"] for n in later)  # inherited, not added
    assert all(leaf["numerics"]["ok"] and leaf["numerics"]["step_ok"] for leaf in leaves[:at])

    events = client.get(f"/api/runs/{summary['id']}/events").get_json()["events"]
    finished = [e["data"] for e in events if e["type"] == "pass_finished"]
    assert any(not f["leaf"] for f in finished)  # the explicit list's Sequential: not blamed
    assert [f["name"] for f in finished if f["numerics"]["introduced"]] == [PASS_NAME]

    found = summary["numerics_break"]
    assert summary["first_numerics_break"] == found["pass_name"] == PASS_NAME
    bad_leaf = next(leaf for leaf in leaves if leaf["name"] == PASS_NAME)
    assert (found["before"], found["after"]) == (bad_leaf["before"], bad_leaf["after"])
    assert found["pass_index"] == bad_leaf["pass_index"]
    assert found["layers"][0] == BROKEN_LAYER
    assert summary["drifted_layers"] == found["layers"]
    assert LAYERS[0] not in found["layers"]
    assert found["max_abs_err"] > 1.0

    after = client.get(f"/api/snapshots/{found['after']}").get_json()["snapshot"]
    spans = {e["node_id"]: e["spans"] for e in after["source_map"]}
    assert found["nodes"] and all(any(layer in spans.get(n, []) for layer in found["layers"])
                                  for n in found["nodes"])

    bisect = found["bisect"]
    assert bisect["error"] is None and bisect["total"] == len(LAYERS)
    rewrite = bisect["rewrite"]
    assert rewrite["index"] == LAYERS.index(BROKEN_LAYER) + 1
    assert (rewrite["op"], rewrite["layers"]) == ("nn.conv2d", [BROKEN_LAYER])
    before = client.get(f"/api/snapshots/{found['before']}").get_json()["snapshot"]
    assert rewrite["node_id"] in {e["node_id"] for e in before["source_map"]}


def test_a_sound_pipeline_has_no_break(client, sock, conv_chain):
    session = _session(client, conv_chain)
    leaves, summary = _run(sock, session["id"], check_numerics=True, build=False)
    assert leaves and not any(leaf["numerics"]["introduced"] for leaf in leaves)
    assert all(leaf["numerics"]["step_ok"] for leaf in leaves)
    assert summary["first_numerics_break"] is None
    assert summary.get("numerics_break") is None


def test_without_the_check_there_is_no_numerics(client, sock, conv_chain):
    session = _session(client, conv_chain)
    leaves, summary = _run(sock, session["id"], build=False, passes=PIPELINE)
    assert all(leaf["numerics"] is None for leaf in leaves)
    assert summary.get("numerics_break") is None


def _conv_of(client: Any, snapshot: int, layer: str) -> int:
    entries = client.get(f"/api/snapshots/{snapshot}").get_json()["snapshot"]["source_map"]
    return next(e["node_id"] for e in entries
                if e["op"] == "nn.conv2d" and layer in e["spans"] and not e.get("ref"))


def test_the_tensor_inspector_shows_the_bad_tensor(client, sock, conv_chain):
    session = _session(client, conv_chain)
    _, summary = _run(sock, session["id"], check_numerics=True, build=False, passes=PIPELINE)
    found = summary["numerics_break"]
    rid = summary["id"]
    reports = {}
    for side in ("before", "after"):
        node = _conv_of(client, found[side], BROKEN_LAYER)
        resp = client.get(f"/api/runs/{rid}/tensors/{found[side]}/{node}")
        assert resp.status_code == 200, resp.get_json()
        reports[side] = resp.get_json()["tensor"]
    good, bad = reports["before"], reports["after"]
    for report in (good, bad):
        stats = report["stats"]
        assert stats["shape"] == [1, 4, 8, 8] and stats["dtype"] == "float32"
        assert stats["nan"] == stats["inf"] == 0 and stats["values"] is None
        assert sum(stats["histogram"]["counts"]) == 256
        assert len(stats["histogram"]["edges"]) == len(stats["histogram"]["counts"]) + 1
        assert report["layers"] == [BROKEN_LAYER] and report["op"] == "nn.conv2d"
        ref = report["reference"]
        assert (ref["runtime"], ref["layer"], ref["error"]) == ("onnxruntime", BROKEN_LAYER, None)
        assert ref["layer_output"]
    assert good["reference"]["max_abs_diff"] < 1e-4
    assert bad["reference"]["max_abs_diff"] > 1.0
    assert bad["stats"]["max"] > good["stats"]["max"] + 1.0
    again = client.get(f"/api/runs/{rid}/tensors/{found['after']}/"
                       f"{_conv_of(client, found['after'], BROKEN_LAYER)}")
    assert again.get_json()["tensor"] == bad  # from the run's cache


def test_the_tensor_inspector_names_what_it_cannot_show(client, sock, conv_chain):
    session = _session(client, conv_chain)
    _, summary = _run(sock, session["id"], build=False, passes=["InferType"])
    rid, snap = summary["id"], summary["final_snapshot"]
    missing = client.get(f"/api/runs/{rid}/tensors/{snap}/999999999")
    assert missing.status_code == 404 and "999999999" in missing.get_json()["error"]["message"]
    entries = client.get(f"/api/snapshots/{snap}").get_json()["snapshot"]["source_map"]
    var = next(e["node_id"] for e in entries if e["kind"] in ("Constant", "constant", "Var", "var"))
    refused = client.get(f"/api/runs/{rid}/tensors/{snap}/{var}")
    assert refused.status_code == 422
    assert "pick the call" in refused.get_json()["error"]["message"]


def _gemm_onnx(path: Path) -> Path:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc")], "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_a_part_of_a_layer_is_told_apart_from_its_output(client, sock, tmp_path):
    """Gemm imports as a dense and a bias add: the runtime's tensor is the add's value."""
    session = _session(client, _gemm_onnx(tmp_path / "gemm.onnx"))
    _, summary = _run(sock, session["id"], build=False, passes=["InferType"])
    rid, snap = summary["id"], summary["final_snapshot"]
    entries = client.get(f"/api/snapshots/{snap}").get_json()["snapshot"]["source_map"]
    calls = {e["op"]: e["node_id"] for e in entries if e["op"] and not e.get("ref")}
    found = {op: client.get(f"/api/runs/{rid}/tensors/{snap}/{node}").get_json()["tensor"]
             for op, node in calls.items() if op in ("nn.dense", "add", "nn.bias_add")}
    ends = [t for t in found.values() if t["reference"]["layer_output"]]
    parts = [t for t in found.values() if not t["reference"]["layer_output"]]
    assert len(ends) == 1 and parts and found.get("nn.dense") in parts
    assert ends[0]["reference"]["max_abs_diff"] < 1e-5
    assert ends[0]["stats"]["values"] is not None and len(ends[0]["stats"]["values"]) == 4
