"""A quantized model in the browser: click a qnn.requantize and see the layers it came from,
hover a per-channel scale for its values, see the dtypes, the numerics in LSBs, and step
through an integer conv kernel's schedule.

The model: a torch conv net quantized by onnxruntime (QOperator, per channel, seeded
calibration; bench/make_explorer_quant_models.py), uploaded as the ONNX file (the importer
reads QLinearConv as qnn.conv2d + qnn.requantize) and, for the schedules, as its qnn Relay
text. relay.build legalizes the qnn ops into integer Relay (qnn.transform.Legalize first in
its pipeline), so the Schedules tab shows the fused integer conv + bias + requantize kernels.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from browser_helpers import run_id_of, upload, wait_run_done
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import make_explorer_quant_models as quant_models

LAYER = "/0/Conv_quant"  # the first QLinearConv (its ReLU folded in by the quantizer)


def _open_run(page: Any, server: str, model: Path) -> list[dict[str, Any]]:
    session = upload(server, model)
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("run-button").click()
    events = wait_run_done(server, run_id_of(page), timeout=120)
    page.wait_for_function("document.querySelector('[data-testid=run-status]').dataset.status === 'finished'")
    assert events[-1]["type"] == "run_finished", events[-1]
    return events


def _typed_qnn(page: Any, snapshot_id: int) -> bool:
    text = page.request.get(f"/api/snapshots/{snapshot_id}?part=text").json()["snapshot"]["text"]
    return "qnn.requantize(" in text and "/* ty=" in text


def _line_of(page: Any, snapshot_id: int, op: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    snap = page.request.get(f"/api/snapshots/{snapshot_id}").json()["snapshot"]
    entry = next(e for e in snap["source_map"] if e["op"] == op and not e.get("ref"))
    on_line = [e for e in snap["source_map"] if e["start"][0] == entry["start"][0]]
    return entry, on_line


def test_requantize_layers_scale_values_dtypes_and_lsb(page: Any, server: str,
                                                       artifacts: Path) -> None:
    events = _open_run(page, server, quant_models.qoperator_onnx())
    finished = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["leaf"]]
    checked = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["numerics"]]
    assert all(p["numerics"]["max_lsb_err"] == 0 for p in checked)
    assert page.locator(".pass-num[data-lsb='0']").count() == len(checked)  # containers too

    # The first pass after which the module is typed and still has its qnn calls (Legalize,
    # first in the build pipeline, lowers them).
    first = next(p for p in finished if _typed_qnn(page, p["after"]))
    page.locator(f".pass-row[data-pass-index='{first['pass_index']}']").click()
    page.wait_for_function(
        f"document.querySelector('[data-testid=diff-pane]').dataset.right === '{first['after']}'")
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.provenance === 'ready'")
    page.get_by_test_id("view-menu").click()
    page.get_by_test_id("view-wrap").check()  # long qnn lines wrap: every operand in view
    page.get_by_test_id("view-menu").click()
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.provenance === 'ready'")
    entry, on_line = _line_of(page, first["after"], "qnn.requantize")
    right = page.locator(".cm-editor[data-side='b']")
    line = right.locator(".cm-line").nth(entry["start"][0] - 1)

    # Click the requantize: its layer is listed, the layer's other expressions lit.
    line.locator("text=qnn.requantize").first.click()
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]').dataset.highlightsB) > 1")
    assert page.get_by_test_id("expr-layers").locator("button").all_inner_texts() == [LAYER]
    related = " ".join(right.locator(".cm-hl-related").all_inner_texts())
    assert "qnn.conv2d" in related
    card = page.get_by_test_id("expr-type")
    assert "Tensor[(1, 8, 12, 12), int8]" in card.get_by_test_id("hover-type").inner_text()
    assert card.locator("[data-dtype='int8']").count() == 1
    page.screenshot(path=str(artifacts / "quant-requantize-provenance.png"))

    # Integer dtypes are marked in the text.
    assert right.locator(".cm-dtype-int8").count() >= 1
    assert right.locator(".cm-dtype-int32").count() >= 1

    # Hover the per-channel input scale: its 8 values, as the quantizer made them.
    scale = next(e for e in on_line if e.get("qparam", {}).get("role") == "input_scale")
    line.locator(".tok-keyword", has_text="meta").first.hover()  # the requantize's 1st operand
    hover = page.locator(".cm-tooltip-hover [data-testid=hover-card]")
    hover.wait_for()
    assert "input_scale" in hover.inner_text()
    shown = np.float32([float(t) for t in hover.get_by_test_id("hover-values").locator("li").all_inner_texts()])
    init = {t.name: numpy_helper.to_array(t)
            for t in onnx.load(str(quant_models.qoperator_onnx())).graph.initializer}
    np.testing.assert_array_equal(shown, init["input_scale"] * init["0.weight_scale"])
    assert shown.tolist() == np.float32(scale["qparam"]["values"]).tolist()
    assert "values=f32[8] " in line.inner_text()
    page.screenshot(path=str(artifacts / "quant-scale-hover.png"))

    # Hovering a call shows its type.
    page.mouse.move(0, 0)
    line.locator("text=qnn.requantize").first.hover()
    page.wait_for_function("document.querySelector('.cm-tooltip-hover [data-testid=hover-card] strong')"
                           "?.textContent === 'qnn.requantize'")
    assert "int8" in hover.get_by_test_id("hover-type").inner_text()

    # Scoped to @main (its text starts after the version line), the hover still finds it.
    page.mouse.move(0, 0)
    page.get_by_test_id("diff-scope").select_option("@main")
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.scope === '@main'")
    scoped = right.locator(".cm-line", has_text="qnn.requantize(").first
    scoped.locator("text=qnn.requantize").first.hover()
    page.wait_for_function("document.querySelector('.cm-tooltip-hover [data-testid=hover-card] strong')"
                           "?.textContent === 'qnn.requantize'")
    assert "int8" in hover.get_by_test_id("hover-type").inner_text()
    assert not page.watch.errors


def test_schedules_tab_steps_through_an_integer_conv_kernel(page: Any, server: str,
                                                            artifacts: Path) -> None:
    _open_run(page, server, quant_models.qnn_relay_file())
    page.get_by_test_id("tab-schedules").click()
    nodes = page.get_by_test_id("schedule-nodes")
    conv = nodes.locator(".sched-node", has_text="nn.conv2d").first
    conv.wait_for()
    assert LAYER in conv.inner_text()
    conv.click()
    label = page.get_by_test_id("step-label")
    label.wait_for()
    assert label.inner_text().startswith("step 0/")
    total = int(label.inner_text().split("/")[1].split()[0])
    assert total >= 3
    # the integer accumulator of the conv (the nest renders after its diff is computed)
    page.wait_for_function("document.querySelector('[data-testid=loop-nest]').textContent.includes('int32')")
    seen = {label.inner_text()}
    for _ in range(3):
        page.get_by_role("button", name="Next step").click()
        page.wait_for_function("(seen) => !seen.includes(document.querySelector('[data-testid=step-label]').textContent)",
                               arg=list(seen))
        seen.add(label.inner_text())
    assert label.inner_text().startswith("step 3/")
    assert page.get_by_test_id("step-python").inner_text()
    page.screenshot(path=str(artifacts / "quant-int-conv-schedule.png"))
    assert not page.watch.errors
