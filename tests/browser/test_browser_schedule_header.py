"""Schedules of a big kernel fit: a 256-operator chain (fused into kernels of 128, the
fusion depth limit) has a kernel whose header keeps the stepper in
view (its primitives in one scrolling row, its layers in another, the operator chain clipped
with the full text on hover), and the TEDD diagram and the loop nest zoom (buttons, wheel)
with fit and 1:1 to reset, and a drag pans it; the page never scrolls sideways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import api_get, run_id_of, sized_page, upload, wait_run_done

OPS = 256


def _chain(path: Path) -> Path:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(1, 8), float32]) {"]
    prev = "%x"
    for i in range(OPS - 1):
        op = ("add", "multiply", "subtract")[i % 3]
        lines.append(f"  %{i} = {op}({prev}, 1.5f) /* layer_{i:03d}_{op} */;")
        prev = f"%{i}"
    lines += [f"  nn.relu({prev}) /* layer_{OPS - 1}_relu */", "}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_big_kernel_header_fits_and_tedd_zooms(browser: Any, server: str, tmp_path: Path,
                                               artifacts: Path) -> None:
    session = upload(server, _chain(tmp_path / "chain256.relay"))["id"]
    with sized_page(browser, server, 1024, 768) as (page, errors):
        page.goto(f"/s/{session}")
        page.get_by_test_id("check-numerics").uncheck()
        page.get_by_test_id("run-button").click()
        run = run_id_of(page)
        assert wait_run_done(server, run, timeout=600)[-1]["type"] == "run_finished"
        nodes = api_get(server, f"/api/runs/{run}/schedules")["nodes"]
        big = max(nodes, key=lambda n: len(n["ops"]))
        assert len(big["ops"]) >= 120, [len(n["ops"]) for n in nodes]
        page.get_by_test_id("tab-schedules").click()
        page.locator(f".sched-node[data-index='{big['index']}']").click()
        page.get_by_test_id("step-slider").wait_for()
        viewport = page.viewport_size
        # the stepper, the loop nest and the diagram stay on screen
        for testid in ("step-slider", "loop-nest", "tedd"):
            box = page.get_by_test_id(testid).bounding_box()
            assert box is not None and box["y"] + 10 < viewport["height"], (testid, box)
            assert box["x"] + box["width"] <= viewport["width"] + 1, (testid, box)
        chips = page.get_by_test_id("primitive-chips")
        assert chips.bounding_box()["height"] < 40  # one row, however many primitives
        layers = page.get_by_test_id("schedule-layers")
        assert layers.locator("li").count() >= 120 and layers.bounding_box()["height"] < 40
        ops = page.locator(".sched-ops")
        assert ops.evaluate("(el) => el.scrollWidth > el.clientWidth") and ops.get_attribute("title") == " → ".join(big["ops"])
        # stepping to the last step keeps its chip in view (the row scrolls, not the page)
        page.get_by_test_id("schedule-detail").focus()
        page.keyboard.press("End")
        active = page.locator(".primitive-chips .chip.active")
        row, chip = chips.bounding_box(), active.bounding_box()
        assert row["x"] - 1 <= chip["x"] and chip["x"] + chip["width"] <= row["x"] + row["width"] + 1, (row, chip)

        # TEDD: fitted, then zoomed in by a button and by the wheel, reset, dragged
        page.locator(".tedd svg g.node").first.wait_for()
        tedd = page.get_by_test_id("tedd")
        fitted = float(tedd.get_attribute("data-zoom"))
        svg_width = lambda: page.locator(".tedd svg").bounding_box()["width"]  # noqa: E731
        assert svg_width() <= tedd.bounding_box()["width"]
        page.get_by_test_id("tedd-zoom-in").click()
        page.get_by_test_id("tedd-zoom-in").click()
        assert float(tedd.get_attribute("data-zoom")) > fitted
        box = tedd.bounding_box()
        y = box["y"] + 8  # inside the box, on screen (its top may be near the bottom)
        page.mouse.move(box["x"] + box["width"] / 2, y)
        zoom = float(tedd.get_attribute("data-zoom"))
        # (a WheelEvent dispatched on the box: Playwright's mouse.wheel did not reach it here)
        tedd.evaluate("(el) => el.dispatchEvent(new WheelEvent('wheel', {deltaY: -200, clientX: "
                      "el.getBoundingClientRect().left + 40, clientY: el.getBoundingClientRect().top + 30, "
                      "bubbles: true, cancelable: true}))")
        page.wait_for_function(f"Number(document.querySelector('[data-testid=tedd]').dataset.zoom) > {zoom}")
        page.get_by_test_id("tedd-reset").click()
        assert tedd.get_attribute("data-zoom") == "1.000"
        # at 1:1 the diagram is far wider than its box: a drag pans it (the box scrolls)
        tedd.scroll_into_view_if_needed()
        box = tedd.bounding_box()
        assert tedd.evaluate("(el) => el.scrollWidth > el.clientWidth")
        left = tedd.evaluate("(el) => el.scrollLeft")
        x, y = box["x"] + box["width"] / 2, box["y"] + min(box["height"] / 2, 40)
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x - 60, y, steps=4)
        page.mouse.move(x - 150, y, steps=4)
        page.mouse.up()
        assert tedd.evaluate("(el) => el.scrollLeft") >= left + 100
        page.get_by_test_id("tedd-fit").click()
        assert float(tedd.get_attribute("data-zoom")) == fitted

        # the loop nest zooms by its buttons
        nest = page.get_by_test_id("loop-nest")
        size = lambda: nest.evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)")  # noqa: E731
        start = size()
        page.get_by_test_id("nest-zoom-in").click()
        assert size() > start
        page.get_by_test_id("nest-reset").click()
        assert size() == start
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1], width
        page.screenshot(path=str(artifacts / "schedule-256-ops-1024.png"))
        assert not errors, errors
