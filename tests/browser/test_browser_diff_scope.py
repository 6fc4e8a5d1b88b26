"""The diff scopes to one function or fused kernel: the toolbar's selector offers the whole
module, @main and each fused primitive kernel; both panes then show only that function (its
lines keep their module line numbers), and the choice holds when another pass is opened
where the kernel still exists. The summary above the diff lists the changes by layer. At
1024x768 the toolbar, selector included, keeps one row and the page does not scroll sideways.
The same holds on a file torch.onnx wrote (torchvision's ResNet-18) at 1024 and 1920 px, and
its layers are listed most changed first."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import editor_text, run_on_page, sized_page, upload
from shared_models import TWO_CONVS_RELAY

KERNEL = "fused:nn.conv2d,nn.relu#1"
TORCH_EXPORTS = Path(__file__).resolve().parents[2] / "bench" / "models" / "torch_export"


def _open_pass(page: Any, session: str, run: str, index: int) -> None:
    page.goto(f"/s/{session}?run={run}&pass={index}")
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]')?.dataset.scopes > 0")


def _scope(page: Any) -> str:
    return page.get_by_test_id("diff-pane").get_attribute("data-scope") or ""


def test_scope_to_a_fused_kernel_survives_switching_passes(browser: Any, server: str,
                                                           tmp_path: Path, artifacts: Path) -> None:
    path = tmp_path / "two_convs.relay"
    path.write_text(TWO_CONVS_RELAY)
    session = upload(server, path)["id"]
    with sized_page(browser, server, 1024, 768) as (page, errors):
        page.goto(f"/s/{session}")
        run, events = run_on_page(page, server, quick=True)
        finished = [e["data"] for e in events if e["type"] == "pass_finished"]
        fuse = next(p for p in finished if p["name"] == "FuseOps")
        later = next(p for p in finished if p["pass_index"] > fuse["pass_index"] and p["changed"])
        _open_pass(page, session, run, fuse["pass_index"])
        options = page.get_by_test_id("diff-scope").locator("option").evaluate_all(
            "(os) => os.map((o) => o.value)")
        assert options[:2] == ["", "@main"] and KERNEL in options, options
        assert len([o for o in options if o.startswith("fused:")]) == 3, options

        page.get_by_test_id("diff-scope").select_option(KERNEL)
        page.wait_for_function(f"document.querySelector('[data-testid=diff-pane]').dataset.scope === '{KERNEL}'"
                               " && !document.querySelector('[data-testid=diff-pane]').dataset.loading")
        after = editor_text(page, "b")
        assert "Primitive=1" in after.splitlines()[0] and "def @main" not in after, after[:300]
        assert after.count("nn.conv2d(") == 1 and "max_pool2d" not in after
        assert editor_text(page, "a").strip() == ""  # before FuseOps there was no such kernel
        first_number = int(page.locator(".cm-editor[data-side='b'] .cm-lineNumbers .cm-gutterElement")
                           .nth(1).inner_text())
        assert first_number > 2  # the kernel's own line number in the module

        # the toolbar keeps one row at 1024 px and nothing scrolls sideways
        _no_sideways_scroll(page)

        # the summary by layer
        page.get_by_test_id("diff-layers-toggle").click()
        layers = page.get_by_test_id("diff-layers").locator(".diff-layer").all_inner_texts()
        assert {"conv1", "relu1", "conv2", "relu2", "pool1"} <= set(layers), layers
        page.screenshot(path=str(artifacts / "diff-scope-fused-1024.png"))

        # another pass where the kernel exists: still scoped, both sides show it
        page.locator(f".pass-row[data-pass-index='{later['pass_index']}']").click()
        page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.left"
                               f" === '{later['before']}'")
        page.wait_for_function("!document.querySelector('[data-testid=diff-pane]').dataset.loading")
        assert _scope(page) == KERNEL
        for side in ("a", "b"):
            text = editor_text(page, side)
            assert "Primitive=1" in text.splitlines()[0] and "def @main" not in text, (side, text[:200])

        # back to the whole module
        page.get_by_test_id("diff-scope").select_option("")
        page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.scope === ''")
        assert "def @main" in editor_text(page, "b")
        assert not errors, errors


def _no_sideways_scroll(page: Any) -> None:
    bar = page.locator(".diff-toolbar").evaluate(
        "(el) => [el.scrollWidth, el.clientWidth, el.getBoundingClientRect().height]")
    assert bar[0] <= bar[1] + 1 and bar[2] < 40, bar
    width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1], width


@pytest.mark.parametrize("size", [(1024, 768), (1920, 1080)], ids=["1024", "1920"])
def test_scope_on_a_torch_onnx_export(browser: Any, server: str, size: tuple[int, int]) -> None:
    pytest.importorskip("torch")
    if importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed")
    from engine.relay.testing.torch_models import Export, cached_export

    path = cached_export(TORCH_EXPORTS, "resnet18", Export("torchscript", 17))
    session = upload(server, path)["id"]
    with sized_page(browser, server, *size, timeout=120_000) as (page, errors):
        page.goto(f"/s/{session}")
        _, events = run_on_page(page, server, quick=True)
        fuse = next(e["data"] for e in events
                    if e["type"] == "pass_finished" and e["data"]["name"] == "FuseOps")
        page.locator(f".pass-row[data-pass-index='{fuse['pass_index']}']").click()
        page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]')"
                               ".dataset.scopes) > 20")
        options = page.get_by_test_id("diff-scope").locator("option").evaluate_all(
            "(os) => os.map((o) => o.value)")
        kernel = next(o for o in options if o.startswith("fused:nn.conv2d"))
        page.get_by_test_id("diff-scope").select_option(kernel)
        page.wait_for_function(f"document.querySelector('[data-testid=diff-pane]').dataset.scope"
                               f" === '{kernel}' && !document.querySelector("
                               "'[data-testid=diff-pane]').dataset.loading")
        first = editor_text(page, "b").splitlines()[0]
        assert "fn (" in first and "Primitive=1" in first, first[:200]
        _no_sideways_scroll(page)
        page.get_by_test_id("diff-layers-toggle").click()
        counts = page.get_by_test_id("diff-layers").locator(".diff-layer-counts").all_inner_texts()
        totals = [sum(int(part[1:]) for part in text.split()) for text in counts]
        assert len(totals) > 20 and totals == sorted(totals, reverse=True), totals
        assert not errors, errors
