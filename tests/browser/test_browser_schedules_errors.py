"""Schedules tab (schedule record stepping, loop-nest diff, TEDD SVG) and errors shown in
place (failed upload, failed pass)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import run_id_of, upload, wait_run_done

HAS_BUILD = importlib.util.find_spec("engine.relay.build_module") is not None


@pytest.mark.xfail(not HAS_BUILD, strict=False,
                   reason="engine.relay.build_module (relay.build with recorded TE schedules) has "
                          "not landed: runs fail at the build, so there are no schedules to step")
def test_schedule_stepping_changes_loop_nest_and_renders_svg(page: Any, server: str,
                                                             onnx_model: Any, artifacts: Path) -> None:
    session = upload(server, onnx_model("mlp"))
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("build").check()
    page.get_by_test_id("run-button").click()
    events = wait_run_done(server, run_id_of(page), timeout=120)
    if events[-1]["type"] != "run_finished":
        failure = events[-1]["data"]
        pytest.xfail(f"the engine's O3 pipeline + build does not complete yet ({failure.get('pass')}: "
                     f"{str(failure.get('message'))[:160]}), so there are no schedules to step")
    page.get_by_test_id("tab-schedules").click()
    nodes = page.locator(".sched-node")
    nodes.first.wait_for()
    # Pick a node whose record has more than the vanilla step.
    index = next(i for i, text in enumerate(nodes.all_inner_texts())
                 if not text.rstrip().endswith(" 1 steps"))
    nodes.nth(index).click()
    page.get_by_test_id("step-label").wait_for()
    page.locator(".tedd svg").wait_for()
    first_nest = page.get_by_test_id("loop-nest").inner_text()
    first_label = page.get_by_test_id("step-label").inner_text()
    page.get_by_test_id("schedule-detail").press("ArrowRight")
    page.wait_for_function(f"document.querySelector('[data-testid=step-label]').textContent !== {first_label!r}")
    page.locator(".loop-nest .op-add, .loop-nest .op-del").first.wait_for()
    assert page.get_by_test_id("loop-nest").inner_text() != first_nest
    page.locator(".tedd svg").wait_for()
    assert page.locator(".tedd svg g").count() > 0
    assert "step=1" in page.url
    page.screenshot(path=str(artifacts / "schedules.png"))
    assert not page.watch.errors


def test_failed_upload_is_shown_in_place(page: Any, tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-model.onnx"
    bogus.write_bytes(b"this is not a protobuf \x00\xff")
    page.goto("/")
    page.get_by_test_id("file-input").set_input_files(str(bogus))
    error = page.get_by_test_id("upload-status").locator(".error-box")
    error.wait_for()
    assert "not-a-model.onnx" in error.inner_text()
    assert page.url.rstrip("/").endswith(page.url.split("/")[2])  # still on the home page


def test_failed_pass_is_named_in_place(page: Any, server: str, onnx_model: Any,
                                       pipeline_gate: Any, artifacts: Path) -> None:
    session = upload(server, onnx_model("mlp"))
    pipeline_gate.failing = True
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("build").uncheck()
    page.get_by_test_id("run-button").click()
    events = wait_run_done(server, run_id_of(page))
    failures = [e["data"] for e in events if e["type"] == "pass_failed"]
    assert failures
    culprit = failures[0]["name"]  # BrowserTestFailure, or an engine pass failing before it
    error = page.get_by_test_id("run-error")
    error.wait_for()
    assert culprit in error.inner_text()
    failed = page.locator(".pass-row[data-state='failed']")
    assert failed.count() == len(failures)  # the pass and the Sequentials around it
    assert culprit in failed.all_inner_texts()[-1] + failed.all_inner_texts()[0]
    assert page.get_by_test_id("run-status").get_attribute("data-status") == "failed"
    assert culprit in page.get_by_test_id("run-status").inner_text()
    page.screenshot(path=str(artifacts / "failed-pass.png"))
