"""The session bar: a session is renamed in place (Enter saves; a blank name is refused with a
sentence; the new name shows in the bar, the page title and the home page's list, after a
reload too), and the bar names the open run and the state of the others: a run that
finishes in the background while another is open shows as finished without a reload."""

from __future__ import annotations

from typing import Any

from browser_helpers import api_get, run_on_page, upload, wait_run_done


def test_rename_a_session(page: Any, server: str, onnx_model: Any) -> None:
    session = upload(server, onnx_model("mlp"))
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("session-name").wait_for()
    page.get_by_test_id("rename-session").click()
    field = page.get_by_test_id("rename-input")
    field.fill("   ")
    field.press("Enter")
    # the error span is always there, empty until the server's refusal arrives
    page.wait_for_function("document.querySelector('[data-testid=rename-error]').textContent !== ''")
    assert "must not be empty" in page.get_by_test_id("rename-error").inner_text()
    field.fill("my little MLP")
    field.press("Enter")
    page.wait_for_function("document.querySelector('[data-testid=session-name]')?.textContent === 'my little MLP'")
    assert page.title().startswith("my little MLP")
    assert api_get(server, f"/api/sessions/{session['id']}")["session"]["name"] == "my little MLP"
    page.reload()
    page.wait_for_function("document.querySelector('[data-testid=session-name]')?.textContent === 'my little MLP'")
    page.goto("/")
    page.get_by_test_id("recent-sessions").get_by_text("my little MLP").wait_for()
    assert [e for e in page.watch.errors if "400" not in e] == []  # the blank name's refusal


def test_header_shows_the_open_run_and_a_background_run_finishing(
        page: Any, server: str, onnx_model: Any, pipeline_gate: Any) -> None:
    session = upload(server, onnx_model("mlp"))["id"]
    page.goto(f"/s/{session}")
    first, _ = run_on_page(page, server, quick=True)
    pipeline_gate.arm()
    page.get_by_test_id("run-button").click()
    page.wait_for_function("(r) => new URLSearchParams(location.search).get('run') !== r", arg=first)
    held = page.evaluate("new URLSearchParams(location.search).get('run')")
    assert pipeline_gate.reached.wait(30), "the run never reached the gate"
    page.goto(f"/s/{session}?run={first}")
    page.wait_for_function(f"document.querySelector('[data-testid=open-run]')?.textContent === 'run {first}'")
    other = page.locator(f".other-run[data-run='{held}']")
    other.wait_for()
    assert other.get_attribute("data-status") == "running"
    pipeline_gate.release()
    wait_run_done(server, held)
    page.wait_for_function(f"document.querySelector(\".other-run[data-run='{held}']\")?.dataset.status === 'finished'")
    assert "finished" in other.inner_text()
    # the open run is still the one shown
    assert page.get_by_test_id("open-run").inner_text() == f"run {first}"
    assert not page.watch.errors
