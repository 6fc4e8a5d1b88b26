"""The diff pane asks only for what it shows: both texts first, the source maps after, each
snapshot part once; the keyboard selects (Enter) and clears (Escape) an expression."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import RUN_ENDED, run_id_of, upload, wait_run_done


def _finished(page: Any, server: str, model: Path) -> list[dict[str, Any]]:
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("build").uncheck()
    page.get_by_test_id("run-button").click()
    events = wait_run_done(server, run_id_of(page))
    page.wait_for_function(RUN_ENDED)
    return [e["data"] for e in events if e["type"] == "pass_finished"]


def _show(page: Any, p: dict[str, Any]) -> None:
    page.locator(f".pass-row[data-pass-index='{p['pass_index']}']").click()
    page.wait_for_function(
        "(() => { const d = document.querySelector('[data-testid=diff-pane]').dataset; "
        f"return d.right === '{p['after']}' && d.provenance === 'ready'; }})()")


def test_texts_first_then_source_maps_each_part_once(page: Any, server: str,
                                                      onnx_model: Any) -> None:
    finished = _finished(page, server, onnx_model("mlp"))
    changed = [p for p in finished if p["changed"] and p["before"] != p["after"]
               and p["pass_index"] not in {q["parent_index"] for q in finished}]
    assert len(changed) >= 2
    asked: list[str] = []
    page.on("request", lambda r: "/api/snapshots/" in r.url and asked.append(r.url.split("/api/")[1]))
    first, second = changed[0], changed[1]
    _show(page, first)
    ids = {first["before"], first["after"]}
    texts = [f"snapshots/{i}?part=text" for i in ids]
    maps = [f"snapshots/{i}?part=source_map" for i in ids]
    assert sorted(asked) == sorted(texts + maps)  # never the whole snapshot in one body
    assert max(asked.index(t) for t in texts) < min(asked.index(m) for m in maps)

    _show(page, second)
    _show(page, first)  # back: everything is cached
    again = [u for u in asked[len(texts + maps):] if int(u.split("/")[1].split("?")[0]) in ids]
    assert again == []
    assert len(asked) == len(set(asked))

    # The parts are the stored snapshot, split.
    whole = page.request.get(f"/api/snapshots/{first['after']}").json()["snapshot"]
    text = page.request.get(f"/api/snapshots/{first['after']}?part=text").json()["snapshot"]
    smap = page.request.get(f"/api/snapshots/{first['after']}?part=source_map").json()["snapshot"]
    assert text == {"id": first["after"], "text": whole["text"]}
    assert smap == {"id": first["after"], "source_map": whole["source_map"]}
    assert page.request.get(f"/api/snapshots/{first['after']}?part=nope").status == 400
    assert not page.watch.errors


def test_enter_selects_and_escape_clears_the_expression(page: Any, server: str,
                                                        onnx_model: Any, artifacts: Path) -> None:
    finished = _finished(page, server, onnx_model("mlp"))
    chosen = next(p for p in finished if p["changed"] and p["before"] != p["after"])
    _show(page, chosen)
    snap = page.request.get(f"/api/snapshots/{chosen['after']}?part=source_map").json()["snapshot"]
    entry = next(e for e in snap["source_map"] if e["op"] == "nn.relu" and not e.get("ref"))
    right = page.locator(".cm-editor[data-side='b']")
    # Put the cursor on the expression with the keyboard only, then Enter.
    right.locator(".cm-content").focus()
    page.keyboard.press("Control+Home")
    for _ in range(entry["start"][0] - 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Home")
    for _ in range(entry["start"][1] + 1):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    node = page.get_by_test_id("expr-node")
    node.wait_for()
    assert node.inner_text() == f"%{entry['node_id']}"  # node %, pass #, snapshot @
    assert page.get_by_test_id("expr-layers").locator("button").all_inner_texts() == entry["spans"]
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]').dataset.highlightsB) > 0")
    assert f"node={entry['node_id']}" in page.url

    page.keyboard.press("Escape")
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.highlightsB === '0'")
    assert page.get_by_test_id("expr-node").count() == 0
    assert page.locator(".layer-list li.linked").count() == 0
    assert "node=" not in page.url
    # j / k still step through the passes from the (read-only) editor.
    page.keyboard.press("j")
    page.wait_for_function(f"!new URLSearchParams(location.search).get('pass')"
                           f"?.match(/^{chosen['pass_index']}$/)")
    assert not page.watch.errors
