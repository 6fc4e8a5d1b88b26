"""A 50,000-line module: the diff panes render only what is visible (CodeMirror's
virtualized viewport) and scrolling from top to bottom stays responsive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import RUN_ENDED, run_id_of, upload, wait_run_done

LINES = 50_000


def _chain_module(path: Path, n: int) -> Path:
    body = ["#[version = \"0.0.5\"]", "def @main(%x: Tensor[(1, 16), float32]) {",
            "  %0 = nn.relu(%x) /* layer0 */;"]
    body += [f"  %{i} = {'nn.relu' if i % 2 else 'tanh'}(%{i - 1}) /* layer{i} */;" for i in range(1, n)]
    body.append(f"  %{n - 1}\n}}\n")
    path.write_text("\n".join(body))
    return path


@pytest.mark.slow
def test_fifty_thousand_line_module_is_virtualized(page: Any, server: str, tmp_path: Path,
                                                  artifacts: Path) -> None:
    session = upload(server, _chain_module(tmp_path / "chain50k.relay", LINES))
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("build").uncheck()
    page.get_by_test_id("check-numerics").uncheck()
    page.get_by_test_id("run-button").click()
    events = wait_run_done(server, run_id_of(page), timeout=240)
    finished = [e["data"] for e in events if e["type"] == "pass_finished"]
    chosen = next(p for p in finished if p["changed"] and p["before"] != p["after"])
    page.wait_for_function(RUN_ENDED)
    page.locator(f".pass-row[data-pass-index='{chosen['pass_index']}']").click()
    page.wait_for_function(
        f"document.querySelector('[data-testid=diff-pane]').dataset.right === '{chosen['after']}'",
        timeout=60_000)
    right = page.locator(".cm-editor[data-side='b']")
    right.locator(".cm-line").first.wait_for()
    assert right.locator(".cm-line").count() < 2_000  # rendered lines, not 50,000

    # Scroll top -> bottom in 40 steps; at every step only a window of lines is in the DOM.
    # (The per-step paint times are kept as an artifact; speed is bench_browser's job.)
    steps = page.evaluate("""async () => {
      const scroller = document.querySelector('.cm-mergeView');
      const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const rendered = () => document.querySelectorAll(".cm-editor[data-side='b'] .cm-line").length;
      const out = [];
      for (let i = 1; i <= 40; i++) {
        const t0 = performance.now();
        scroller.scrollTop = (scroller.scrollHeight - scroller.clientHeight) * i / 40;
        await frame();
        out.push({ms: performance.now() - t0, lines: rendered()});
      }
      return out;
    }""")
    (artifacts / "scroll-50k-ms.json").write_text(json.dumps(steps))
    assert max(step["lines"] for step in steps) < 2_000, steps
    last = f"layer{LINES - 1} */"
    # Line heights are estimated until measured: settle at the very bottom, then look.
    found = page.evaluate("""async (needle) => {
      const scroller = document.querySelector('.cm-mergeView');
      const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const lines = () => [...document.querySelectorAll(".cm-editor[data-side='b'] .cm-line")];
      for (let i = 0; i < 20; i++) {
        scroller.scrollTop = scroller.scrollHeight;
        await frame();
        if (lines().some((l) => l.textContent.includes(needle))) return true;
      }
      return false;
    }""", last)
    assert found, f"line {last!r} never rendered at the bottom"
    assert right.locator(".cm-line").count() < 2_000
    page.screenshot(path=str(artifacts / "diff-50k-bottom.png"))
    assert not page.watch.errors
