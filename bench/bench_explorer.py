#!/usr/bin/env python3
"""Explorer benchmark: upload -> first snapshot (run_started with the initial snapshot) at
the socket, start_run -> that event, total run time with
recording, and SQLite bytes per run, for ResNet-50 and BERT-12 (and any model of
bench/make_models.py given on the command line).

    .venv/bin/python bench/bench_explorer.py [resnet50 bert12 ...]

Goes through the real app (Flask test client for the upload, Socket.IO test
client for the run), prints a table and appends it to bench/results/explorer.md.
"""

from __future__ import annotations

import io
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from shared_models import model_path  # noqa: E402

from explorer import create_app, services, socketio_of  # noqa: E402
from explorer.protocol import NAMESPACE, RUN_EVENT, TERMINAL_EVENTS  # noqa: E402
from explorer.runs.children import wait_ready  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "explorer.md"


def _wait(sock, run_id: str, until: set[str], timeout: float = 3600) -> tuple[float, list]:
    events: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for msg in sock.get_received(NAMESPACE):
            if msg["name"] == RUN_EVENT and msg["args"][0]["run_id"] == run_id:
                events.append(msg["args"][0])
        if any(e["type"] in until for e in events):
            return time.perf_counter(), events
        time.sleep(0.002)
    raise TimeoutError(f"no {until} within {timeout}s")


def bench(name: str) -> dict[str, object]:
    path = model_path(name)
    data = path.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"DATA_DIR": tmp})
        client = app.test_client()
        sock = socketio_of(app).test_client(app, namespace=NAMESPACE)
        with app.app_context():  # a server is up before its first upload: warmed up
            services()
        wait_ready()  # the probe and run children's fork server has preloaded
        t0 = time.perf_counter()
        resp = client.post("/api/sessions", data={"file": (io.BytesIO(data), path.name)},
                           content_type="multipart/form-data")
        if resp.status_code != 201:
            raise RuntimeError(f"{name}: upload failed: {resp.get_json()}")
        t_upload = time.perf_counter()
        sid = resp.get_json()["session"]["id"]
        t_start = time.perf_counter()
        options = {"opt_level": 3, "build": False}  # the pipeline; bench_build: the rest
        ack = sock.emit("start_run", {"session_id": sid, "options": options},
                        namespace=NAMESPACE, callback=True)
        run_id = ack["run_id"]
        sock.emit("subscribe", {"run_id": run_id, "since": 0}, namespace=NAMESPACE,
                  callback=True)
        t_first, events = _wait(sock, run_id, {"run_started"})
        t_end, rest = _wait(sock, run_id, set(TERMINAL_EVENTS))
        events += rest
        with app.app_context():
            store = services().store
            summary = store.run(run_id)
            nbytes = store.run_bytes(run_id)
        sock.disconnect(namespace=NAMESPACE)
    finished = [e for e in events if e["type"] == "pass_finished"]
    return {"model": name, "file_mb": len(data) / 2**20, "import_s": t_upload - t0,
            "first_snapshot_s": t_first - t0, "start_to_first_s": t_first - t_start,
            "run_s": t_end - t_upload,
            "status": summary["status"], "passes": summary["num_passes"],
            "changed": summary["num_changed"], "events": len(events),
            "snapshots": len({e["data"]["after"] for e in finished}),
            "sqlite_mb": nbytes / 2**20}


COLUMNS = ("model", "file_mb", "import_s", "first_snapshot_s", "start_to_first_s", "run_s", "status", "passes",
           "changed", "events", "snapshots", "sqlite_mb")


def table(rows: list[dict[str, object]]) -> str:
    def cell(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    names = argv or ["resnet50", "bert12"]
    rows = [bench(n) for n in names]
    text = table(rows)
    print(text)
    machine = f"{platform.machine()} {platform.processor() or ''} Python {platform.python_version()}"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as out:
        out.write(f"\n## {time.strftime('%Y-%m-%d %H:%M')} ({machine.strip()})\n\n{text}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
