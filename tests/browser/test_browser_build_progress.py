"""The page shows the build's progress (calls lowered of all, kernels) while it builds, and
Cancel stops the build there: the run ends cancelled, the build row says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import build_gate
from browser_helpers import run_id_of, upload, wait_run_done

# Five fused calls: dense+relu (8 wide), dense+relu (16 wide), dense+sigmoid (the build
# gate holds its kernel), dense+relu (8 wide again: the first kernel), dense.
FIVE_CALLS = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8), float32], %w1: Tensor[(8, 8), float32],
          %w2: Tensor[(16, 8), float32], %w3: Tensor[(8, 16), float32],
          %w4: Tensor[(8, 8), float32], %w5: Tensor[(4, 8), float32]) {
  %0 = nn.relu(nn.dense(%x, %w1, units=8) /* fc1 */) /* relu1 */;
  %1 = nn.relu(nn.dense(%0, %w2, units=16) /* fc2 */) /* relu2 */;
  %2 = sigmoid(nn.dense(%1, %w3, units=8) /* fc3 */) /* gate */;
  %3 = nn.relu(nn.dense(%2, %w4, units=8) /* fc4 */) /* relu4 */;
  nn.dense(%3, %w5, units=4) /* fc5 */
}
"""


def test_the_page_shows_build_progress_and_cancel_stops_the_build(
        page: Any, server: str, tmp_path: Path, artifacts: Path) -> None:
    model = tmp_path / "five_calls.relay"
    model.write_text(FIVE_CALLS)
    session = upload(server, model)
    build_gate.arm()
    try:
        page.goto(f"/s/{session['id']}")
        assert page.get_by_test_id("build").is_checked()
        page.get_by_test_id("run-button").click()
        run_id = run_id_of(page)
        assert build_gate.BUILD_GATE_REACHED.wait(120), "the build never reached the gate"
        build = page.get_by_test_id("build-row")
        page.wait_for_function("document.querySelector('[data-testid=build-row]')"
                               "?.textContent.includes('2/5 calls lowered')")
        assert build.get_attribute("data-state") == "running"
        assert "2/5 calls lowered · 2 kernels" in build.inner_text()
        assert page.get_by_test_id("run-progress").inner_text() == "building · 2/5 calls"
        page.screenshot(path=str(artifacts / "build-progress.png"))
        cancel = page.get_by_test_id("cancel-button")
        assert cancel.is_visible()
        cancel.click()
        events = wait_run_done(server, run_id, timeout=60)
    finally:
        build_gate.disarm()
    assert events[-1]["type"] == "run_cancelled", events[-1]
    assert [e["data"]["done"] for e in events if e["type"] == "build_progress"] == [0, 1, 2]
    page.wait_for_function("document.querySelector('[data-testid=build-row]')?.dataset.state"
                           " === 'stopped'")
    assert "cancelled" in page.get_by_test_id("build-row").inner_text()
    page.wait_for_function("document.querySelector('[data-testid=run-status]')"
                           ".dataset.status === 'cancelled'")


def test_a_shared_kernel_lists_its_call_sites_with_the_layers_of_each(
        page: Any, server: str, tmp_path: Path, artifacts: Path) -> None:
    model = tmp_path / "five_calls.relay"
    model.write_text(FIVE_CALLS)
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("run-button").click()
    run_id = run_id_of(page)
    events = wait_run_done(server, run_id, timeout=120)
    assert events[-1]["type"] == "run_finished", events[-1]
    page.wait_for_function("document.querySelector('[data-testid=build-row]')?.dataset.state"
                           " === 'done'")
    page.get_by_test_id("build-row").click()  # opens the Schedules tab
    shared = page.locator(".sched-node", has_text="2 calls")
    shared.first.wait_for()  # the tab fetches its kernel list after it opens
    assert shared.count() == 1
    assert "fc1" in shared.inner_text() and "fc4" in shared.inner_text()
    shared.click()
    calls = page.get_by_test_id("schedule-calls").locator(".call-site")
    calls.first.wait_for()
    assert calls.count() == 2
    layers = page.get_by_test_id("schedule-layers")
    page.wait_for_function("document.querySelector('[data-testid=schedule-layers]')"
                           "?.textContent.includes('fc1')")
    assert sorted(layers.locator(".layer-link").all_inner_texts()) == ["fc1", "relu1"]
    calls.nth(1).click()
    page.wait_for_function("document.querySelector('[data-testid=schedule-layers]')"
                           "?.textContent.includes('fc4')")
    assert sorted(layers.locator(".layer-link").all_inner_texts()) == ["fc4", "relu4"]
    assert calls.nth(1).get_attribute("aria-pressed") == "true"
    page.wait_for_function("document.querySelector('[data-testid=step-label]')"
                           "?.textContent.startsWith('step 0/')")
    page.screenshot(path=str(artifacts / "schedules-shared-kernel.png"))
