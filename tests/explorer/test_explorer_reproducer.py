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

import numpy as np
from debug_models import conv_model, finished_run
from explorer_helpers import collect_until, start, subscribe, terminal, upload

from explorer.cli import main

ROOT = Path(__file__).resolve().parents[2]


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
    readme = (folder / "README.md").read_text()
    assert "the test is green" in readme
    assert "does not make the code" not in readme  # it remakes what the run recorded

    result = run_pytest(folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout

    capsys.readouterr()
    assert main(["run", str(folder / "before.relay"), "--passes", "FuseOps",
                 "--print-after-change", "--check-numerics"]) == 0
    out = capsys.readouterr().out
    assert ";; IR after FuseOps (changed)" in out and "Primitive=1" in out
    assert re.search(r"numerics: \d+ passes checked against the imported model.*: ok", out)


def test_a_plugin_pass_ships_its_source(client, sock, tmp_path, capsys):
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
    readme = (folder / "README.md").read_text()
    assert "explorer run --plugin explorer_helpers --passes ExplorerTestRebuild" in readme
    assert main(["run", str(folder / "before.relay"), "--plugin", "explorer_helpers",
                 "--passes", "ExplorerTestRebuild"]) == 0


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
