"""Upload through the file picker, live timeline, pass selection, hide unchanged, reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import (
    RUN_ENDED,
    editor_text,
    run_events,
    run_id_of,
    run_on_page,
    start_held_run,
    upload,
    wait_run_done,
)


def test_upload_passes_stream_before_the_run_finishes(page: Any, server: str, onnx_model: Any,
                                                      pipeline_gate: Any, artifacts: Path) -> None:
    pipeline_gate.arm()
    page.goto("/")
    page.screenshot(path=str(artifacts / "home.png"))
    page.get_by_test_id("file-input").set_input_files(str(onnx_model("mlp")))
    page.wait_for_url("**/s/**")
    run_id = run_id_of(page)
    assert pipeline_gate.reached.wait(30), "the run never reached the gate"
    rows = page.locator(".pass-row[data-state='done']")
    rows.first.wait_for()
    # The run is held open by the gate: passes are listed while it is still running.
    assert page.get_by_test_id("run-status").inner_text().startswith("running")
    assert page.locator(".pass-row[data-state='running']").count() >= 1
    done_while_running = rows.count()
    assert done_while_running >= 1
    page.screenshot(path=str(artifacts / "timeline-running.png"))
    pipeline_gate.release()
    events = wait_run_done(server, run_id)
    page.wait_for_function(RUN_ENDED)
    finished = [e for e in events if e["type"] == "pass_finished"]
    assert page.locator(".pass-row[data-state='done']").count() == len(finished) > done_while_running
    assert page.locator(".pass-row[data-state='running']").count() == 0
    page.screenshot(path=str(artifacts / "timeline-finished.png"))
    assert not page.watch.errors


def _final_status(events: list[dict[str, Any]]) -> str:
    last = events[-1]
    if last["type"] == "run_finished":
        return last["data"]["summary"]["status"]
    return {"run_failed": "failed", "run_cancelled": "cancelled"}[last["type"]]


def _finished_run(page: Any, server: str, model: Path) -> tuple[str, list[dict[str, Any]]]:
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    return run_on_page(page, server)


def test_select_pass_shows_before_after_and_hide_unchanged(page: Any, server: str, onnx_model: Any,
                                                            artifacts: Path) -> None:
    _, events = _finished_run(page, server, onnx_model("mlp"))
    finished = [e["data"] for e in events if e["type"] == "pass_finished"]
    # (InferType only adds type comments: the Relay-aware diff marks no line of it)
    changed = next(p for p in finished if p["changed"] and p["before"] != p["after"]
                   and p["name"] != "InferType")
    page.locator(f".pass-row[data-pass-index='{changed['pass_index']}']").click()
    diff = page.get_by_test_id("diff-pane")
    page.wait_for_function(
        f"document.querySelector('[data-testid=diff-pane]').dataset.right === '{changed['after']}'")
    assert diff.get_attribute("data-left") == str(changed["before"])
    before = page.request.get(f"/api/snapshots/{changed['before']}").json()["snapshot"]["text"]
    after = page.request.get(f"/api/snapshots/{changed['after']}").json()["snapshot"]["text"]
    first_line = lambda text: text.strip().splitlines()[0].strip()  # noqa: E731
    assert first_line(before) in editor_text(page, "a")
    assert first_line(after) in editor_text(page, "b")
    assert page.locator(".cm-changedLine, .cm-changedText").count() > 0
    assert page.locator(".pass-row[aria-selected='true']").get_attribute("data-pass-index") == str(
        changed["pass_index"])
    assert f"pass={changed['pass_index']}" in page.url
    page.screenshot(path=str(artifacts / "diff.png"))

    page.get_by_test_id("hide-unchanged").check()
    visible = page.locator(".pass-row:visible")
    shown = {int(i) for i in visible.evaluate_all("rows => rows.map(r => r.dataset.passIndex)")}
    # Hidden: exactly the passes that finished without a change (failed passes stay listed).
    failed = {e["data"]["pass_index"] for e in events if e["type"] == "pass_failed"}
    assert shown == {p["pass_index"] for p in finished if p["changed"]} | failed
    page.get_by_test_id("hide-unchanged").uncheck()
    assert page.locator(".pass-row:visible").count() == len(finished) + len(failed)

    # j / k step through the visible passes.
    page.get_by_test_id("pass-list").focus()
    start = changed["pass_index"]
    page.keyboard.press("j")
    page.wait_for_function(f"!location.search.includes('pass={start}&') && !location.search.endsWith('pass={start}')")
    assert page.locator(".pass-row[aria-selected='true']").get_attribute("data-pass-index") != str(start)
    assert not page.watch.errors


def test_reload_mid_run_completes_the_timeline(page: Any, server: str, onnx_model: Any,
                                               pipeline_gate: Any, artifacts: Path) -> None:
    run_id = start_held_run(page, server, onnx_model("mlp"), pipeline_gate)
    page.locator(".pass-row").first.wait_for()
    page.reload()
    page.locator(".pass-row").first.wait_for()
    assert page.get_by_test_id("run-status").inner_text().startswith("running")
    pipeline_gate.release()
    events = wait_run_done(server, run_id)
    page.wait_for_function(RUN_ENDED)
    assert page.get_by_test_id("run-status").get_attribute("data-status") == _final_status(events)
    started = {e["data"]["pass_index"] for e in events if e["type"] == "pass_started"}
    shown = page.locator(".pass-row").evaluate_all("rows => rows.map(r => Number(r.dataset.passIndex))")
    assert sorted(shown) == sorted(started)
    assert page.locator(".pass-row[data-state='running']").count() == 0
    assert len(run_events(server, run_id)) == len(events)
    page.screenshot(path=str(artifacts / "reload-mid-run.png"))
    assert not page.watch.errors
