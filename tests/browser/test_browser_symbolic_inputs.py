"""A model with a symbolic batch dimension in the page: the session names its symbolic
inputs, the build box is locked, pinning the dimensions opens a new session that runs the
whole pipeline and builds (its timeline ends with LowerTE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import upload
from shared_models import symbolic_model


def test_pinning_a_symbolic_batch_builds(page: Any, server: str, tmp_path: Path) -> None:
    path = tmp_path / "symbolic.onnx"
    path.write_bytes(symbolic_model())
    session = upload(server, path)
    page.goto(f"/s/{session['id']}")
    notice = page.get_by_test_id("symbolic-inputs")
    notice.wait_for()
    assert "pixels [batch, 3, 8, 8]" in notice.inner_text()
    assert "bias [?]" in notice.inner_text()
    build = page.get_by_test_id("build")
    assert build.is_disabled() and not build.is_checked()

    page.get_by_label("Size of batch").fill("2")
    page.get_by_label("Size of bias dim 0").fill("3")
    page.get_by_test_id("pin-button").click()
    page.wait_for_url(lambda url: session["id"] not in url and "/s/" in url)
    summary = page.get_by_test_id("session-summary")
    summary.get_by_text("[2, 3, 8, 8]").wait_for()
    assert page.get_by_test_id("symbolic-inputs").count() == 0
    assert page.get_by_test_id("build").is_enabled()

    page.get_by_test_id("build").check()
    page.get_by_test_id("run-button").click()
    status = page.get_by_test_id("run-status")
    page.wait_for_function("() => document.querySelector('[data-testid=run-status]')"
                           ".dataset.status === 'finished'", timeout=120_000)
    assert "finished" in status.inner_text()
    assert page.locator("[data-testid=timeline] >> text=LowerTE").count() >= 1


def test_a_bad_pin_is_answered_in_place(page: Any, server: str, tmp_path: Path) -> None:
    path = tmp_path / "symbolic.onnx"
    path.write_bytes(symbolic_model())
    session = upload(server, path)
    page.goto(f"/s/{session['id']}")
    page.get_by_label("Size of batch").fill("0")
    page.get_by_label("Size of bias dim 0").fill("3")
    page.get_by_test_id("pin-button").click()  # the browser's own check refuses 0
    assert session["id"] in page.url  # still on the symbolic session: nothing was pinned
    field = page.get_by_label("Size of batch")
    assert field.evaluate("el => !el.checkValidity()")
