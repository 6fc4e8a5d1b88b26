"""`explorer report`: one self-contained HTML file of a run, for CI artefacts and bug reports.

The file is the session page itself (static/dist/report.js: the page's own modules, bundled
with a data layer in place of the server) with everything it would fetch inlined: the
answers of the API routes for this run, taken from the app through its test client (the
same code that answers the live page), snapshot texts and source maps stored once each
(by content), all of it JSON, gzip-compressed and base64-encoded; the CSS inline too. It
needs no server and no network: it opens from file://.

What the page asks of a finished run is all there: the session and run, its events, every
snapshot, each pass's node diff and remarks, the timing tree, the kernels and their
schedule steps, and the backtraces of the final module's expressions (at most
MAX_BACKTRACES). A question the report did not answer (a reproducer, the remarks about one
node) is told so in the page.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import time
from pathlib import Path
from typing import Any

from explorer import asset_root, queries
from explorer.extensions import services
from explorer.protocol import PASS_FAILED, PASS_FINISHED, RUN_STARTED

BUNDLE = "static/dist/report.js"
STYLES = ("static/css/app.css", "static/css/quant.css", "static/css/debug.css",
          "static/css/remarks.css")
MAX_BACKTRACES = 20_000


class ReportError(Exception):
    """The report could not be made (a route refused, the bundle is missing)."""


def _get(client: Any, url: str) -> Any:
    resp = client.get(url)
    if resp.status_code != 200:
        raise ReportError(f"{url}: {resp.status_code} {resp.get_data(as_text=True)[:200]}")
    return resp.get_json()


def snapshot_ids(summary: dict[str, Any], events: list[dict[str, Any]]) -> list[int]:
    """Every snapshot a run's page can show: the initial one, each pass's before and after,
    the final one."""
    ids: dict[int, None] = {}
    for event in events:
        data = event["data"]
        if event["type"] == RUN_STARTED:
            ids[int(data["initial_snapshot"])] = None
        elif event["type"] in (PASS_FINISHED, PASS_FAILED):
            for key in ("before", "after"):
                if data.get(key) is not None:
                    ids[int(data[key])] = None
    if summary.get("final_snapshot") is not None:
        ids[int(summary["final_snapshot"])] = None
    return list(ids)


class _Collector:
    """The answers the page will ask for, keyed by the exact URL it builds."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.responses: dict[str, Any] = {}
        self.blobs: dict[str, Any] = {}

    def keep(self, url: str) -> Any:
        body = _get(self.client, url)
        self.responses[url] = body
        return body

    def blob(self, value: Any) -> str:
        """Store a text or source map once; its key."""
        raw = json.dumps(value, separators=(",", ":"))
        key = hashlib.sha256(raw.encode()).hexdigest()[:20]
        self.blobs.setdefault(key, value)
        return key


def collect(client: Any, session_id: str, run_id: str) -> dict[str, Any]:
    """Everything the page fetches for run `run_id` of session `session_id`."""
    c = _Collector(client)
    c.keep(f"/api/sessions/{session_id}")
    summary = c.keep(f"/api/runs/{run_id}")["run"]
    events = _get(client, f"/api/runs/{run_id}/events?since=0")["events"]
    for url in ("/api/passes", f"/api/runs/{run_id}/timing"):
        c.keep(url)
    snapshots = {}
    for sid in snapshot_ids(summary, events):
        text = _get(client, f"/api/snapshots/{sid}?part=text")["snapshot"]["text"]
        source_map = _get(client, f"/api/snapshots/{sid}?part=source_map")["snapshot"]
        snapshots[str(sid)] = {"text": c.blob(text), "map": c.blob(source_map["source_map"])}
    for event in events:
        data = event["data"]
        if event["type"] not in (PASS_FINISHED, PASS_FAILED):
            continue
        c.keep(f"/api/runs/{run_id}/remarks?pass={data['pass_index']}")
        if data.get("after") is not None and data["after"] != data["before"]:
            c.keep(f"/api/diff?a={data['before']}&b={data['after']}&part=nodes")
    if summary["status"] == "finished":
        for node in c.keep(f"/api/runs/{run_id}/schedules")["nodes"]:
            c.keep(f"/api/runs/{run_id}/schedules/{node['index']}")
    _backtraces(c, run_id, summary)
    return {"session_id": session_id, "run_id": run_id, "events": events,
            "snapshots": snapshots, "blobs": c.blobs, "responses": c.responses}


class _EventsOnce:
    """The store, with a run's events read once (a backtrace reads them all, and the report
    asks for hundreds of backtraces)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._events: dict[str, list[Any]] = {}

    def events(self, run_id: str, since: int = 0) -> list[Any]:
        if run_id not in self._events:
            self._events[run_id] = self._store.events(run_id)
        return [e for e in self._events[run_id] if e["index"] >= since]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _backtraces(c: _Collector, run_id: str, summary: dict[str, Any]) -> None:
    """The backtrace of each expression of the final module, as GET .../backtrace/<node>
    answers it (the same query, its run's events read once)."""
    final = summary.get("final_snapshot")
    if final is None:
        return
    source_map = _get(c.client, f"/api/snapshots/{final}?part=source_map")["snapshot"]
    nodes = list(dict.fromkeys(int(e["node_id"]) for e in source_map["source_map"]))
    with c.client.application.app_context():
        svc = services()
        store = _EventsOnce(svc.store)
        for node in nodes[:MAX_BACKTRACES]:
            c.responses[f"/api/runs/{run_id}/backtrace/{node}"] = queries.backtrace(
                store, svc.snapshots, run_id, node)  # type: ignore[arg-type]


def pack(data: dict[str, Any]) -> str:
    """The data as the page reads it: JSON, gzip, base64."""
    raw = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
    return base64.b64encode(gzip.compress(raw, 6, mtime=0)).decode("ascii")


def _inline_script(source: str) -> str:
    """Script text safe inside <script> (no early `</script`)."""
    return source.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def render(data: dict[str, Any], title: str, root: Path | None = None) -> str:
    """The report's HTML: the page, its CSS and bundle inline, the data packed."""
    root = root or asset_root()
    bundle = root / BUNDLE
    if not bundle.exists():
        raise ReportError(f"{bundle} is missing: build the front end first (node build.mjs)")
    css = "\n".join((root / path).read_text() for path in STYLES)
    payload = json.dumps({"encoding": "gzip+base64", "data": pack(data)})
    made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{html.escape(title)} · IR Explorer report</title>
<style>{css}</style>
</head>
<body data-page="session" data-report="1" data-session-id="{html.escape(data['session_id'])}" data-run-id="{html.escape(data['run_id'])}">
<header class="topbar">
  <span class="brand"><span class="brand-mark" aria-hidden="true">◆</span> IR Explorer</span>
  <span class="report-banner" data-testid="report-banner">static report · {html.escape(title)} · run {html.escape(data['run_id'])} · {made}</span>
  <span class="spacer"></span>
  <button class="btn ghost small" type="button" data-theme-toggle title="Switch light / dark">◐ Theme</button>
</header>
<div id="app" class="app"></div>
<script type="application/json" id="irx-report-data">{_inline_script(payload)}</script>
<script>{_inline_script(bundle.read_text())}</script>
</body>
</html>
"""


def write_report(client: Any, session_id: str, run_id: str, title: str, out: Path) -> int:
    """Write the report of a run to `out`; its size in bytes."""
    text = render(collect(client, session_id, run_id), title)
    out.write_text(text)
    return len(text.encode())
