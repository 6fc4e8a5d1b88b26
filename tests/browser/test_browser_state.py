"""State that follows the user: a pass selected while it runs shows its diff once it has
finished; "initial -> final" compares with the final module; the Model tab's runs table
follows new runs; unticked passes stay listed and can be ticked again; an Export button
beside the run; passes, snapshots and nodes labelled apart (#, @, %)."""

from __future__ import annotations

from typing import Any

from browser_helpers import api_get, run_on_page, start_held_run, upload, wait_run_done

DIFF = "document.querySelector('[data-testid=diff-pane]')"


def test_running_pass_shows_its_diff_when_it_finishes(page: Any, server: str, onnx_model: Any,
                                                      pipeline_gate: Any) -> None:
    run_id = start_held_run(page, server, onnx_model("mlp"), pipeline_gate)
    running = page.locator(".pass-row[data-state='running']").filter(has_text="BrowserTestGate")
    running.click()  # (a running pass has no snapshot after it yet)
    index = running.get_attribute("data-pass-index")
    page.wait_for_function(f"new URLSearchParams(location.search).get('pass') === '{index}'")
    pipeline_gate.release()
    events = wait_run_done(server, run_id)
    gate = next(e["data"] for e in events if e["type"] == "pass_finished"
                and e["data"]["name"] == "BrowserTestGate")
    page.wait_for_function(f"{DIFF}.dataset.right === '{gate['after']}'")
    assert page.locator(".diff-caption[data-side='b']").inner_text().endswith(f"(@{gate['after']})")
    assert not page.watch.errors


def test_whole_pipeline_runs_table_export_and_labels(page: Any, server: str,
                                                     onnx_model: Any) -> None:
    session = upload(server, onnx_model("mlp"))
    page.goto(f"/s/{session['id']}")
    first, _ = run_on_page(page, server, quick=True)
    final = api_get(server, f"/api/runs/{first}")["run"]["final_snapshot"]
    page.get_by_test_id("compare-whole").click()
    page.wait_for_function(f"{DIFF}.dataset.right !== undefined")
    assert page.get_by_test_id("diff-pane").get_attribute("data-right") == str(final)
    assert page.locator(".diff-caption[data-side='b']").inner_text().startswith(f"@{final} ")

    # export beside the run: the run's JSON
    export = page.get_by_test_id("export-run")
    assert export.get_attribute("href") == f"/api/runs/{first}/export"
    assert page.request.get(export.get_attribute("href")).json()["run"]["id"] == first

    # a second run: the Model tab's runs table lists both without a reload
    second, _ = run_on_page(page, server, quick=True)
    assert second != first
    page.get_by_test_id("tab-model").click()
    table = page.get_by_test_id("runs-table")
    page.wait_for_function("document.querySelectorAll('[data-testid=runs-table] tbody tr').length === 2")
    assert {first, second} <= set(table.locator("button.link").all_inner_texts())
    assert export.get_attribute("href") == f"/api/runs/{second}/export"
    assert not page.watch.errors


def test_unticked_passes_stay_listed_and_reversible(page: Any, server: str,
                                                    onnx_model: Any) -> None:
    session = upload(server, onnx_model("mlp"))
    page.goto(f"/s/{session['id']}")
    page.locator("summary", has_text="Passes").click()
    toggles = page.get_by_test_id("pass-toggles")
    dce = toggles.locator("input[data-pass='DeadCodeElimination']")
    dce.first.wait_for(state="attached")  # the list is fetched after the page loads
    assert dce.count() == 1  # registered passes are offered, not only the ones a run used
    box = toggles.locator("input[data-pass='SimplifyExpr']")
    box.uncheck()
    assert "1 off" in page.locator(".options-more summary").inner_text()
    run_id, events = run_on_page(page, server, quick=True)
    assert api_get(server, f"/api/runs/{run_id}")["run"]["options"]["disabled_pass"] == ["SimplifyExpr"]
    assert "SimplifyExpr" not in {e["data"]["name"] for e in events if e["type"] == "pass_finished"}
    page.reload()
    page.locator("summary", has_text="Passes").click()
    box = page.get_by_test_id("pass-toggles").locator("input[data-pass='SimplifyExpr']")
    box.first.wait_for(state="attached")  # the list is fetched after the page loads
    assert box.count() == 1 and not box.is_checked()  # still listed, still the user's choice
    page.get_by_test_id("enable-all-passes").click()
    assert box.is_checked()
    assert "off" not in page.locator(".options-more summary").inner_text()
    run_id, events = run_on_page(page, server, quick=True)
    assert api_get(server, f"/api/runs/{run_id}")["run"]["options"]["disabled_pass"] == []
    assert "SimplifyExpr" in {e["data"]["name"] for e in events if e["type"] == "pass_finished"}
    assert not page.watch.errors


def test_an_upload_error_is_a_sentence_with_a_caret_block(page: Any, tmp_path: Any) -> None:
    bad = tmp_path / "broken.relay"
    bad.write_text('def @main(%x: Tensor[(1, 4), float32]) {\n  %0 = add(%x, 1f;\n  %0\n}\n')
    page.goto("/")
    page.get_by_test_id("file-input").set_input_files(str(bad))
    detail = page.get_by_test_id("error-detail")
    detail.wait_for()
    status = page.get_by_test_id("upload-status").inner_text()
    assert "broken.relay:2:" in status and "{" not in status  # no raw JSON
    lines = detail.inner_text().split("\n")
    assert "%0 = add(%x, 1f;" in lines[0] and lines[1].strip() == "^"
    # the caret stands under the column the message names
    column = int(status.split("broken.relay:2:")[1].split(":")[0])
    assert lines[1].index("^") >= column - 1
