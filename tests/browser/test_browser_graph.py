"""The Graph view on ResNet-50 after FuseOps: the fused functions are groups; clicking one
selects the same expression in the text (and the provenance panel); clicking a line of the
text centres the graph on its node; the pass's created nodes are coloured. Search, expand
and collapse, PNG and SVG export, the selection kept when another pass is shown, side by
side before | after, and the page at 1024 and 1920 px with the graph shown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_helpers import api_get, run_on_page, sized_page, upload

PANE = "document.querySelector('[data-testid=graph-pane]')"
VIEW = "document.querySelector('[data-testid=graph-canvas-{side}]').graphView"


@pytest.fixture(scope="module")
def resnet(browser: Any, server: str, onnx_model: Any) -> Iterator[dict[str, Any]]:
    """ResNet-50 run once (O3, no build, no numerics check): its FuseOps pass and the next."""
    session = upload(server, onnx_model("resnet50"))
    with sized_page(browser, server, 1600, 1000, timeout=120_000) as (page, _):
        page.goto(f"/s/{session['id']}")
        run_id, events = run_on_page(page, server, quick=True)
    leaves = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["leaf"]]
    k = next(i for i, p in enumerate(leaves) if p["name"] == "FuseOps" and p["changed"])
    yield {"session": session["id"], "run": run_id, "fuse": leaves[k], "next": leaves[k + 1]}


def _open(page: Any, resnet: dict[str, Any], pass_data: dict[str, Any]) -> None:
    page.goto(f"/s/{resnet['session']}?run={resnet['run']}&pass={pass_data['pass_index']}&graph=1")
    _wait_graph(page, pass_data["after"])


def _wait_graph(page: Any, snapshot: int) -> None:
    page.wait_for_function(f"{PANE}?.dataset.state === 'ready' && {PANE}.dataset.snapshot === '{snapshot}'"
                           f" && {PANE}.dataset.diff === 'ready'")
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.provenance === 'ready'")


def _items(page: Any, side: str = "b") -> list[dict[str, Any]]:
    return page.evaluate(f"""() => {VIEW.format(side=side)}.layout.items.map((i) => ({{key: i.key,
      kind: i.box.kind, sub: i.box.sub, expanded: i.box.expanded, id: i.box.id, label: i.box.label}}))""")


def _screen_box(page: Any, key: str, side: str = "b") -> dict[str, float]:
    page.evaluate(f"(key) => {VIEW.format(side=side)}.centre(key)", key)
    page.wait_for_function(f"(key) => {{ const b = {VIEW.format(side=side)}.screenBox(key); return b && b.w > 20; }}", arg=key)
    return page.evaluate(f"(key) => {VIEW.format(side=side)}.screenBox(key)", key)


def _click_box(page: Any, key: str, dbl: bool = False) -> None:
    box = _screen_box(page, key)
    x, y = box["x"] + min(30, box["w"] / 3), box["y"] + box["header"] / 2
    (page.mouse.dblclick if dbl else page.mouse.click)(x, y)


def _selected_key(page: Any) -> str:
    return page.evaluate(f"{PANE}.dataset.selectedKey")


def test_fused_functions_are_groups_and_select_the_text(browser: Any, server: str, resnet: dict[str, Any]) -> None:
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, resnet, resnet["fuse"])
        fused = [i for i in _items(page) if i["kind"] == "group" and i["sub"].startswith("fused function")]
        assert len(fused) >= 5, _items(page)
        conv = next(i for i in fused if i["label"].startswith("fn conv2d"))
        _click_box(page, conv["key"])
        # the text selects the same expression: the function's definition
        page.wait_for_function("Number(document.querySelector('[data-testid=diff-pane]').dataset.highlightsB) > 0")
        primary = page.locator(".cm-editor[data-side='b'] .cm-hl-primary").first.text_content()
        assert " = fn (" in primary, primary
        assert page.get_by_test_id("expr-node").text_content() == f"%{conv['id']}"
        assert _selected_key(page) == conv["key"]
        assert not errors


def test_clicking_the_text_centres_the_graph(browser: Any, server: str, resnet: dict[str, Any]) -> None:
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, resnet, resnet["fuse"])
        graph = api_get(server, f"/api/snapshots/{resnet['fuse']['after']}/graph")
        convs = {n["id"] for n in graph["nodes"] if n["op"] == "nn.conv2d"}
        # a conv2d inside a fused function, its group collapsed or not
        line = page.locator(".cm-editor[data-side='b'] .cm-line", has_text="= nn.conv2d(").nth(2)
        line.click(position={"x": 70, "y": 6})
        page.get_by_test_id("expr-node").wait_for()
        node = int(page.get_by_test_id("expr-node").text_content().lstrip("%"))
        assert node in convs
        key = f"n{node}"
        page.wait_for_function(f"{PANE}.dataset.selectedKey === '{key}'")
        page.wait_for_function(f"""() => {{
          const v = {VIEW.format(side='b')}; const b = v.screenBox('{key}');
          const r = v.canvas.getBoundingClientRect();
          return b && Math.abs(b.x + b.w / 2 - (r.left + r.width / 2)) < 4 && Math.abs(b.y + b.h / 2 - (r.top + r.height / 2)) < 4;
        }}""")
        assert not errors


def test_created_nodes_are_coloured(browser: Any, server: str, resnet: dict[str, Any]) -> None:
    fuse = resnet["fuse"]
    diff = api_get(server, f"/api/diff?a={fuse['before']}&b={fuse['after']}&part=nodes")
    created = set(diff["nodes"]["added"]) - set(diff["nodes"]["rewritten"])
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, resnet, fuse)
        assert int(page.evaluate(f"{PANE}.dataset.created")) > 0
        marks = page.evaluate(f"[...{VIEW.format(side='b')}.marks.status.entries()]")
        coloured = {key for key, status in marks if status == "created" and key.startswith("n")}
        assert coloured and all(int(key[1:]) in created for key in coloured), coloured
        # the next pass (InferType) creates nothing: nothing coloured
        page.get_by_test_id("pass-list").locator(f".pass-row[data-pass-index='{resnet['next']['pass_index']}']").click()
        _wait_graph(page, resnet["next"]["after"])
        statuses = page.evaluate(f"[...{VIEW.format(side='b')}.marks.status.values()]")
        assert "created" not in statuses
        assert not errors


def test_search_expand_collapse_and_export(browser: Any, server: str, resnet: dict[str, Any], tmp_path: Any) -> None:
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, resnet, resnet["fuse"])
        opening = len(_items(page))
        page.get_by_test_id("graph-search").fill("max_pool2d")
        page.get_by_test_id("graph-search").press("Enter")
        page.wait_for_function("document.querySelector('[data-testid=graph-hits]').textContent.includes('/')")
        key = _selected_key(page)
        assert key.startswith("n") and page.get_by_test_id("expr-node").text_content() == f"%{key[1:]}"
        assert "max_pool2d" in next(i["label"] for i in _items(page) if i["key"] == key)

        page.get_by_test_id("graph-collapse").click()
        page.wait_for_function(f"{VIEW.format(side='b')}.layout.items.length === {opening}")
        group = next(i for i in _items(page) if i["kind"] == "group" and not i["expanded"])
        toggles = int(page.evaluate(f"{PANE}.dataset.toggles ?? 0"))
        _click_box(page, group["key"], dbl=True)
        page.wait_for_function(f"{PANE}.dataset.toggles === '{toggles + 1}'")
        assert len(_items(page)) > opening
        assert next(i for i in _items(page) if i["key"] == group["key"])["expanded"]
        _click_box(page, group["key"], dbl=True)
        page.wait_for_function(f"{PANE}.dataset.toggles === '{toggles + 2}'")
        assert len(_items(page)) == opening

        with page.expect_download() as svg:
            page.get_by_test_id("graph-svg").click()
        text = svg.value.path().read_text()
        assert text.startswith("<svg") and "fn conv2d" in text and text.rstrip().endswith("</svg>")
        with page.expect_download() as png:
            page.get_by_test_id("graph-png").click()
        assert png.value.path().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert not errors


def test_selection_survives_switching_passes(browser: Any, server: str, resnet: dict[str, Any]) -> None:
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, resnet, resnet["fuse"])
        page.get_by_test_id("graph-search").fill("nn.dense")
        page.get_by_test_id("graph-search").press("Enter")
        page.wait_for_function(f"{PANE}.dataset.selectedKey.startsWith('n')")
        key = _selected_key(page)
        page.get_by_test_id("pass-list").locator(f".pass-row[data-pass-index='{resnet['next']['pass_index']}']").click()
        _wait_graph(page, resnet["next"]["after"])
        page.wait_for_function(f"{PANE}.dataset.selectedKey === '{key}'")
        assert page.get_by_test_id("expr-node").text_content() == f"%{key[1:]}"

        # side by side: before | after, the same node selected in both where it exists
        page.get_by_test_id("graph-side-by-side").check()
        page.wait_for_function(f"{PANE}.dataset.state === 'ready' && !!document.querySelector('[data-testid=graph-canvas-a]')")
        page.wait_for_function(f"{VIEW.format(side='a')}.marks.selected === '{key}'")
        assert not errors


@pytest.mark.parametrize("width,height", [(1024, 768), (1920, 1080)])
def test_page_fits_with_the_graph(browser: Any, server: str, resnet: dict[str, Any], width: int, height: int) -> None:
    with sized_page(browser, server, width, height) as (page, errors):
        _open(page, resnet, resnet["fuse"])
        sizes = page.evaluate("""() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]""")
        assert sizes[0] <= sizes[1], sizes
        for testid in ("graph-pane", "diff-pane"):
            box = page.get_by_test_id(testid).bounding_box()
            assert box["width"] >= width * 0.4 and box["height"] >= 120, (testid, box)
            assert box["x"] + box["width"] <= width + 1 and box["y"] < height, (testid, box)
        assert page.locator(".cm-editor[data-side='b'] .cm-line").first.is_visible()
        assert not errors
