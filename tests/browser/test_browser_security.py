"""The page under its Content-Security-Policy (issue 20): the explorer works same-origin
with no CSP violation (bundle, socket, diff worker, Graphviz wasm), and a session can be
deleted from the home page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import api_get, run_id_of, upload, wait_run_done


def _csp_violations(page: Any) -> list[str]:
    return [e for e in page.watch.errors if "Content Security Policy" in e or "Refused" in e]


def test_the_explorer_runs_under_its_csp(page: Any, server: str, onnx_model: Any,
                                         tmp_path: Path) -> None:
    violations: list[str] = []
    page.on("console", lambda msg: "Content Security Policy" in msg.text
            and violations.append(msg.text))
    response = page.goto("/")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    page.set_input_files("[data-testid=file-input]", str(onnx_model("mlp")))
    page.wait_for_url("**/s/**")
    run_id = run_id_of(page)
    assert wait_run_done(server, run_id)[-1]["type"] == "run_finished"
    page.locator(".pass-row[data-state='done']").first.wait_for()
    page.locator(".cm-content").first.wait_for()  # CodeMirror styled and the diff shown
    assert not violations and not _csp_violations(page), violations + page.watch.errors


def test_delete_a_session_from_the_home_page(page: Any, server: str, onnx_model: Any,
                                             tmp_path: Path) -> None:
    session = upload(server, onnx_model("mlp"))
    page.add_init_script("window.confirm = () => true;")
    page.goto("/")
    row = page.locator(f"tr[data-session-id='{session['id']}']")
    row.get_by_test_id("delete-session").click()
    row.wait_for(state="detached")
    ids = {s["id"] for s in api_get(server, "/api/sessions")["sessions"]}
    assert session["id"] not in ids
    assert not _csp_violations(page), page.watch.errors
