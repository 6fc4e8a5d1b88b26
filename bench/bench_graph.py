#!/usr/bin/env python3
"""Browser: the Graph view's first render, expand/collapse and pan/zoom, in Chromium.

    .venv/bin/python bench/bench_graph.py [--models resnet50 bert12 chain_50000] [--repeat 3]
        [--server http://127.0.0.1:5000] [--no-write]

Against the real server (werkzeug on 127.0.0.1, a temporary data folder) with Playwright
driving Debian's /usr/bin/chromium. Each model (bench/models, `make_models.py`) is uploaded
and run (no build, no numerics); the page opens with the graph shown on the first pass, then:
- first render: from the click on FuseOps in the pass list until the graph pane shows its
  snapshot laid out and drawn (two animation frames later): the first time (the server builds
  the graph) and the median of re-selections alternating with the pass after it (cached);
- expand/collapse: double-click a collapsed group, until it is laid out again and drawn
  (latency, median), and the animation-frame intervals meanwhile (the page stays responsive
  while the worker lays out: the longest frame);
- pan/zoom: 60 drags and 60 wheel steps, the animation-frame intervals (median, p95, max) and
  the canvas draw time per frame (median, max).
Timestamps are taken in the page (performance.now()). Skips cleanly without chromium.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import urllib.request
from contextlib import nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import ROOT, NotAvailable, Row, median_of, report
from bench_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    check_available,
    live_server,
    run_in_page,
    timed_click,
    upload_text,
)
from trace_summary import TRACE_CATEGORIES, long_tasks

MODELS = ("resnet50", "bert12", "chain_50000")
COLUMNS = ("model", "nodes", "boxes", "first render ms", "render ms (median)",
           "expand/collapse ms (median)", "longest frame while expanding ms",
           "pan/zoom frame ms (median / p95 / max)", "draw ms (median / max)")
PANE = "document.querySelector('[data-testid=graph-pane]')"
VIEW = "document.querySelector('[data-testid=graph-canvas-b]').graphView"

# Records requestAnimationFrame intervals until window.__frames.stop() is called.
_FRAMES_JS = """() => {
  const gaps = []; let last = performance.now(); let on = true;
  const tick = (t) => { gaps.push(t - last); last = t; if (on) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  window.__frames = { stop: () => { on = false; return gaps.slice(1); } };
}"""


def graph_ready(snapshot: int) -> str:
    return (f"(() => {{ const p = {PANE}; return p && p.dataset.state === 'ready' "
            f"&& p.dataset.snapshot === '{snapshot}'; }})()")


def print_long_tasks(raw: bytes, what: str) -> None:
    for task in long_tasks(raw):
        print(f"bench_graph: long task {task['ms']} ms {what}:")
        for name, ms in task["parts"]:
            print(f"    {ms:8.1f} ms  {name}")


def first_render(page: Any, fuse: dict[str, Any], other: dict[str, Any], repeat: int,
                 trace: Any = None) -> list[float]:
    """`trace`: the browser, to trace the first render (see expand_collapse)."""
    times = []
    for k in range(2 * repeat + 1):
        chosen = fuse if k % 2 == 0 else other
        if trace is not None and k == 0:
            trace.start_tracing(page=page, categories=TRACE_CATEGORIES)
        # the name: the row's left edge holds other controls (breakpoints)
        row = page.locator(f".pass-row[data-pass-index='{chosen['pass_index']}'] .pass-name")
        row.scroll_into_view_if_needed()
        try:
            ms = timed_click(page, row, graph_ready(chosen["after"]))
        except Exception as err:
            shown = page.evaluate(f"() => [Object.assign({{}}, {PANE}.dataset), {PANE}.textContent.slice(0, 300)]")
            raise NotAvailable(f"the graph of snapshot {chosen['after']} never showed: {shown}") from err
        if trace is not None and k == 0:
            print_long_tasks(trace.stop_tracing(), "during the first render")
        if chosen is fuse:
            times.append(ms)
            print(f"bench_graph: first render {ms:.0f} ms, of which the graph's answer "
                  f"{page.evaluate(f'{PANE}.dataset.fetchMs')} ms, laid out in "
                  f"{page.evaluate(f'{PANE}.dataset.layoutMs')} ms (members of opened groups "
                  f"{page.evaluate(f'{PANE}.dataset.membersMs')} ms; load {os.getloadavg()[0]:.1f}); "
                  f"the page's own work: models {page.evaluate(f'{PANE}.dataset.modelMs')} ms, "
                  f"colouring the diff {page.evaluate(f'{PANE}.dataset.diffMarkMs')} ms")
    return times


def expand_collapse(page: Any, repeat: int, trace: Any = None) -> tuple[list[float], float]:
    """`trace`: the browser, to record a Chromium performance trace meanwhile and print what
    each main-thread task over 50 ms spent its time on (bench/trace_summary.py)."""
    latencies, longest = [], 0.0
    if trace is not None:
        trace.start_tracing(page=page, categories=TRACE_CATEGORIES)
    for _ in range(repeat):
        for _action in ("expand", "collapse"):
            key = page.evaluate(f"""() => {{ const v = {VIEW};
              const g = v.layout.items.filter((i) => i.box.kind === 'group' && !i.box.expanded)
                .sort((a, b) => b.box.members - a.box.members)[0]; return g ? g.key : null; }}""")
            if key is None:
                raise NotAvailable("no collapsed group to expand")
            if _action == "collapse":
                key = page.evaluate(f"() => {PANE}.dataset.lastExpanded")
            page.evaluate(f"(key) => {VIEW}.centre(key)", key)
            page.wait_for_timeout(50)
            box = page.evaluate(f"(key) => {VIEW}.screenBox(key)", key)
            # an expanded group can be wider than the pane: its header's visible part
            left = page.evaluate(f"{VIEW}.canvas.getBoundingClientRect().left")
            box["x"] = max(box["x"], left)
            toggles = int(page.evaluate(f"{PANE}.dataset.toggles ?? 0"))
            page.evaluate(f"(key) => {{ {PANE}.dataset.lastExpanded = key; }}", key)
            page.evaluate(_FRAMES_JS)
            t0 = page.evaluate("performance.now()")
            page.mouse.dblclick(box["x"] + 12, box["y"] + 8)
            try:
                page.wait_for_function(f"{PANE}.dataset.toggles === '{toggles + 1}'", timeout=120_000)
            except Exception as err:
                seen = page.evaluate(f"([key, x, y]) => [{VIEW}.screenBox(key), {PANE}.dataset.toggles,"
                                     " document.elementFromPoint(x, y)?.outerHTML.slice(0, 200)]",
                                     [key, box["x"] + 12, box["y"] + 8])
                raise NotAvailable(f"double-clicking {key} at {box} did not {_action} it: {seen}") from err
            page.wait_for_function("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
            latencies.append(page.evaluate("performance.now()") - t0)
            gaps = page.evaluate("window.__frames.stop()")
            longest = max([longest, *gaps])
    if trace is not None:
        print_long_tasks(trace.stop_tracing(), "while expanding/collapsing")
    return latencies, longest


def pan_zoom(page: Any, trace: Any = None) -> tuple[list[float], list[float]]:
    """`trace`: the browser, to trace the pan and zoom (see expand_collapse)."""
    canvas = page.get_by_test_id("graph-canvas-b").bounding_box()
    cx, cy = canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2
    page.evaluate(f"{VIEW}.frameMs.length = 0")
    if trace is not None:
        trace.start_tracing(page=page, categories=TRACE_CATEGORIES)
    page.evaluate(_FRAMES_JS)
    page.mouse.move(cx, cy)
    page.mouse.down()
    for k in range(60):
        page.mouse.move(cx + 8 * ((k % 30) - 15), cy + 3 * ((k % 20) - 10))
    page.mouse.up()
    for k in range(60):
        page.mouse.wheel(0, -60 if k < 30 else 60)
    gaps = page.evaluate("window.__frames.stop()")
    draws = page.evaluate(f"{VIEW}.frameMs.slice()")
    if trace is not None:
        print_long_tasks(trace.stop_tracing(), "while panning and zooming")
    return gaps, draws


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))] if values else float("nan")


def finished_run(base: str, name: str) -> tuple[str, str, list[dict[str, Any]]] | None:
    """A session of `name` on the server with a finished run: (session, run, its passes)."""
    for session in api_get(base, "/api/sessions")["sessions"]:
        if session["name"] != f"{name}.onnx":
            continue
        for run in api_get(base, f"/api/sessions/{session['id']}")["runs"]:
            if run["status"] == "finished":
                events = api_get(base, f"/api/runs/{run['id']}/events?since=0")["events"]
                return session["id"], run["id"], [e["data"] for e in events if e["type"] == "pass_finished"]
    return None


def api_get(base: str, path: str) -> Any:
    with urllib.request.urlopen(f"{base}{path}", timeout=120) as resp:
        return json.loads(resp.read())


def bench_model(pw: Any, base: str, name: str, repeat: int, trace: bool = False) -> Row:
    path = ROOT / "bench" / "models" / f"{name}.onnx"
    reuse = finished_run(base, name)
    if reuse is None and not path.exists():
        raise NotAvailable(f"{path} is missing (bench/make_models.py)")
    browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    try:
        context = browser.new_context(viewport={"width": 1600, "height": 1000}, base_url=base,
                                      bypass_csp=True)  # wait_for_function evaluates strings
        context.add_init_script("localStorage.setItem('irx.graph', '1')")
        page = context.new_page()
        page.set_default_timeout(600_000)
        if reuse is None:
            session_id = upload_text(base, path.name, path.read_bytes())["id"]
            finished = run_in_page(page, base, session_id)
        else:
            session_id, run_id, finished = reuse
            page.goto(f"/s/{session_id}?run={run_id}")
        leaves = [p for p in finished if p["leaf"]]
        k = next(i for i, p in enumerate(leaves) if p["name"] == "FuseOps" and p["changed"])
        fuse, other = leaves[k], leaves[k - 1]
        page.locator(f".pass-row[data-pass-index='{other['pass_index']}']").click()
        page.wait_for_function(graph_ready(other["after"]))
        renders = first_render(page, fuse, other, repeat, browser if trace else None)
        row: Row = {"model": name, "nodes": int(page.evaluate(f"{PANE}.dataset.nodes")),
                    "boxes": int(page.evaluate(f"{PANE}.dataset.boxes")),
                    "first render ms": renders[0], "render ms (median)": median_of(renders[1:])}
        latencies, longest = expand_collapse(page, repeat, browser if trace else None)
        row["expand/collapse ms (median)"] = median_of(latencies)
        row["longest frame while expanding ms"] = longest
        gaps, draws = pan_zoom(page, browser if trace else None)
        row["pan/zoom frame ms (median / p95 / max)"] = (
            f"{statistics.median(gaps):.1f} / {p95(gaps):.1f} / {max(gaps):.1f}")
        row["draw ms (median / max)"] = f"{statistics.median(draws):.2f} / {max(draws):.2f}"
        return row
    finally:
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--trace", action="store_true", help="record a Chromium trace while "
                        "expanding and collapsing; print the long tasks' parts")
    parser.add_argument("--server", help="a running server (URL) whose finished runs of the "
                        "models are reused (chain_50000's run takes minutes on a busy machine)")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    notes = [f"load average before: {os.getloadavg()[0]:.2f} (2 shared cores)",
             "first render: from the click on FuseOps to the graph drawn, the diff pane "
             "loading its texts at the same time; the first includes building the graph on "
             "the server, the median the cached graph",
             "budgets: first render <= 1 s ResNet-50, <= 3 s chain_50000; <= 50 ms a frame"]
    try:
        check_available()
        from playwright.sync_api import sync_playwright

        with (nullcontext(args.server) if args.server else live_server()) as base, \
                sync_playwright() as pw:
            for name in args.models:
                try:
                    rows.append(bench_model(pw, base, name, max(1, args.repeat), args.trace))
                except NotAvailable as why:
                    rows.append({"model": name})
                    notes.append(f"{name}: not available: {why}")
    except NotAvailable as why:
        print(f"bench_graph: not available: {why}")
        notes.append(f"not available: {why}")
    notes.append(f"load average after: {os.getloadavg()[0]:.2f}")
    report("graph", f"Graph view in Chromium ({args.repeat} repeats)", COLUMNS, rows, notes,
           write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
