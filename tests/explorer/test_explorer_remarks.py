"""Remarks of a recorded run (GET /api/runs/<rid>/remarks): per pass, per node (by id or by
the layers its spans name: "why wasn't this fused?"), and bad arguments named."""

from __future__ import annotations

import io
import json
from typing import Any

from debug_models import conv_model, finished_run

from explorer.protocol import RemarkList
from explorer.protocol.checks import problems


def _remarks(client: Any, run_id: str, **args: Any) -> dict[str, Any]:
    query = "&".join(f"{k}={v}" for k, v in args.items())
    resp = client.get(f"/api/runs/{run_id}/remarks?{query}")
    assert resp.status_code == 200, resp.get_json()
    assert problems(RemarkList, resp.get_json()) == []
    return resp.get_json()


def test_remarks_per_pass_and_per_node(client, sock):
    run_id, passes = finished_run(client, sock, conv_model(), "convs.onnx")
    by_name = {p["name"]: p for p in passes if p["leaf"]}
    fuse = by_name["FuseOps"]
    found = _remarks(client, run_id, **{"pass": fuse["pass_index"]})
    assert found["count"] == len(found["remarks"]) > 0
    assert {r["pass"] for r in found["remarks"]} == {"FuseOps"}
    assert {r["pass_index"] for r in found["remarks"]} == {fuse["pass_index"]}
    missed = [r for r in found["remarks"] if r["kind"] == "missed"]
    assert missed, found["remarks"]
    relu = next(r for r in missed if r["op"] == "nn.relu")
    assert relu["rule"] == "pattern" and "stem/relu" in relu["layers"]
    assert relu["args"]["consumers"] == ["nn.conv2d"]

    every = _remarks(client, run_id)
    assert every["count"] >= found["count"]
    folds = [r for r in every["remarks"] if r["pass"].endswith("FoldScaleAxis")]
    assert [(r["kind"], r["op"], r["layers"]) for r in folds if r["kind"] == "applied"] == [
        ("applied", "nn.conv2d", ["head/conv"])]  # the stem/scale multiply moved into it

    by_id = _remarks(client, run_id, node=relu["node_id"])
    assert relu in by_id["remarks"]

    # the relu's call after FuseOps is a new node: it is found by the layer it names
    after = client.get(f"/api/snapshots/{fuse['after']}").get_json()["snapshot"]
    fused = next(e for e in after["source_map"] if "stem/relu" in (e.get("spans") or [])
                 and e["node_id"] != relu["node_id"] and e["kind"] == "call")
    by_layer = _remarks(client, run_id, node=fused["node_id"])
    assert "stem/relu" in by_layer["layers"]
    assert any(r["node_id"] == relu["node_id"] for r in by_layer["remarks"])


def test_bad_remark_queries_are_named(client, sock):
    run_id, _ = finished_run(client, sock, conv_model(), "convs.onnx", build=False)
    bad = client.get(f"/api/runs/{run_id}/remarks?node=x1")
    assert bad.status_code == 400 and "'node'" in bad.get_json()["error"]["message"]
    assert client.get("/api/runs/nope/remarks").status_code == 404
    assert _remarks(client, run_id, node=10**12)["remarks"] == []


def test_remarks_travel_with_an_exported_run(client, sock):
    run_id, passes = finished_run(client, sock, conv_model(), "convs.onnx", build=False)
    mine = _remarks(client, run_id)
    export = client.get(f"/api/runs/{run_id}/export").get_json()
    assert set(export["artifacts"]["remarks"]) == {str(r["pass_index"]) for r in mine["remarks"]}

    def imported(doc: dict[str, Any]) -> Any:
        return client.post("/api/runs/import", content_type="multipart/form-data",
                           data={"file": (io.BytesIO(json.dumps(doc).encode()), "run.json")})

    resp = imported(export)
    assert resp.status_code == 201, resp.get_json()
    again = _remarks(client, resp.get_json()["run"]["id"])
    assert again["remarks"] == mine["remarks"]

    export["artifacts"]["remarks"] = {"first": export["artifacts"]["remarks"].popitem()[1]}
    bad = imported(export)
    assert bad.status_code == 400 and "not a pass index" in bad.get_json()["error"]["message"]
