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
