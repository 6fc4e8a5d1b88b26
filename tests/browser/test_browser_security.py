"""The page under its Content-Security-Policy (issue 20): with the CSP enforced (the other
browser tests bypass it, since Playwright's string predicates use eval), the explorer works
same-origin with no violation: the bundle, the socket, the diff worker, CodeMirror's styles
and Graphviz as wasm; and a session can be deleted from the home page and from its own
page (not while a run is in progress)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from browser_helpers import RUN_ENDED, api_get, upload, wait_run_done


class Violations:
    """CSP violations and page errors a page reported."""

    def __init__(self, page: Any) -> None:
        self.seen: list[str] = []
        page.on("console", lambda msg: msg.type == "error" and self.seen.append(msg.text))
        page.on("pageerror", lambda exc: self.seen.append(str(exc)))

    def csp(self) -> list[str]:
        return [e for e in self.seen if "Content Security Policy" in e or "Refused" in e]


def run_id_of(page: Any) -> str:
    """The run in the page's URL, read without evaluating script (the CSP forbids eval)."""
    page.wait_for_url(lambda url: "run" in parse_qs(urlparse(url).query))
    query = parse_qs(urlparse(page.url).query)
    assert "run" in query, page.url
    return str(query["run"][0])


@pytest.fixture()
def strict_page(browser: Any, server: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, base_url=server)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.violations = Violations(page)
    yield page
    context.close()


def test_the_explorer_runs_under_its_csp(strict_page: Any, server: str, onnx_model: Any,
                                         pipeline_gate: Any) -> None:
    page = strict_page
    frames: list[str] = []  # what the page's websocket received
    page.on("websocket", lambda ws: "/socket.io/" in ws.url and ws.on(
        "framereceived", lambda frame: frames.append(str(frame))))
    response = page.goto("/")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    pipeline_gate.arm()  # held, so the rest of the run reaches the page live, over the socket
    try:
        page.set_input_files("[data-testid=file-input]", str(onnx_model("mlp")))
        page.wait_for_url("**/s/**")
        run_id = run_id_of(page)
        assert pipeline_gate.reached.wait(30), "the run never reached the gate"
        page.locator(".pass-row[data-state='done']").first.wait_for()  # the page follows it
        pipeline_gate.release()
        assert wait_run_done(server, run_id)[-1]["type"] == "run_finished"
    finally:
        pipeline_gate.disarm()
    page.wait_for_function(RUN_ENDED)
    page.locator(".pass-row[data-state='done']").first.wait_for()
    page.locator(".pass-row[data-changed='true']").first.click()
    page.locator(".cm-content").first.wait_for()  # CodeMirror styled, the diff shown
    assert not page.violations.csp(), page.violations.seen
    assert any("run_event" in frame for frame in frames), frames[:5]


def test_schedule_diagrams_render_under_the_csp(strict_page: Any, server: str) -> None:
    page = strict_page
    page.goto("/")
    page.get_by_test_id("open-demo").click()
    page.wait_for_url("**/s/**")
    run_id = run_id_of(page)
    assert wait_run_done(server, run_id, timeout=180)[-1]["type"] == "run_finished"
    build = page.get_by_test_id("build-row")
    page.locator("[data-testid=build-row][data-state='done']").wait_for(timeout=60_000)
    build.click()
    nodes = api_get(server, f"/api/runs/{run_id}/schedules")["nodes"]
    page.locator(f".sched-node[data-index='{nodes[0]['index']}']").click()
    page.locator(".tedd svg g.node").first.wait_for()  # viz.js: Graphviz compiled to wasm
    assert not page.violations.csp(), page.violations.seen


def test_delete_a_session_from_the_home_page(strict_page: Any, server: str,
                                             onnx_model: Any) -> None:
    page = strict_page
    session = upload(server, onnx_model("mlp"))
    page.add_init_script("window.confirm = () => true;")
    page.goto("/")
    row = page.locator(f"tr[data-session-id='{session['id']}']")
    row.get_by_test_id("delete-session").click()
    row.wait_for(state="detached")
    ids = {s["id"] for s in api_get(server, "/api/sessions")["sessions"]}
    assert session["id"] not in ids
    assert not page.violations.csp(), page.violations.seen


def test_delete_a_session_from_its_own_page(strict_page: Any, server: str, onnx_model: Any,
                                            pipeline_gate: Any) -> None:
    page = strict_page
    session = upload(server, onnx_model("mlp"))
    page.add_init_script("window.confirm = () => true;")
    pipeline_gate.arm()
    try:
        page.goto(f"/s/{session['id']}?autorun=1")
        run_id = run_id_of(page)
        assert pipeline_gate.reached.wait(timeout=30)
        page.get_by_test_id("delete-session").click()  # refused: a run is in progress
        page.locator(".banner").get_by_text("cancel it first").wait_for()
        assert session["id"] in {s["id"] for s in api_get(server, "/api/sessions")["sessions"]}
        pipeline_gate.release()
        assert wait_run_done(server, run_id)[-1]["type"] == "run_finished"
    finally:
        pipeline_gate.disarm()
    page.get_by_test_id("delete-session").click()
    page.wait_for_url(lambda url: urlparse(url).path == "/")
    assert session["id"] not in {s["id"] for s in api_get(server, "/api/sessions")["sessions"]}
    assert not page.violations.csp(), page.violations.seen
