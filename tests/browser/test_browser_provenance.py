"""Span-linked highlighting: click an expression, see its layers; click a layer, see its
expressions; both panes; markup in layer names stays text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import RUN_ENDED, mlp_with_names, run_id_of, upload, wait_run_done


def _open_changed_pass(page: Any, server: str, model: Path) -> dict[str, Any]:
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("run-button").click()
    events = wait_run_done(server, run_id_of(page))
    page.wait_for_function(RUN_ENDED)
    finished = [e["data"] for e in events if e["type"] == "pass_finished"]
    chosen = next(p for p in finished if p["changed"] and p["before"] != p["after"])
    page.locator(f".pass-row[data-pass-index='{chosen['pass_index']}']").click()
    page.wait_for_function(
        f"document.querySelector('[data-testid=diff-pane]').dataset.right === '{chosen['after']}'")
    return chosen


def _source_map_entry(page: Any, snapshot_id: int, op: str) -> dict[str, Any]:
    snap = page.request.get(f"/api/snapshots/{snapshot_id}").json()["snapshot"]
    return next(e for e in snap["source_map"] if e["op"] == op and e["spans"])


def test_click_expression_highlights_both_panes_and_lists_layers(page: Any, server: str,
                                                                 onnx_model: Any, artifacts: Path) -> None:
    chosen = _open_changed_pass(page, server, onnx_model("mlp"))
    entry = _source_map_entry(page, chosen["after"], "nn.relu")
    right = page.locator(".cm-editor[data-side='b']")
    right.locator(".cm-line").nth(entry["start"][0] - 1).locator("text=nn.relu").first.click()
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]').dataset.highlightsB) > 0")
    assert right.locator(".cm-hl-primary").count() >= 1
    assert "nn.relu" in right.locator(".cm-hl-primary").first.inner_text()
    # The same layer's expression in the before pane is highlighted too.
    left = page.locator(".cm-editor[data-side='a']")
    assert left.locator(".cm-hl-primary, .cm-hl-related").count() >= 1
    layers = page.get_by_test_id("expr-layers").locator("button").all_inner_texts()
    assert layers == entry["spans"]
    linked = page.locator(".layer-list li.linked .layer-name").all_inner_texts()
    assert set(linked) == set(entry["spans"])
    page.get_by_test_id("backtrace").locator("li").first.wait_for()
    assert f"node={entry['node_id']}" in page.url
    page.screenshot(path=str(artifacts / "provenance-expression.png"))

    # Clicking a layer highlights every expression it produced, in both panes.
    other = next(name for name in page.locator(".layer-list .layer-name").all_inner_texts()
                 if name not in entry["spans"] and name.endswith("fc2"))
    page.locator(".layer-list .layer-row", has_text=other).click()
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]').dataset.highlightsA) > 0"
                           " && Number(document.querySelector('[data-testid=diff-pane]').dataset.highlightsB) > 0")
    painted = right.locator(".cm-hl-related").all_inner_texts()
    assert any("nn.dense" in text or "nn.bias_add" in text for text in painted)
    assert right.locator(".cm-hl-primary").count() == 0
    assert page.locator(".layer-list li.active .layer-name").inner_text() == other
    page.screenshot(path=str(artifacts / "provenance-layer.png"))

    # The view survives a reload: same pass, same layer highlighted.
    page.reload()
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]')?.dataset.highlightsB) > 0")
    assert page.locator(".layer-list li.active .layer-name").inner_text() == other
    assert not page.watch.errors


MARKUP = "<img src=x onerror=alert(1)>"


def test_markup_in_layer_names_is_shown_as_text(page: Any, server: str, tmp_path: Path,
                                                 artifacts: Path) -> None:
    names = [f"fc1{MARKUP}", f"act{MARKUP}", "<b>fc2</b>"]
    model = mlp_with_names(tmp_path / "markup.onnx", names)
    page.add_init_script("window.__xss = 0; window.alert = () => { window.__xss += 1; };")
    page.goto("/")
    page.get_by_test_id("file-input").set_input_files(str(model))
    page.wait_for_url("**/s/**")
    wait_run_done(server, run_id_of(page))
    page.wait_for_function(RUN_ENDED)
    shown = page.locator(".layer-list .layer-name").all_inner_texts()
    for name in names:
        assert any(name in text for text in shown), (name, shown)
    assert page.locator("img[src='x']").count() == 0
    assert page.locator(".layer-list b").count() == 0
    page.locator(".pass-row[data-changed='true']").first.click()
    page.locator(".cm-editor[data-side='b'] .cm-line").first.wait_for()
    # The printer may escape the angle brackets in comments; either way the name reads as text.
    assert "img src=x onerror=alert(1)" in page.locator(".cm-editor[data-side='b'] .cm-content").inner_text()
    page.locator(".layer-list .layer-row", has_text=names[0]).click()
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]').dataset.highlightsB) > 0")
    assert page.locator("img[src='x']").count() == 0
    page.wait_for_timeout(300)
    assert page.evaluate("window.__xss") == 0
    assert not page.watch.dialogs
    page.screenshot(path=str(artifacts / "markup-layer-names.png"))
