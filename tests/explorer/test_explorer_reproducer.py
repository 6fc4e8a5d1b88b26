"""Reproducers of one pass (GET /api/runs/<rid>/passes/<i>/reproducer): the zip runs green
with pytest in a clean process (only the repository on PYTHONPATH), `explorer run --passes`
runs its Relay text with the constants beside it, and bad requests are named."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from explorer_helpers import collect_until, start, subscribe, terminal, upload
from onnx import TensorProto, helper, numpy_helper

from explorer.cli import main

ROOT = Path(__file__).resolve().parents[2]


def conv_model() -> bytes:
    """conv (weights) + bias + relu, then a per-channel scale and a second conv: FoldScaleAxis
    and FuseOps both have work, and the constants must travel with the text."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("w1", (8, 3, 3, 3)), ("b1", (8,)), ("w2", (4, 8, 1, 1)))]
    inits.append(numpy_helper.from_array((rng.random((1, 8, 1, 1)) + 0.5).astype(np.float32),
                                         "s"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="stem/conv",
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="stem/relu"),
             helper.make_node("Mul", ["r1", "s"], ["m"], name="stem/scale"),
             helper.make_node("Conv", ["m", "w2"], ["y"], name="head/conv")]
    graph = helper.make_graph(nodes, "convs", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def finished_run(client: Any, sock: Any, data: bytes, name: str, **options: Any
                 ) -> tuple[str, list[dict[str, Any]]]:
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    run_id = start(sock, resp.get_json()["session"]["id"], **options)
    subscribe(sock, run_id)
    collect_until(sock, terminal, timeout=120)
    events = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    assert events[-1]["type"] == "run_finished", events[-1]
    return run_id, [e["data"] for e in events if e["type"] == "pass_finished"]


def unzip(body: bytes, into: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        archive.extractall(into)
        (top,) = {n.split("/")[0] for n in archive.namelist()}
    return into / top


def run_pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    """pytest in a fresh process: only the repository on PYTHONPATH, the folder as cwd."""
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": str(folder)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_a_fuse_ops_reproducer_runs_green_and_from_the_cli(client, sock, tmp_path, capsys):
    run_id, passes = finished_run(client, sock, conv_model(), "convs.onnx")
    fuse = next(p for p in passes if p["name"] == "FuseOps")
    resp = client.get(f"/api/runs/{run_id}/passes/{fuse['pass_index']}/reproducer")
    assert resp.status_code == 200, resp.get_json()
    assert resp.mimetype == "application/zip"
    assert "FuseOps" in resp.headers["Content-Disposition"]
    folder = unzip(resp.data, tmp_path)
    names = {p.name for p in folder.iterdir()}
    assert names == {"README.md", "after.relay", "before.npz", "before.relay", "expected.npz",
                     "inputs.npz", "pass.json", "test_reproducer.py", "plugins"}
    spec = json.loads((folder / "pass.json").read_text())
    assert (spec["pass"], spec["opt_level"]) == ("FuseOps", 3)
    before = (folder / "before.relay").read_text()
    assert "meta[relay.Constant]" in before and "#[metadata]" not in before
    assert "stem/conv" in before  # the layer names travel as span comments
    referenced = set(re.findall(r"meta\[relay\.Constant\]\[(\d+)\]", before))
    with np.load(folder / "before.npz") as constants:
        assert sorted(constants.files) == sorted(f"c{k}" for k in referenced)
    assert "Primitive=1" in (folder / "after.relay").read_text()

    result = run_pytest(folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout

    capsys.readouterr()
    assert main(["run", str(folder / "before.relay"), "--passes", "FuseOps",
                 "--print-after-change", "--check-numerics"]) == 0
    out = capsys.readouterr().out
    assert ";; IR after FuseOps (changed)" in out and "Primitive=1" in out
    assert re.search(r"numerics: \d+ passes checked against the imported model.*: ok", out)


def test_a_plugin_pass_ships_its_source(client, sock, tmp_path):
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestRebuild"], build=False)
    subscribe(sock, run_id)
    collect_until(sock, terminal)
    events = client.get(f"/api/runs/{run_id}/events").get_json()["events"]
    leaf = next(e["data"] for e in events if e["type"] == "pass_finished"
                and e["data"]["name"] == "ExplorerTestRebuild")
    resp = client.get(f"/api/runs/{run_id}/passes/{leaf['pass_index']}/reproducer")
    assert resp.status_code == 200, resp.get_json()
    folder = unzip(resp.data, tmp_path)
    assert (folder / "plugins" / "explorer_helpers.py").is_file()
    assert json.loads((folder / "pass.json").read_text())["plugins"] == ["explorer_helpers"]
    result = run_pytest(folder)
    assert result.returncode == 0, result.stdout + result.stderr


def test_bad_reproducer_requests_are_named(client, sock):
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestNoop"], build=False)
    subscribe(sock, run_id)
    collect_until(sock, terminal)
    missing = client.get(f"/api/runs/{run_id}/passes/99/reproducer")
    assert missing.status_code == 404
    assert "no finished pass 99" in missing.get_json()["error"]["message"]
    container = client.get(f"/api/runs/{run_id}/passes/0/reproducer")  # the Sequential
    assert container.status_code == 422
    assert container.get_json()["error"]["code"] == "pass_not_registered"
    assert client.get("/api/runs/nope/passes/1/reproducer").status_code == 404


def test_the_cli_reads_relay_text_without_constants_as_before(tmp_path):
    path = tmp_path / "m.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n'
                    '  nn.relu(%x)\n}\n')
    assert main(["run", str(path), "--passes", "FoldConstant"]) == 0
