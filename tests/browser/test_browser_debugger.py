"""Debugging a run in the page: a breakpoint before FuseOps pauses the run and the page shows
the module there; a second page (a reload) sees the pause and continues it; the timeline's ●
sets a breakpoint, Step and Stop work; two ResNet-50 runs (O3, and O3 without
FoldScaleAxis) compare pass by pass in the Compare runs tab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import (
    RUN_ENDED,
    run_events,
    run_id_of,
    run_on_page,
    sized_page,
    upload,
    wait_run_done,
)


def _add_breakpoint(page: Any, kind: str, target: str) -> None:
    page.get_by_test_id("bp-kind").select_option(kind)
    page.get_by_test_id("bp-target").fill(target)
    page.get_by_test_id("bp-add").click()


def _wait_paused(page: Any, where: str) -> None:
    page.get_by_test_id("paused-bar").wait_for(state="visible")
    page.wait_for_function(
        "(w) => document.querySelector('[data-testid=paused-where]')?.textContent.includes(w)",
        arg=where)


def _fresh_session(page: Any, server: str, model: Any) -> None:
    """Upload `model` and open its page with no remembered layout or choices."""
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    page.evaluate("localStorage.clear()")
    page.reload()


def test_a_breakpoint_before_fuse_ops_pauses_shows_the_module_and_continue_finishes(
        page: Any, browser: Any, server: str, onnx_model: Any, artifacts: Path) -> None:
    session = upload(server, onnx_model("mlp"))
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("check-numerics").uncheck()
    _add_breakpoint(page, "before", "FuseOps")
    assert page.get_by_test_id("bp-list").inner_text().startswith("before FuseOps")
    page.get_by_test_id("run-button").click()
    run_id = run_id_of(page)
    _wait_paused(page, "FuseOps")
    events = run_events(server, run_id)
    paused = events[-1]
    assert paused["type"] == "run_paused" and paused["data"]["name"] == "FuseOps"
    snapshot = paused["data"]["snapshot"]
    # The page shows the module where the run waits: the imported module -> now.
    page.wait_for_function("(s) => document.querySelector('[data-testid=diff-pane]')?.dataset.right"
                           " === String(s)", arg=snapshot)
    assert page.get_by_test_id("run-status").get_attribute("data-status") == "running"
    assert "FuseOps" not in {r for r in page.locator(".pass-row .pass-name").all_inner_texts()}
    page.screenshot(path=str(artifacts / "debugger-paused-before-fuseops.png"))
    # A second page (a reload, another watcher) sees the pause and continues the run.
    with sized_page(browser, server, 1366, 768) as (other, errors):
        other.goto(f"/s/{session['id']}?run={run_id}")
        _wait_paused(other, "FuseOps")
        assert other.get_by_test_id("bp-list").inner_text().startswith("before FuseOps")
        other.get_by_test_id("resume-continue").click()
        final = wait_run_done(server, run_id)
        other.wait_for_function(RUN_ENDED)
        assert other.get_by_test_id("paused-bar").is_hidden()
        assert not errors
    page.wait_for_function(RUN_ENDED)
    assert final[-1]["type"] == "run_finished", final[-1]
    assert page.get_by_test_id("paused-bar").is_hidden()
    finished = [e for e in final if e["type"] == "pass_finished"]
    # Both pages got the whole stream: every pass of the run is in the timeline.
    assert page.locator(".pass-row[data-state='done']").count() == len(finished)
    assert "FuseOps" in page.locator(".pass-row .pass-name").all_inner_texts()
    assert not page.watch.errors


def test_the_timeline_dot_sets_a_breakpoint_then_step_and_stop(page: Any, server: str,
                                                              onnx_model: Any) -> None:
    _fresh_session(page, server, onnx_model("mlp"))
    run_on_page(page, server, quick=True)
    row = page.locator(".pass-row", has=page.locator(".pass-name", has_text="FoldConstant")).first
    row.hover()
    row.get_by_test_id("bp-toggle").click()
    assert "before FoldConstant" in page.get_by_test_id("bp-list").inner_text()
    page.wait_for_function("document.querySelectorAll('[data-testid=bp-toggle][aria-pressed=true]').length > 0")
    first = run_id_of(page)
    page.get_by_test_id("run-button").click()
    page.wait_for_function("(s) => new URLSearchParams(location.search).get('run') !== s",
                           arg=first)
    run_id = run_id_of(page)
    _wait_paused(page, "before")
    page.get_by_test_id("resume-step").click()
    _wait_paused(page, "after")
    last = run_events(server, run_id)[-1]
    assert last["type"] == "run_paused" and last["data"]["when"] == "after"
    assert last["data"]["name"] == "FoldConstant"
    # After a pass, the page shows that pass's own diff.
    page.wait_for_function("(s) => document.querySelector('[data-testid=diff-pane]')?.dataset.right"
                           " === String(s)", arg=last["data"]["snapshot"])
    page.get_by_test_id("resume-stop").click()
    page.wait_for_function(RUN_ENDED)
    assert page.get_by_test_id("run-status").get_attribute("data-status") == "cancelled"
    assert run_events(server, run_id)[-1]["type"] == "run_cancelled"
    # The breakpoint is removed from its list entry.
    page.get_by_role("button", name="Remove breakpoint before FoldConstant").click()
    assert "None" in page.get_by_test_id("bp-list").inner_text()
    assert not page.watch.errors


def test_two_resnet50_runs_compare_pass_by_pass(page: Any, server: str, onnx_model: Any,
                                                artifacts: Path) -> None:
    page.set_default_timeout(120_000)
    _fresh_session(page, server, onnx_model("resnet50"))
    full, _ = run_on_page(page, server, quick=True)
    page.locator("details.options-more summary").click()
    page.locator("input[data-pass='FoldScaleAxis']").uncheck()
    page.locator("details.options-more summary").click()  # closed again
    without, events = run_on_page(page, server, quick=True)
    assert events[-1]["type"] == "run_finished"
    assert events[0]["data"]["options"]["disabled_pass"] == ["FoldScaleAxis"]
    page.get_by_test_id("tab-compare").click()
    page.get_by_test_id("compare-table").locator("tbody tr").first.wait_for()
    assert page.get_by_test_id("compare-a").input_value() == without
    page.get_by_test_id("compare-b").select_option(full)
    page.wait_for_function("document.querySelector('[data-testid=compare-summary]').textContent"
                           ".includes('only in B')")
    page.wait_for_function("[...document.querySelectorAll('.compare-row')].some((r) =>"
                           " r.textContent.includes('not run'))")
    rows = page.locator(".compare-row")
    names = rows.evaluate_all("(rs) => rs.map((r) => [r.dataset.name, r.title, r.textContent])")
    scale = [n for n in names if "FoldScaleAxis" in n[1]]
    assert scale and all("not run" in n[2] for n in scale)  # run A (without) did not run them
    assert "BackwardFoldScaleAxis" in {n[0] for n in scale}
    summary = page.get_by_test_id("compare-summary").inner_text()
    assert f"{len(scale)} only in B" in summary and "0 only in A" in summary
    page.screenshot(path=str(artifacts / "compare-resnet50-foldscaleaxis.png"))
    # A pass both ran whose after-modules differ: its diff across the runs opens.
    differing = page.locator(".compare-row[data-same='false']").first
    name = differing.get_attribute("data-name")
    differing.click()
    pane = page.get_by_test_id("diff-pane")
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]')?.dataset.right")
    comparison = _compare(server, without, full)
    row = next(r for r in comparison["rows"] if r["name"] == name and r["same_after"] is False)
    assert pane.get_attribute("data-right") == str(row["b"]["after"])
    assert pane.get_attribute("data-left") == str(row["a"]["after"])
    assert not page.watch.errors


def _compare(server: str, a: str, b: str) -> Any:
    from browser_helpers import api_get

    return api_get(server, f"/api/compare?a={a}&b={b}")


def test_a_layer_breakpoint_pauses_after_the_pass_that_touches_it(page: Any, server: str,
                                                                 onnx_model: Any) -> None:
    _fresh_session(page, server, onnx_model("mlp"))
    page.get_by_test_id("build").uncheck()
    page.get_by_test_id("check-numerics").uncheck()
    page.get_by_test_id("bp-kind").select_option("touches")
    # the session's layers are offered as targets
    page.wait_for_function("[...document.querySelectorAll('#bp-targets option')]"
                           ".some((o) => o.value === 'mlp/fc1')")
    _add_breakpoint(page, "touches", "mlp/fc1")
    assert page.get_by_test_id("bp-error").inner_text() == ""
    page.get_by_test_id("run-button").click()
    run_id = run_id_of(page)
    _wait_paused(page, "after")
    pause = run_events(server, run_id)[-1]["data"]
    assert pause["layers"] == ["mlp/fc1"] and pause["breakpoint"]["kind"] == "touches"
    assert "touched layer mlp/fc1" in page.get_by_test_id("paused-bar").inner_text()
    assert page.get_by_test_id("run-status").inner_text().startswith("paused after")
    page.get_by_role("button", name="Remove breakpoint touches layer mlp/fc1").click()
    page.get_by_test_id("resume-continue").click()
    page.wait_for_function(RUN_ENDED)
    events = wait_run_done(server, run_id)
    assert events[-1]["type"] == "run_finished"
    assert [e["type"] for e in events].count("run_paused") == 1  # the list changed live
    assert not page.watch.errors


def test_a_late_continue_from_a_second_page_does_not_resume_the_next_pause(
        page: Any, browser: Any, server: str, onnx_model: Any, artifacts: Path) -> None:
    """Page B shows the run paused before FoldConstant while page A steps it on to a pause
    after it; B has not heard of that yet (its run events are held back) when its user
    presses Continue: the run stays paused, and B says the pause it answered is over."""
    session = upload(server, onnx_model("mlp"))
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("check-numerics").uncheck()
    _add_breakpoint(page, "before", "FoldConstant")
    page.get_by_test_id("run-button").click()
    run_id = run_id_of(page)
    _wait_paused(page, "FoldConstant")
    with sized_page(browser, server, 1024, 768) as (other, errors):
        held = {"events": False}

        def relay(ws: Any) -> None:
            to_server = ws.connect_to_server()
            to_server.on_message(lambda m: None if held["events"] and "run_event" in str(m)
                                 else ws.send(m))

        other.route_web_socket("**/socket.io/**", relay)
        other.goto(f"/s/{session['id']}?run={run_id}")
        _wait_paused(other, "before")
        held["events"] = True  # B hears nothing more of the run
        page.get_by_test_id("resume-step").click()
        _wait_paused(page, "after")
        paused = run_events(server, run_id)[-1]
        assert paused["type"] == "run_paused" and paused["data"]["when"] == "after"
        other.get_by_test_id("resume-continue").click()
        other.wait_for_function("document.querySelector('[data-testid=bp-error]')"
                                "?.textContent.includes('no longer paused before')")
        assert "FoldConstant" in other.get_by_test_id("bp-error").inner_text()
        assert run_events(server, run_id)[-1] == paused  # still paused after FoldConstant
        for width, height in ((1024, 768), (1920, 1080)):
            other.set_viewport_size({"width": width, "height": height})
            assert other.evaluate("document.documentElement.scrollWidth") <= width
            other.screenshot(path=str(artifacts / f"debugger-late-continue-{width}.png"))
        assert not errors
    page.get_by_test_id("resume-stop").click()
    assert wait_run_done(server, run_id)[-1]["type"] == "run_cancelled"
