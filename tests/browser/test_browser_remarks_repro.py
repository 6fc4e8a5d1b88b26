"""Remarks and reproducers in the page: FuseOps's remarks show at their lines in the diff
and in the Remarks pane, "Why?" on a selected expression lists the remarks about it, and
the reproducer downloaded from the page runs green with pytest in a clean process."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from browser_helpers import mlp_with_names, run_on_page, upload

ROOT = Path(__file__).resolve().parents[2]


def _open_pass(page: Any, server: str, model: Path, name: str) -> dict[str, Any]:
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    _, events = run_on_page(page, server, quick=True)
    chosen = next(e["data"] for e in events
                  if e["type"] == "pass_finished" and e["data"]["name"] == name)
    page.locator(f".pass-row[data-pass-index='{chosen['pass_index']}']").click()
    page.wait_for_function(
        f"document.querySelector('[data-testid=diff-pane]').dataset.right === '{chosen['after']}'")
    return chosen


def test_fuse_ops_remarks_show_inline_and_answer_why(page: Any, server: str, tmp_path: Path,
                                                     artifacts: Path) -> None:
    _open_pass(page, server, mlp_with_names(tmp_path / "mlp.onnx", ["fc1", "act", "fc2"]),
               "FuseOps")
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]')"
                           ".dataset.remarks) > 0")
    before = page.locator(".cm-editor[data-side='a']")
    missed = before.locator("[data-testid=remark-marker][data-kind=missed]")
    missed.first.wait_for()
    assert "nn.relu not fused" in missed.first.get_attribute("title")
    marked = before.locator(".cm-remark-line[data-remark-kind=missed]")
    assert "nn.relu not fused" in marked.first.get_attribute("title")
    listed = page.get_by_test_id("pass-remarks").locator("li.remark[data-kind=missed]")
    assert "nn.relu not fused" in listed.first.inner_text()
    page.screenshot(path=str(artifacts / "remarks-fuse-ops.png"))

    # a click on the marker selects the relu; "Why?" lists the remarks about it
    missed.first.click()
    page.get_by_test_id("expr-node").wait_for()
    why = page.get_by_test_id("why-button")
    assert "nn.relu" in why.inner_text()
    why.click()
    answer = page.get_by_test_id("node-remarks").locator("li.remark")
    answer.first.wait_for()
    assert any("FuseOps" in t and "not fused" in t for t in answer.all_inner_texts())
    assert not page.watch.errors


def test_a_reproducer_downloaded_from_the_page_runs_green(page: Any, server: str,
                                                           tmp_path: Path) -> None:
    chosen = _open_pass(page, server, mlp_with_names(tmp_path / "mlp.onnx",
                                                     ["dense1", "relu", "dense2"]), "FuseOps")
    button = page.get_by_test_id("download-reproducer")
    assert button.get_attribute("data-pass") == str(chosen["pass_index"])
    with page.expect_download(timeout=120_000) as info:
        button.click()
    assert info.value.suggested_filename.endswith(f"-{chosen['pass_index']}-FuseOps.zip")
    archive = tmp_path / "repro.zip"
    info.value.save_as(archive)
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(unpacked)
    (folder,) = list(unpacked.iterdir())
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                            cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert not page.watch.errors


def test_a_pass_without_a_reproducer_says_why(page: Any, server: str, tmp_path: Path) -> None:
    session = upload(server, mlp_with_names(tmp_path / "mlp.onnx", ["a", "b", "c"]))
    page.goto(f"/s/{session['id']}")
    run_on_page(page, server, quick=True)
    page.locator(".pass-row", has_text="StandardPipeline").first.click()  # a container
    page.get_by_test_id("download-reproducer").click()
    status = page.get_by_test_id("reproducer-status").locator(".error-box")
    status.wait_for()
    assert "not registered by name" in status.inner_text()
    # Chromium logs the refused request itself; nothing else went wrong
    assert [e for e in page.watch.errors if "status of 422" not in e] == []
