#!/usr/bin/env python3
"""What breakpoints cost a run that does not stop at them: `explorer run MODEL --no-build`
with no breakpoint, with one that never matches (`before:` a pass the pipeline does not
run: the gate's check at every pass boundary), and with a layer breakpoint
(`touches:` the model's first layer, answered `continue` at every pause: the node sets of
that layer read from the snapshots' source maps after every changed leaf pass).

    .venv/bin/python bench/bench_breakpoints.py [--models resnet50] [--repeat 3] [--no-write]

Each run is its own process; medians over `--repeat` of the whole command's wall time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Row, median_of, model_path, per_model_main, report

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("model", "breakpoints", "run_s", "overhead_s", "pauses")


def _first_layer(path: Path) -> str:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return next(node.name for node in graph.node if node.name)


def _run(path: Path, extra: list[str]) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "explorer.cli", "run", str(path), "--no-build", *extra]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=1800, check=True)
    return time.perf_counter() - start, done.stdout.count(";; paused ")


def bench_model(name: str, repeat: int) -> list[Row]:
    path = model_path(name)
    cases = {"none": [], "before:NoSuchPass": ["--break", "before:NoSuchPass"],
             f"touches:{_first_layer(path)}": ["--break", f"touches:{_first_layer(path)}"]}
    rows: list[Row] = []
    base = None
    for label, extra in cases.items():
        runs = [_run(path, extra) for _ in range(repeat)]
        seconds = median_of([r[0] for r in runs])
        base = seconds if base is None else base
        rows.append({"model": name, "breakpoints": label, "run_s": seconds,
                     "overhead_s": seconds - base, "pauses": runs[0][1]})
        print(json.dumps(rows[-1]))
    return rows


def main(argv: list[str] | None = None) -> None:
    rows, args = per_model_main(argv, __doc__.splitlines()[0], ["resnet50"], bench_model)
    report("breakpoints", "Breakpoints: a run that does not stop (explorer run --no-build)",
           COLUMNS, rows, notes=["wall time of the whole command (import included)"],
           write=not args.no_write)


if __name__ == "__main__":
    main()
