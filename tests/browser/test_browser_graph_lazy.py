"""The Graph view on a chain big enough to come lazy (over explorer.graphserve.LAZY_NODES):
the first answer holds the nodes of the groups open by default only; expanding a group
fetches its members; search finds a node inside a closed group and opens it; clicking a
line of the text whose node sits inside a closed group reveals and selects it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_helpers import api_get, run_on_page, sized_page, upload
from shared_models import chain_relay_text

from explorer.graphserve import LAZY_NODES

PANE = "document.querySelector('[data-testid=graph-pane]')"
VIEW = "document.querySelector('[data-testid=graph-canvas-b]').graphView"
OPS = LAZY_NODES + 200


@pytest.fixture(scope="module")
def chain(browser: Any, server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The chain run once (no build, no numerics check): its FuseOps pass and its lazy graph."""
    path = tmp_path_factory.mktemp("lazy") / f"chain_{OPS}.relay"
    path.write_text(chain_relay_text(OPS))
    session = upload(server, path)
    with sized_page(browser, server, 1600, 1000, timeout=300_000) as (page, _):
        page.goto(f"/s/{session['id']}")
        run_id, events = run_on_page(page, server, quick=True)
    leaves = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["leaf"]]
    k = next(i for i, p in enumerate(leaves) if p["name"] == "FuseOps" and p["changed"])
    graph = api_get(server, f"/api/snapshots/{leaves[k]['after']}/graph")
    yield {"session": session["id"], "run": run_id, "fuse": leaves[k], "next": leaves[k + 1], "graph": graph}


def _open(page: Any, chain: dict[str, Any]) -> None:
    fuse = chain["fuse"]
    page.goto(f"/s/{chain['session']}?run={chain['run']}&pass={fuse['pass_index']}&graph=1")
    page.wait_for_function(f"{PANE}?.dataset.state === 'ready' && {PANE}.dataset.snapshot === '{fuse['after']}'"
                           f" && {PANE}.dataset.diff === 'ready'")
    page.wait_for_function("document.querySelector('[data-testid=diff-pane]').dataset.provenance === 'ready'")


def _keys(page: Any) -> list[str]:
    return page.evaluate(f"() => {VIEW}.layout.items.map((i) => i.key)")


def _closed_node(chain: dict[str, Any], nth: int) -> dict[str, Any]:
    """The nth node (from the end) of a group the first answer did not load, as
    {id, group, line}: its line read from the members endpoint."""
    graph = chain["graph"]
    holders = graph["holders"]
    closed = [(i, g) for i, g in zip(holders["ids"], holders["groups"], strict=True)
              if g >= 0 and not graph["groups"][g]["loaded"] and holders["flags"][holders["ids"].index(i)] == 0]
    node_id, group = closed[-nth]
    members = api_get(chain["server"], f"/api/snapshots/{chain['fuse']['after']}/graph/members?groups={group}")
    node = next(n for n in members["nodes"] if n["id"] == node_id)
    return {"id": node_id, "group": group, "line": node["line"], "span": node["spans"][0]}


def _fetches(page: Any) -> int:
    return int(page.evaluate(f"{PANE}.dataset.fetches ?? 0"))


def test_the_first_answer_is_lazy(chain: dict[str, Any]) -> None:
    graph = chain["graph"]
    assert graph["lazy"] is True and len(graph["holders"]["ids"]) > LAZY_NODES
    assert len(graph["nodes"]) < 200 and any(not g["loaded"] for g in graph["groups"])


def test_expanding_a_group_fetches_its_members(browser: Any, server: str, chain: dict[str, Any]) -> None:
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, chain)
        assert _fetches(page) == 0  # what opens by default came with the graph
        groups = chain["graph"]["groups"]
        items = page.evaluate(f"() => {VIEW}.layout.items.filter((i) => i.box.kind === 'group' && !i.box.expanded).map((i) => i.box.group)")
        closed = next(g for g in items if not groups[g]["loaded"] and groups[g]["own"] > 0)
        key = f"g{closed}"
        page.evaluate(f"(key) => {VIEW}.centre(key)", key)
        page.wait_for_function(f"(key) => {VIEW}.screenBox(key)?.w > 20", arg=key)
        box = page.evaluate(f"(key) => {VIEW}.screenBox(key)", key)
        toggles = int(page.evaluate(f"{PANE}.dataset.toggles ?? 0"))
        page.mouse.dblclick(box["x"] + min(30, box["w"] / 3), box["y"] + box["header"] / 2)
        page.wait_for_function(f"{PANE}.dataset.toggles === '{toggles + 1}'")
        assert _fetches(page) == 1
        members = api_get(server, f"/api/snapshots/{chain['fuse']['after']}/graph/members?groups={closed}")["nodes"]
        shown = set(_keys(page))
        assert members and all(f"n{n['id']}" in shown for n in members if n["kind"] != "constant")
        # edges reach the members: the first member is fed from outside the group
        edges = page.evaluate(f"() => {VIEW}.layout.edges.map((e) => [e.from, e.to])")
        assert any(to == f"n{members[0]['id']}" for _, to in edges), edges[:20]
        assert not errors


def test_search_opens_a_closed_group(browser: Any, server: str, chain: dict[str, Any]) -> None:
    chain["server"] = server
    target = _closed_node(chain, 1)
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, chain)
        assert f"n{target['id']}" not in _keys(page)
        page.get_by_test_id("graph-search").fill(target["span"])
        page.get_by_test_id("graph-search").press("Enter")
        page.wait_for_function(f"{PANE}.dataset.selectedKey === 'n{target['id']}'")
        assert f"n{target['id']}" in _keys(page) and _fetches(page) >= 1
        assert page.get_by_test_id("expr-node").text_content() == f"%{target['id']}"
        # the next pass's graph (lazy too) opens the groups down to the same node
        after = chain["next"]["after"]
        page.get_by_test_id("pass-list").locator(f".pass-row[data-pass-index='{chain['next']['pass_index']}']").click()
        page.wait_for_function(f"{PANE}.dataset.state === 'ready' && {PANE}.dataset.snapshot === '{after}'")
        page.wait_for_function(f"{PANE}.dataset.selectedKey === 'n{target['id']}'")
        assert f"n{target['id']}" in _keys(page)
        assert not errors


def test_clicking_a_text_line_reveals_a_node_in_a_closed_group(browser: Any, server: str, chain: dict[str, Any]) -> None:
    chain["server"] = server
    target = _closed_node(chain, 7)
    with sized_page(browser, server, 1600, 1000) as (page, errors):
        _open(page, chain)
        assert f"n{target['id']}" not in _keys(page)
        # scroll the text to the node's line (the editor draws only the lines in view)
        page.evaluate("""(line) => {
          const first = document.querySelector(".cm-editor[data-side='b'] .cm-line");
          let s = first.parentElement;
          while (s && !(s.scrollHeight > s.clientHeight + 10 && /auto|scroll/.test(getComputedStyle(s).overflowY))) s = s.parentElement;
          s.scrollTop = Math.max(0, line * first.getBoundingClientRect().height - s.clientHeight / 2); }""", target["line"])
        line = page.locator(".cm-editor[data-side='b'] .cm-line", has_text=f"/* {target['span']} */")
        line.wait_for()
        # click the operator's name (the binding `%5257 = ` is not the call's text)
        at = line.evaluate("""(el) => { const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          for (let t = walker.nextNode(); t; t = walker.nextNode()) {
            const k = t.textContent.search(/tanh|relu/);
            if (k < 0) continue;
            const r = document.createRange(); r.setStart(t, k); r.setEnd(t, k + 3);
            const b = r.getBoundingClientRect(); return b.x + b.width / 2 - el.getBoundingClientRect().x;
          } return null; }""")
        # the editor measures the lines scrolled to on the first click (they move under the
        # pointer: a drag, no pick), so the line is clicked once more where it settled
        line.click(position={"x": at, "y": 6})
        page.wait_for_function("""(text) => document.querySelector(".cm-editor[data-side='b'] .cm-activeLine")?.textContent.includes(text)""",
                               arg=f"/* {target['span']} */")
        line.click(position={"x": at, "y": 6})
        page.wait_for_function(f"{PANE}.dataset.selectedKey === 'n{target['id']}'")
        assert page.get_by_test_id("expr-node").text_content() == f"%{target['id']}"
        assert f"n{target['id']}" in _keys(page) and _fetches(page) >= 1
        assert not errors
