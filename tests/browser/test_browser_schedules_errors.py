"""Schedules tab (schedule record stepping, loop-nest diff, TEDD SVG) and errors shown in
place (failed upload, failed pass)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import RUN_ENDED, api_get, run_id_of, upload, wait_run_done


def _open_demo_and_build(page: Any, server: str) -> str:
    """The demo model from the home page, run with the build; returns the run id."""
    page.goto("/")
    page.get_by_test_id("open-demo").click()
    page.wait_for_url("**/s/**")
    run_id = run_id_of(page)
    events = wait_run_done(server, run_id, timeout=180)
    assert events[-1]["type"] == "run_finished", events[-1]
    assert any(e["type"] == "build_finished" and e["data"]["num_nodes"] > 0 for e in events)
    page.wait_for_function(RUN_ENDED)
    return run_id


def _step_label(page: Any) -> str:
    return page.get_by_test_id("step-label").inner_text()


def test_schedule_stepping_changes_loop_nest_and_renders_svg(page: Any, server: str,
                                                             artifacts: Path) -> None:
    run_id = _open_demo_and_build(page, server)
    build = page.get_by_test_id("build-row")
    assert build.get_attribute("data-state") == "done"
    nodes = api_get(server, f"/api/runs/{run_id}/schedules")["nodes"]
    assert f"{len(nodes)} kernels" in build.inner_text()
    build.click()  # the build row opens the Schedules tab
    assert page.get_by_test_id("tab-schedules").get_attribute("aria-selected") == "true"

    conv = next(n for n in nodes if n["name"].startswith("fused_nn_conv2d") and n["num_steps"] > 3)
    steps = api_get(server, f"/api/runs/{run_id}/schedules/{conv['index']}")["steps"]
    page.locator(f".sched-node[data-index='{conv['index']}']").click()
    assert page.get_by_test_id("schedule-title").inner_text() == conv["name"]
    layer_chips = page.locator(".sched-layers .layer-link").all_inner_texts()
    assert layer_chips == conv["spans"] and layer_chips  # the layers the kernel came from
    assert _step_label(page) == f"step 0/{len(steps) - 1} · {steps[0]['primitive']}"
    assert page.get_by_test_id("step-python").inner_text() == steps[0]["python"]
    page.locator(".tedd svg g.node").first.wait_for()
    first_nest = page.get_by_test_id("loop-nest").inner_text()
    assert steps[0]["loop_nest"].splitlines()[0].strip() in first_nest
    assert page.locator(".loop-nest .op-add, .loop-nest .op-del").count() == 0  # nothing before it
    first_svg = page.locator(".tedd svg").inner_html()

    # Step with the keyboard: the primitive, the loop nest (diffed) and the diagram follow.
    page.get_by_test_id("schedule-detail").press("ArrowRight")
    page.wait_for_function(f"document.querySelector('[data-testid=step-label]').textContent "
                           f"=== {f'step 1/{len(steps) - 1} · ' + steps[1]['primitive']!r}")
    assert page.get_by_test_id("step-python").inner_text() == steps[1]["python"]
    page.locator(".loop-nest .op-add, .loop-nest .op-del").first.wait_for()
    assert page.get_by_test_id("loop-nest").inner_text() != first_nest
    assert page.locator(".primitive-chips .chip.active").inner_text().endswith(steps[1]["primitive"])
    assert "step=1" in page.url and f"sched={conv['index']}" in page.url
    page.locator(".tedd svg g.node").first.wait_for()
    if steps[1]["tedd"]["schedule_tree"] != steps[0]["tedd"]["schedule_tree"]:
        page.wait_for_function(f"document.querySelector('.tedd svg')?.innerHTML !== {first_svg!r}")

    page.get_by_test_id("schedule-detail").press("End")
    last = steps[-1]
    page.wait_for_function(f"document.querySelector('[data-testid=step-label]').textContent "
                           f"=== {f'step {len(steps) - 1}/{len(steps) - 1} · ' + last['primitive']!r}")
    page.get_by_role("tab", name="IterVar relations").click()
    page.locator(".tedd svg g.node").first.wait_for()
    labels = " ".join(page.locator(".tedd svg g.node text").all_text_contents())
    assert "extent" in labels and "i0" in labels  # iteration variables with their extents
    page.screenshot(path=str(artifacts / "schedules.png"))

    # A reload reopens the same kernel at the same step.
    page.reload()
    page.wait_for_function(f"document.querySelector('[data-testid=step-label]')?.textContent "
                           f"=== {f'step {len(steps) - 1}/{len(steps) - 1} · ' + last['primitive']!r}")
    assert page.get_by_test_id("schedule-title").inner_text() == conv["name"]
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
