#!/usr/bin/env python3
"""Debugging features at model scale: the static report (`explorer report`: seconds, MB)
and the reproducer of one pass (GET .../reproducer: seconds, zip MB; its pytest in a clean
process: seconds, result), for ResNet-50 (or the models of bench/make_models.py given).

    .venv/bin/python bench/bench_debug.py [--models resnet50,mobilenetv2] [--pass FuseOps]

Goes through the real app (Flask test client, Socket.IO test client, the run and repro
children); prints a table and appends it to bench/results/debug.md with the load average.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import load_average, model_path, report  # noqa: E402

from explorer import create_app, services, socketio_of  # noqa: E402
from explorer.protocol import NAMESPACE, RUN_EVENT, TERMINAL_EVENTS  # noqa: E402


def _run(app: Any, path: Path) -> tuple[str, list[dict[str, Any]]]:
    client = app.test_client()
    sock = socketio_of(app).test_client(app, namespace=NAMESPACE)
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(path.read_bytes()),
                                                       path.name)},
                       content_type="multipart/form-data")
    sid = resp.get_json()["session"]["id"]
    run_id = sock.emit("start_run", {"session_id": sid, "options": {"opt_level": 3}},
                       namespace=NAMESPACE, callback=True)["run_id"]
    sock.emit("subscribe", {"run_id": run_id, "since": 0}, namespace=NAMESPACE, callback=True)
    while True:
        got = [m["args"][0] for m in sock.get_received(NAMESPACE) if m["name"] == RUN_EVENT]
        if any(e["type"] in TERMINAL_EVENTS for e in got):
            break
        time.sleep(0.05)
    sock.disconnect(namespace=NAMESPACE)
    return run_id, client.get(f"/api/runs/{run_id}/events").get_json()["events"]


def bench_reproducer(name: str, pass_name: str) -> dict[str, Any]:
    path = model_path(name)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"DATA_DIR": str(Path(tmp) / "data")})
        with app.app_context():
            services()
        run_id, events = _run(app, path)
        chosen = next(e["data"] for e in events if e["type"] == "pass_finished"
                      and e["data"]["name"] == pass_name)
        load = f"{load_average():.2f}"
        t0 = time.perf_counter()
        resp = app.test_client().get(
            f"/api/runs/{run_id}/passes/{chosen['pass_index']}/reproducer")
        t_zip = time.perf_counter() - t0
        if resp.status_code != 200:
            raise RuntimeError(resp.get_json())
        with zipfile.ZipFile(io.BytesIO(resp.data)) as archive:
            archive.extractall(tmp)
            (top,) = {n.split("/")[0] for n in archive.namelist()}
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": tmp}
        t0 = time.perf_counter()
        test = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                              cwd=Path(tmp) / top, env=env, capture_output=True, text=True)
        t_test = time.perf_counter() - t0
        app.extensions["explorer"].runs.shutdown()
    result = test.stdout.strip().splitlines()[-1] if test.stdout else test.stderr[-200:]
    return {"model": name, "pass": pass_name, "repro s": round(t_zip, 1),
            "zip MB": round(len(resp.data) / 1e6, 2), "pytest s": round(t_test, 1),
            "pytest": result, "load": load}


def bench_report(name: str) -> dict[str, Any]:
    path = model_path(name)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.html"
        load = f"{load_average():.2f}"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "explorer.cli", "report", str(path), "-o",
                        str(out)], check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        took = time.perf_counter() - t0
        size = out.stat().st_size
    return {"model": name, "report s": round(took, 1), "report MB": round(size / 1e6, 2),
            "load": load}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50")
    parser.add_argument("--pass", dest="pass_name", default="FuseOps")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    repro = [bench_reproducer(n, args.pass_name) for n in names]
    report("debug", "Reproducers (one pass, from a built run)",
           ["model", "pass", "repro s", "zip MB", "pytest s", "pytest", "load"], repro,
           write=not args.no_write)
    reports = [bench_report(n) for n in names]
    report("debug", "Static reports (explorer report, relay.build, no numerics)",
           ["model", "report s", "report MB", "load"], reports, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
