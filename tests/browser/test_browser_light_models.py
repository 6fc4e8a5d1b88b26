"""One of the classic models shipped inside the onnx wheel (IR version 3, unnamed nodes,
initializers that are not graph inputs) through the page: it uploads, the whole build runs
with every span kept after every pass, and the layers are named as the file names them:
the node's name or, where nodes are unnamed, its first output tensor's name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
from browser_helpers import upload, wait_run_done

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def test_squeezenet_layers_are_the_files_node_names(page: Any, server: str) -> None:
    path = LIGHT / "light_squeezenet.onnx"
    graph = onnx.load(str(path)).graph
    convs = [n.name or n.output[0] for n in graph.node if n.op_type == "Conv"]
    expected = set(convs)
    assert len(expected) == 26

    session = upload(server, path)
    page.goto(f"/s/{session['id']}")
    page.get_by_test_id("layer-list").locator(".layer-name").first.wait_for()
    listed = set(page.get_by_test_id("layer-list").locator(".layer-name").all_inner_texts())
    assert expected <= listed, sorted(expected - listed)

    page.get_by_test_id("build").check()
    page.get_by_test_id("run-button").click()
    page.wait_for_url(lambda url: "run=" in url)
    run_id = page.url.split("run=")[1].split("&")[0]
    events = wait_run_done(server, run_id, timeout=300)
    assert events[-1]["type"] == "run_finished", events[-1]
    passes = [e["data"] for e in events if e["type"] == "pass_finished"]
    assert "LowerTE" in {p["name"] for p in passes}
    assert all(p["span_coverage"] == 1.0 for p in passes), [
        (p["name"], p["span_coverage"]) for p in passes if p["span_coverage"] != 1.0]

    # after FuseOps, the conv layer's expressions are highlighted in the fused module
    fuse = next(p for p in passes if p["name"] == "FuseOps" and p["leaf"])
    page.locator(f".pass-row[data-pass-index='{fuse['pass_index']}']").click()
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.right"
                           f" === '{fuse['after']}'")
    page.get_by_test_id("layer-list").get_by_text(convs[0], exact=True).click()
    page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]')"
                           "?.dataset.highlightsB) > 0", timeout=60_000)
