"""The static report (`explorer report MODEL -o run.html`) opens in Chromium from file://
with no server and shows the same diff as the live page (the live run without the build,
the report's with it: the passes up to FuseOps are the same), its remarks, provenance and
schedules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from browser_helpers import mlp_with_names, run_on_page, upload

ROOT = Path(__file__).resolve().parents[2]
PASS = "FuseOps"


def _changed_lines(page: Any) -> dict[str, list[str]]:
    """The changed lines of both diff sides, in order."""
    return {side: page.locator(f".cm-editor[data-side='{side}'] .cm-changedLine").all_inner_texts()
            for side in ("a", "b")}


def _show_pass(page: Any, index: int) -> dict[str, list[str]]:
    """Select pass `index` and wait for its diff (snapshot ids differ between the live
    server's database and the report's, so the diff's title says which pass it shows)."""
    page.locator(f".pass-row[data-pass-index='{index}']").click()
    page.wait_for_function(
        "(label) => { const pane = document.querySelector('[data-testid=diff-pane]');"
        " return pane?.dataset.right && !pane.dataset.loading"
        " && pane.querySelector('.diff-title').textContent.startsWith(label); }",
        arg=f"#{index} {PASS}")
    page.locator(".cm-editor[data-side='b'] .cm-changedLine").first.wait_for()
    return _changed_lines(page)


def test_the_report_opens_from_file_and_shows_the_live_diff(page: Any, server: str,
                                                            tmp_path: Path, artifacts: Path) -> None:
    model = mlp_with_names(tmp_path / "mlp.onnx", ["fc1", "act", "fc2"])
    report = tmp_path / "run.html"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    made = subprocess.run([sys.executable, "-m", "explorer.cli", "report", str(model), "-o",
                           str(report)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert "report written to" in made.stdout

    # the live page: the same model, the same pipeline
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    _, events = run_on_page(page, server, quick=True)
    live_pass = next(e["data"] for e in events
                     if e["type"] == "pass_finished" and e["data"]["name"] == PASS)
    live = _show_pass(page, live_pass["pass_index"])
    assert live["b"]

    # the report, from file://, with every request outside the file refused
    outside: list[str] = []
    context = page.context.browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        offline = context.new_page()
        errors: list[str] = []
        offline.on("pageerror", lambda exc: errors.append(str(exc)))
        offline.route("http*://**", lambda route: (outside.append(route.request.url),
                                                  route.abort()))
        offline.goto(report.as_uri())
        offline.get_by_test_id("report-banner").wait_for()
        row = offline.locator(f".pass-row[data-pass-index='{live_pass['pass_index']}']")
        assert PASS in row.inner_text()  # the same pipeline numbers its passes alike
        assert _show_pass(offline, live_pass["pass_index"]) == live
        # the remarks and the provenance answer from the file too
        offline.get_by_test_id("pass-remarks").locator("li.remark").first.wait_for()
        offline.locator(".cm-editor[data-side='b'] .cm-line", has_text="nn.relu").first \
            .locator("text=nn.relu").first.click()
        offline.get_by_test_id("backtrace").locator("li[data-action]").first.wait_for()
        offline.screenshot(path=str(artifacts / "static-report.png"))
        # the kernels' schedules, with their diagrams, are in the file too
        offline.get_by_test_id("tab-schedules").click()
        offline.get_by_test_id("schedule-nodes").locator("li").first.click()
        offline.get_by_test_id("loop-nest").wait_for()
        offline.locator("[data-testid=tedd] svg").first.wait_for()
        assert errors == [] and outside == []
    finally:
        context.close()
