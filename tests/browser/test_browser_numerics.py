"""Numerics per pass in the page: a user pass that corrupts one conv weight (numerics_plugin,
put before the pipeline while ARMED) is the one pass the timeline marks; the banner names it,
its drifted layer and the rewrite the bisection found; the header is not a plain green
"finished"; the drifted layer is underlined in the text; the tensor inspector shows the bad
tensor next to onnxruntime's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import run_checked, sized_page, upload
from numerics_plugin import ARMED, BROKEN_LAYER, LAYERS, PASS_NAME, conv_chain_onnx


@pytest.fixture(scope="module")
def broken_run(browser: Any, server: str, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[str, str]]:
    """(session id, run id) of a finished run whose first pass corrupts one conv weight
    (armed for the whole module: the tensor inspector replays the run's pipeline)."""
    model = conv_chain_onnx(tmp_path_factory.mktemp("numerics") / "conv_chain.onnx")
    session = upload(server, model)
    ARMED.set()
    try:
        with sized_page(browser, server, 1440, 900) as (page, errors):
            yield session["id"], run_checked(page, server, session["id"])
    finally:
        ARMED.clear()


@pytest.fixture()
def run_page(browser: Any, server: str, broken_run: tuple[str, str]) -> Iterator[Any]:
    """A page showing the broken run; no script error may happen on it."""
    sid, rid = broken_run
    with sized_page(browser, server, 1440, 900) as (page, errors):
        page.goto(f"/s/{sid}?run={rid}")
        page.wait_for_function(
            "document.querySelector('[data-testid=run-status]').dataset.status === 'finished'")
        yield page
        assert not errors


def test_timeline_marks_only_the_pass_that_broke_numerics(run_page: Any, artifacts: Path) -> None:
    page = run_page
    marked = page.locator(".pass-row[data-numerics='introduced']")
    marked.first.wait_for()
    assert marked.count() == 1
    assert marked.locator(".pass-name").inner_text() == PASS_NAME
    assert marked.locator(".num-introduced").count() == 1
    inherited = page.locator(".pass-row[data-numerics='inherited']")
    assert inherited.count() >= 5  # every later pass: wrong, but not its doing
    assert page.locator(".pass-row[data-numerics='ok']").count() == 0  # the bug is first
    status = page.get_by_test_id("run-status")
    assert status.get_attribute("data-numerics") == "broken"
    assert f"numerics broke in {PASS_NAME}" in status.inner_text()
    color = status.evaluate("el => getComputedStyle(el).color")
    ok = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--ok')")
    assert color != ok.strip()
    page.screenshot(path=str(artifacts / "numerics-timeline.png"))


def test_banner_names_the_pass_the_layer_and_the_rewrite(run_page: Any, artifacts: Path) -> None:
    page = run_page
    banner = page.get_by_test_id("numerics-banner")
    page.get_by_test_id("numerics-bisect").wait_for()
    assert PASS_NAME in page.get_by_test_id("numerics-break-pass").inner_text()
    chips = page.get_by_test_id("numerics-layers").locator(".chip")
    assert chips.first.inner_text() == BROKEN_LAYER
    assert LAYERS[0] not in chips.all_inner_texts()
    bisect = page.get_by_test_id("numerics-bisect").inner_text()
    index = LAYERS.index(BROKEN_LAYER) + 1
    assert f"rewrite {index} of {len(LAYERS)} breaks it" in bisect
    assert f"nn.conv2d of {BROKEN_LAYER}" in bisect
    banner.screenshot(path=str(artifacts / "numerics-banner.png"))

    # the rewrite: its pass opens, the rewritten conv is selected in the before text
    page.get_by_test_id("numerics-rewrite").click()
    diff = page.get_by_test_id("diff-pane")
    page.wait_for_function("Number(document.querySelector('.diff-pane').dataset.highlightsA) > 0")
    assert page.locator(".pass-row[aria-selected='true'] .pass-name").inner_text() == PASS_NAME
    # the drifted layer is underlined in both texts
    assert diff.get_attribute("data-drifted") == str(chips.count())
    assert page.locator(".cm-editor[data-side='b'] .cm-hl-drift").count() > 0


def test_tensor_inspector_shows_the_bad_tensor(run_page: Any, artifacts: Path) -> None:
    page = run_page
    page.get_by_test_id("numerics-break-pass").click()
    page.wait_for_function("document.querySelector('.diff-pane .cm-editor[data-side=b]')")
    line = page.locator(".cm-editor[data-side='b'] .cm-line").filter(
        has_text=BROKEN_LAYER).filter(has_text="nn.conv2d").first
    line.get_by_text("nn.conv2d").first.click()
    target = page.locator(".tensor-target")
    page.wait_for_function("document.querySelector('.tensor-target').textContent.includes('nn.conv2d')")
    assert BROKEN_LAYER in target.inner_text()
    page.get_by_test_id("inspect-tensor").click()
    page.wait_for_function("document.querySelector('[data-testid=tensor-diff], [data-testid=tensor-error]')",
                           timeout=120_000)
    assert page.get_by_test_id("tensor-error").count() == 0, \
        page.get_by_test_id("tensor-error").inner_text()
    diff = page.get_by_test_id("tensor-diff")
    report = page.get_by_test_id("tensor-report")
    assert "[1, 4, 8, 8]" in report.inner_text() and "float32" in report.inner_text()
    assert page.get_by_test_id("tensor-histogram").locator(".bar").count() > 1
    assert "onnxruntime" in page.get_by_test_id("tensor-reference").inner_text()
    assert float(diff.get_attribute("data-diff")) > 1.0  # the corrupted conv's output
    page.get_by_test_id("tensor-pane").screenshot(path=str(artifacts / "numerics-tensor.png"))
