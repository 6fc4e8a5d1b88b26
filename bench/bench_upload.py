#!/usr/bin/env python3
"""Upload to first snapshot over a real socket: `explorer serve` on a port, the model
POSTed by an HTTP client (requests, streaming the file) as the page sends it (the file as
the raw body, RAW_UPLOAD_TYPE with ?name=) and, for comparison, as multipart (curl and API
users), then `start_run`
over Socket.IO (python-socketio's client, websocket transport) as the page's autorun does,
until `run_started` brings the first snapshot; the same for each model, `--repeat` times
(median), the server restarted each time (no warm caches but the OS's).

`--uploads browser` drives the page itself in Chromium (Playwright): the file chosen in
its file input (so the browser's own network stack sends it), post_s until the page has
the new session's address (the POST answered: the file stored and imported, its
snapshot stored), first_snapshot_s until the session page, loaded and connected, shows
that the autorun's `run_started` came (its timeline counts "0/N" planned passes);
start_to_first_s is the difference (loading the session page is most of it).

    .venv/bin/python bench/bench_upload.py [--models resnet50,bert12] [--repeat 3] [--no-write]
        [--uploads raw,multipart,browser]

Budgets (issue 21, the page's raw upload): ResNet-50 (98 MB) <= 0.8 s, BERT-12 (418 MB)
<= 2.5 s. Also printed:
the POST alone (the stream into the store, its hash, the probe child's import and the
stored snapshot) and start_run -> run_started.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import model_path, report  # noqa: E402
from _served import ServedExplorer  # noqa: E402

COLUMNS = ["model", "upload", "file_mb", "first_snapshot_s", "runs", "post_s",
           "start_to_first_s", "peak_rss_tree_mb"]
UPLOADS = ("raw", "multipart")
BROWSER = "browser"
CHROMIUM = Path("/usr/bin/chromium")
RUN_STARTED_JS = """() => {
  const text = document.querySelector('[data-testid=run-progress]')?.textContent ?? '';
  return /\\d+\\/\\d+/.test(text) || document.querySelector('.pass-row') !== null;
}"""
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def warm_up(server: ServedExplorer, how: str) -> None:
    """A server is up before its first upload: one small model through it first (the
    probe and run children's fork server has then preloaded the engine)."""
    post(server.base, model_path("mlp"), how).raise_for_status()


class Answer:
    """The part of a requests.Response the benchmark reads, for http.client's answer."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.body = status, body

    def raise_for_status(self) -> None:
        if self.status >= 400:
            raise RuntimeError(f"HTTP {self.status}: {self.body[:500]!r}")

    def json(self) -> Any:
        return json.loads(self.body)


def post(base: str, path: Path, how: str) -> Any:
    """The model POSTed as the page does (`raw`: the open file is the body with its
    Content-Length, sent in 1 MB blocks as a browser's network stack does, not the 16 KB
    of Python's default) or as multipart (requests, as a script would)."""
    import requests

    from explorer.protocol import RAW_UPLOAD_TYPE

    with open(path, "rb") as handle:
        if how == "raw":
            url = urlsplit(base)
            conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port,
                                              timeout=600, blocksize=1 << 20)
            try:
                conn.request("POST", f"/api/sessions?{urlencode({'name': path.name})}",
                             body=handle, headers={"Content-Type": RAW_UPLOAD_TYPE,
                                                   "Content-Length": str(path.stat().st_size)})
                answer = conn.getresponse()
                return Answer(answer.status, answer.read())
            finally:
                conn.close()
        return requests.post(f"{base}/api/sessions", files={"file": (path.name, handle)},
                             timeout=600)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, for the page's own upload."""
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def once(path: Path, how: str) -> tuple[float, float, float, float]:
    with ServedExplorer() as server:
        client = server.socket()
        warm_up(server, how)
        start = time.perf_counter()
        resp = post(server.base, path, how)
        posted = time.perf_counter()
        resp.raise_for_status()
        sid = resp.json()["session"]["id"]
        times = server.run(sid, {"opt_level": 3, "build": False}, client=client)
        first = posted + times.first_event_s
        return first - start, posted - start, times.first_event_s, server.peak_rss_mb[1]


def once_in_browser(path: Path, browser: Any) -> tuple[float, float, float, float]:
    with ServedExplorer() as server:
        warm_up(server, "raw")
        context = browser.new_context(base_url=server.base)
        try:
            page = context.new_page()
            page.set_default_timeout(600_000)
            page.goto("/")
            start = time.perf_counter()
            page.get_by_test_id("file-input").set_input_files(str(path))
            page.wait_for_url("**/s/**", wait_until="commit")
            posted = time.perf_counter()
            page.wait_for_function(RUN_STARTED_JS, polling="raf")
            first = time.perf_counter()
        finally:
            context.close()
        return first - start, posted - start, first - posted, server.peak_rss_mb[1]


def bench(name: str, how: str, repeat: int, browser: Any = None) -> dict[str, Any]:
    path = model_path(name)
    runs = [once_in_browser(path, browser) if how == BROWSER else once(path, how)
            for _ in range(repeat)]
    firsts = [r[0] for r in runs]
    return {"model": name, "upload": how, "file_mb": path.stat().st_size / 2**20,
            "first_snapshot_s": statistics.median(firsts),
            "runs": ", ".join(f"{v:.3f}" for v in firsts),
            "post_s": statistics.median(r[1] for r in runs),
            "start_to_first_s": statistics.median(r[2] for r in runs),
            "peak_rss_tree_mb": max(r[3] for r in runs)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert12")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--uploads", default=",".join(UPLOADS),
                        help="raw (the page's upload, from an HTTP client), multipart (curl, "
                             "API users), browser (the page in Chromium)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    uploads = args.uploads.split(",")
    with contextlib.ExitStack() as stack:
        browser = stack.enter_context(chromium()) if BROWSER in uploads else None
        rows = [bench(name, how, args.repeat, browser) for name in args.models.split(",")
                for how in uploads]
    report("upload", "Upload to first snapshot over a real socket", COLUMNS, rows,
           notes=["budgets (issue 21, the page's raw upload): ResNet-50 <= 0.8 s, "
                  "BERT-12 <= 2.5 s"],
           write=not args.no_write)


if __name__ == "__main__":
    main()
