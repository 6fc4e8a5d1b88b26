"""What a long main-thread task of a Chromium performance trace spent its time on.

    summary = long_tasks(trace_json_bytes, over_ms=50)
    # [{"ms": 83.1, "parts": [("FunctionCall relayout graph.js:180", 61.0), ("MajorGC", 12.2), ...]}]

A task is a `RunTask` on the renderer's main thread (CrRendererMain) longer than `over_ms`;
its parts are the events directly inside it, by name (a JavaScript call named by function,
file and line), largest first. Record the trace with Playwright's
`browser.start_tracing(page, categories=TRACE_CATEGORIES)`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline",
                    "v8", "v8.execute", "blink.user_timing", "disabled-by-default-v8.gc"]


def _main_thread(events: list[dict[str, Any]]) -> tuple[int, int] | None:
    for e in events:
        if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain":
            return e["pid"], e["tid"]
    return None


def _name(e: dict[str, Any]) -> str:
    data = e.get("args", {}).get("data") or {}
    if e["name"] == "FunctionCall" and data:
        where = (data.get("url") or "").rsplit("/", 1)[-1]
        return f"FunctionCall {data.get('functionName') or '(anonymous)'} {where}:{data.get('lineNumber', '?')}"
    if e["name"] == "Paint" and data.get("clip"):  # the area repainted, in CSS px
        q = data["clip"]
        return f"Paint {round(q[2] - q[0])}x{round(q[5] - q[1])} node {data.get('nodeId', '?')}"
    if e["name"] in ("EventDispatch", "TimerFire") and data:
        return f"{e['name']} {data.get('type') or data.get('timerId') or ''}".strip()
    return str(e["name"])


def _complete(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Complete events ("X"), with begin/end pairs ("B"/"E") joined into them."""
    out = [e for e in events if e.get("ph") == "X" and "dur" in e]
    open_: list[dict[str, Any]] = []
    for e in sorted((e for e in events if e.get("ph") in ("B", "E")), key=lambda e: e["ts"]):
        if e["ph"] == "B":
            open_.append(e)
        elif open_:
            begin = open_.pop()
            out.append({**begin, "ph": "X", "dur": e["ts"] - begin["ts"]})
    return out


def long_tasks(raw: bytes, over_ms: float = 50.0, depth: int = 2) -> list[dict[str, Any]]:
    """The tasks longer than `over_ms` and their parts down to `depth` levels (see module)."""
    trace = json.loads(raw)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    main = _main_thread(events)
    if main is None:
        return []
    spans = sorted(_complete([e for e in events if (e.get("pid"), e.get("tid")) == main]),
                   key=lambda e: (e["ts"], -e["dur"]))
    out = []
    for i, task in enumerate(spans):
        if task["name"] != "RunTask" or task["dur"] < over_ms * 1000:
            continue
        end = task["ts"] + task["dur"]
        parts: dict[str, float] = defaultdict(float)
        stack: list[int] = []  # ends of the enclosing events inside the task
        for e in spans[i + 1:]:
            if e["ts"] >= end:
                break
            while stack and e["ts"] >= stack[-1]:
                stack.pop()
            if len(stack) < depth:
                parts[("  " * len(stack)) + _name(e)] += e["dur"] / 1000
            stack.append(e["ts"] + e["dur"])
        out.append({"ms": round(task["dur"] / 1000, 1),
                    "parts": sorted(((k, round(v, 1)) for k, v in parts.items()), key=lambda kv: -kv[1])[:12]})
    return out
