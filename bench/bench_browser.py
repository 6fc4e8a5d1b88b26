#!/usr/bin/env python3
"""Browser: render the diff of a 50,000-line module, then apply a click highlight.

    .venv/bin/python bench/bench_browser.py [--lines 50000] [--repeat 5] [--quick] [--no-write]

Against the real server (werkzeug on 127.0.0.1, a temporary data folder) with Playwright
driving Debian's /usr/bin/chromium. A Relay-text chain of `--lines` ops is uploaded and run
(no build, no numerics); then, in the page:
- diff render: from the click on a pass row until the diff pane shows that pass's snapshot
  and its right editor has painted lines (two animation frames later); first time and the
  median over alternating re-selections of two passes;
- click highlight: from the mouse click on an expression until the pane's highlight count
  is repainted (MutationObserver on `data-highlights-b`, plus a frame).
Timestamps are taken in the page (performance.now()), not around the CDP round trips.
Skips cleanly (prints why) without chromium, Playwright or the front-end bundle.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import ROOT, NotAvailable, Row, median_of, report

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
COLUMNS = ("lines", "first diff render ms", "diff render ms (median)", "runs",
           "click highlight ms (median)", "highlight runs", "rendered lines")
TERMINAL = {"run_finished", "run_failed", "run_cancelled"}

# Resolves with the ms from the next click on the document until `ready()` holds for two
# animation frames in a row (so the result has been painted).
_ARM_JS = """(readyExpr) => {
  window.__bench = new Promise((resolve) => {
    const ready = new Function('return (' + readyExpr + ')');
    document.addEventListener('mousedown', () => {
      const t0 = performance.now();
      const tick = () => ready() ? requestAnimationFrame(() => resolve(performance.now() - t0))
                                 : requestAnimationFrame(tick);
      requestAnimationFrame(tick);
    }, {capture: true, once: true});
  });
}"""


def chain_module(n: int) -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(1, 16), float32]) {",
             "  %0 = nn.relu(%x) /* layer0 */;"]
    lines += [f"  %{i} = {'nn.relu' if i % 2 else 'tanh'}(%{i - 1}) /* layer{i} */;"
              for i in range(1, n)]
    lines.append(f"  %{n - 1}\n}}\n")
    return "\n".join(lines)


def check_available() -> None:
    if not CHROMIUM.exists():
        raise NotAvailable("/usr/bin/chromium is missing (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as err:
        raise NotAvailable(f"playwright is not installed ({err})") from None
    if not (ROOT / "static" / "dist" / "main.js").exists():
        raise NotAvailable("the front-end bundle static/dist/main.js is missing (make frontend)")


@contextmanager
def live_server() -> Iterator[str]:
    from werkzeug.serving import make_server

    from explorer import create_app

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as data:
        app = create_app({"DATA_DIR": data})
        httpd = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_port}"
        finally:
            httpd.shutdown()
            thread.join(timeout=5)


def upload_text(base: str, name: str, text: str | bytes) -> dict[str, Any]:
    """POST /api/sessions with a model's text (or a binary file's bytes)."""
    boundary = "----irx-bench"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name}\"\r\nContent-Type: text/plain\r\n\r\n").encode()
    body += (text.encode() if isinstance(text, str) else text) + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{base}/api/sessions", data=body, method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())["session"]


def wait_events(base: str, run_id: str, timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/api/runs/{run_id}/events?since=0") as resp:
            events = json.loads(resp.read())["events"]
        if events and events[-1]["type"] in TERMINAL:
            return events
        time.sleep(0.2)
    raise NotAvailable(f"the run did not end within {timeout:.0f} s")


def run_in_page(page: Any, base: str, session_id: str) -> list[dict[str, Any]]:
    page.goto(f"/s/{session_id}")
    for testid in ("build", "check-numerics"):
        box = page.get_by_test_id(testid)
        if box.count() and box.is_checked():
            box.uncheck()
    page.get_by_test_id("run-button").click()
    page.wait_for_function("new URLSearchParams(location.search).get('run')")
    run_id = page.evaluate("new URLSearchParams(location.search).get('run')")
    events = wait_events(base, run_id, 900)
    page.wait_for_function("document.querySelector('[data-testid=run-status]')"
                           ".dataset.status !== 'running'", timeout=120_000)
    return [e["data"] for e in events if e["type"] == "pass_finished"]


def timed_click(page: Any, locator: Any, ready_expr: str, timeout_ms: int = 120_000) -> float:
    box = locator.bounding_box()
    if box is None:
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
    page.evaluate(_ARM_JS, ready_expr)
    page.mouse.click(box["x"] + min(8, box["width"] / 2), box["y"] + box["height"] / 2)
    return float(page.evaluate(f"Promise.race([window.__bench, new Promise((_, no) => "
                               f"setTimeout(() => no(new Error('timeout')), {timeout_ms}))])"))


def diff_ready(after: int) -> str:
    return ("(() => { const p = document.querySelector('[data-testid=diff-pane]'); "
            f"return p && p.dataset.right === '{after}' && "
            "document.querySelector(\".cm-editor[data-side='b'] .cm-line\") !== null; })()")


def measure(page: Any, finished: list[dict[str, Any]], repeat: int) -> Row:
    parents = {p["parent_index"] for p in finished}
    changed = [p for p in finished if p["changed"] and p["before"] != p["after"]
               and p["pass_index"] not in parents]
    if not changed:
        raise NotAvailable("no pass changed the module: nothing to diff")
    picks = [changed[-1], changed[0]] if len(changed) > 1 else [changed[0]]
    row: Row = {}
    renders = []
    for k in range(repeat + 1):
        chosen = picks[k % len(picks)]
        if k and len(picks) == 1:
            break
        row_loc = page.locator(f".pass-row[data-pass-index='{chosen['pass_index']}'] .pass-name")
        ms = timed_click(page, row_loc, diff_ready(chosen["after"]))
        renders.append(ms)
    row["first diff render ms"] = renders[0]
    row["diff render ms (median)"] = median_of(renders[1:]) if len(renders) > 1 else None
    row["runs"] = len(renders)
    right = page.locator(".cm-editor[data-side='b']")
    row["rendered lines"] = right.locator(".cm-line").count()
    highlights = []
    for k in range(repeat):
        line = right.locator(".cm-line").nth(3 + (k % 5))
        target = line.locator(".tok-fn").first
        page.evaluate("document.querySelector('[data-testid=diff-pane]').dataset.highlightsB"
                      " = 'reset'")
        ready = ("(() => { const v = document.querySelector('[data-testid=diff-pane]')"
                 ".dataset.highlightsB; return v !== 'reset' && Number(v) > 0; })()")
        highlights.append(timed_click(page, target, ready, 30_000))
    row["click highlight ms (median)"] = median_of(highlights)
    row["highlight runs"] = len(highlights)
    return row


def bench(lines: int, repeat: int) -> Row:
    check_available()
    from playwright.sync_api import sync_playwright

    with live_server() as base, sync_playwright() as pw:
        session = upload_text(base, f"chain{lines}.relay", chain_module(lines))
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1600, "height": 1000},
                                          base_url=base,
                                          bypass_csp=True)  # wait_for_function evaluates strings
            page = context.new_page()
            page.set_default_timeout(120_000)
            finished = run_in_page(page, base, session["id"])
            row = measure(page, finished, repeat)
        finally:
            browser.close()
    row["lines"] = lines
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="5,000 lines, 2 repeats")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    lines, repeat = (5_000, 2) if args.quick else (args.lines, max(1, args.repeat))
    try:
        rows = [bench(lines, repeat)]
        notes = ["times measured in the page from the mousedown to two animation frames "
                 "after the result is in the DOM; 'first' includes fetching both snapshots "
                 "and the diff"]
    except NotAvailable as why:
        print(f"bench_browser: not available: {why}")
        rows, notes = [{"lines": lines}], [f"not available: {why}"]
    report("browser", f"Browser diff and highlight, Chromium ({repeat} repeats)", COLUMNS,
           rows, notes, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
