#!/usr/bin/env python3
"""LLM scale: a Llama-style 7B decoder (13 GB of float16 weights as ONNX external data)
opened from a local path, its O3 build recorded, within time and memory.

    .venv/bin/python bench/bench_llm.py [--model PATH] [--small] [--no-write]

The model is bench/make_llama.py's (generated into the git-ignored bench/models/llama7b/
when missing: about 13 GB of disk; `--small` makes and measures a 2-layer, hidden-64
one instead, to try the benchmark quickly). Measured against a real server, over a real
socket:

- `explorer serve PATH`: launch to the banner, i.e. the file imported in place and the
  session's first snapshot stored (first_snapshot_s, budget 10 s);
- the O3 run (`relay.build` with recording, started over Socket.IO with the page's
  default options, numerics on: over the numerics weight limit the run goes on without
  the check and says why): start_run to run_finished (run_s, budget 60 s);
- peak RSS of the server and everything under it (the probe, the runs' fork server and
  worker), sampled from /proc: the largest process and the largest sum (budget 2 GB);
- what the page shows, over HTTP: the timeline (passes), the diff of a pass that changed
  the IR, the provenance of a q_proj MatMul layer (its nodes and one backtrace);
- `explorer run PATH` (the terminal's run): wall time and the peak RSS of that process.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import report  # noqa: E402
from _served import ServedExplorer  # noqa: E402

from explorer.protocol import NUMERICS_UNAVAILABLE  # noqa: E402

DEFAULT = ROOT / "bench" / "models" / "llama7b" / "llama7b.onnx"
SMALL = ROOT / "bench" / "models" / "llama_small" / "llama_small.onnx"
SMALL_CONFIG = ("--layers", "2", "--hidden", "64", "--intermediate", "176", "--heads", "4",
                "--vocab", "1000", "--seq", "16")
COLUMNS = ["model", "weights_gb", "first_snapshot_s", "run_s", "passes", "changed",
           "peak_rss_process_mb", "peak_rss_tree_mb", "diff_lines", "layer_nodes",
           "backtrace_steps", "cli_run_s", "cli_peak_rss_mb"]


def ensure_model(path: Path, small: bool) -> Path:
    if path.exists():
        return path
    cmd = [sys.executable, str(ROOT / "bench" / "make_llama.py"), str(path),
           *(SMALL_CONFIG if small else ())]
    print(f"making {path} ...", flush=True)
    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return path


def weights_gb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.iterdir() if p.is_file()
               and p.name.startswith(path.name)) / 1e9


def q_proj_layer(layers: list[dict[str, Any]]) -> str:
    """The MatMul layer of the first attention's q_proj (the exporter feeds it the
    weight through a Transpose)."""
    weight = {out for entry in layers if entry["op_type"] == "Transpose"
              and any("q_proj.weight" in i for i in entry["inputs"]) for out in entry["outputs"]}
    return next(entry["name"] for entry in layers if entry["op_type"] == "MatMul"
                and (weight & set(entry["inputs"]) or any("q_proj" in i for i in entry["inputs"])))


def page_checks(server: ServedExplorer, run_id: str, events: list[dict[str, Any]]
                ) -> dict[str, Any]:
    """What the page asks for after a run: timeline, a diff, a layer's provenance."""
    summary = server.get(f"/api/runs/{run_id}")["run"]
    finished = [e["data"] for e in events if e["type"] == "pass_finished" and e["data"]["leaf"]]
    changed = [p for p in finished if p["changed"]]
    if not changed:
        raise RuntimeError("no pass changed the IR: nothing to diff")
    fold = next((p for p in changed if p["name"] == "FoldConstant"), changed[0])
    diff = server.get("/api/diff", a=fold["before"], b=fold["after"])
    unified = diff.get("unified") or ""
    graph = server.get(f"/api/sessions/{server.session_id}")["graph"]
    layer = q_proj_layer(graph["layers"])
    nodes = server.get(f"/api/runs/{run_id}/layers/{layer}")["nodes"]
    if not nodes:
        raise RuntimeError(f"layer {layer!r} has no node in the final IR")
    trace = server.get(f"/api/runs/{run_id}/backtrace/{nodes[0]['node_id']}")
    if layer not in trace["layers"] or not trace["steps"]:
        raise RuntimeError(f"backtrace of {layer!r} names no pass: {trace}")
    return {"passes": summary["num_passes"], "changed": summary["num_changed"],
            "diff_lines": len(unified.splitlines()) if isinstance(unified, str)
            else len(unified), "layer_nodes": len(nodes),
            "backtrace_steps": len(trace["steps"])}


def served(path: Path) -> dict[str, Any]:
    with ServedExplorer(model=path) as server:
        assert server.session_id is not None, "serve PATH opened no session"
        # the page's default options (numerics on): over the numerics weight limit the
        # run goes on without the check, and a numerics_unavailable event says why
        times = server.run(server.session_id, {"opt_level": 3, "build": True,
                                               "check_numerics": True})
        if times.status != "run_finished":
            raise RuntimeError(f"the run ended {times.status}: {times.events[-1]}")
        unavailable = [e["data"]["message"] for e in times.events
                       if e["type"] == NUMERICS_UNAVAILABLE]
        print(f"bench_llm: numerics: {unavailable[0] if unavailable else 'checked'}")
        checks = page_checks(server, times.run_id, times.events)
        process_mb, tree_mb = server.peak_rss_mb
    return {"first_snapshot_s": server.first_page_s, "run_s": times.total_s,
            "peak_rss_process_mb": process_mb, "peak_rss_tree_mb": tree_mb, **checks}


def terminal(path: Path) -> dict[str, Any]:
    """`explorer run PATH` in a child: wall time and its peak RSS (getrusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "explorer.cli", "run", str(path)], check=True,
                   cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                   stdout=subprocess.DEVNULL)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"cli_run_s": time.perf_counter() - start,
            "cli_peak_rss_mb": max(peak, before) / 1024}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--small", action="store_true", help="a 2-layer, hidden-64 decoder")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    path = ensure_model(args.model or (SMALL if args.small else DEFAULT), args.small)
    row = {"model": path.name, "weights_gb": weights_gb(path), **served(path),
           **terminal(path)}
    report("llm", "LLM scale: a Llama-style decoder from a local path", COLUMNS, [row],
           notes=["budgets (issue 21): first snapshot <= 10 s, O3 run <= 60 s, "
                  "peak RSS <= 2 GB"],
           write=not args.no_write)


if __name__ == "__main__":
    main()
