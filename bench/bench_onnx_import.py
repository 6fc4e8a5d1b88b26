#!/usr/bin/env python3
"""ONNX import time: `onnx.load` + `relay.frontend.from_onnx` of the bench models, each
import in a fresh worker process, median of N. With `--ref REV`, the same measurement of
another commit (checked out in a temporary worktree) alternates with this one, so both
see the same machine load; the ratio ours/ref is what to read.

    .venv/bin/python bench/bench_onnx_import.py [--models bert12,resnet50] [--repeat 3]
        [--ref b82456d] [--no-write]

Appends to bench/results/onnx_import.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _common import (  # noqa: E402
    Row,
    append_results,
    markdown_table,
    model_path,
    run_worker,
)

WORKER = """
import sys, time
sys.path.insert(0, {root!r})
import onnx
from engine.relay.frontend import from_onnx
start = time.perf_counter()
model = onnx.load({path!r})
loaded = time.perf_counter()
mod, params = from_onnx(model)
done = time.perf_counter()
print('{{"load_s": %.4f, "import_s": %.4f}}' % (loaded - start, done - loaded))
"""


def measure(root: Path, path: Path) -> Row:
    return run_worker([sys.executable, "-c", WORKER.format(root=str(root), path=str(path))],
                      timeout=900)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="bert12,resnet50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ref", default=None, help="another commit to measure alternately")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    trees = {"this tree": ROOT}
    scratch = None
    if args.ref:
        scratch = Path(tempfile.mkdtemp(prefix="irx-ref-"))
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(scratch),
                        args.ref], check=True, capture_output=True)
        trees[f"ref {args.ref}"] = scratch
    rows: list[Row] = []
    try:
        for name in args.models.split(","):
            path = model_path(name)
            runs: dict[str, list[float]] = {label: [] for label in trees}
            for _ in range(args.repeat):
                for label, root in trees.items():
                    row = measure(root, path)
                    if "import_s" not in row:
                        print(f"{name} ({label}): {row}", file=sys.stderr)
                        continue
                    runs[label].append(row["import_s"])
            for label, values in runs.items():
                rows.append({"model": name, "code": label,
                             "file_mb": round(path.stat().st_size / 2**20, 1),
                             "from_onnx_s runs": ", ".join(f"{v:.3f}" for v in values),
                             "median_s": round(statistics.median(values), 3) if values else None})
            if args.ref and all(runs.values()):
                ours = statistics.median(runs["this tree"])
                ref = statistics.median(runs[f"ref {args.ref}"])
                rows.append({"model": name, "code": "ratio this/ref",
                             "median_s": round(ours / ref, 3)})
    finally:
        if scratch is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(scratch)], capture_output=True)
    columns = ["model", "code", "file_mb", "from_onnx_s runs", "median_s"]
    table = markdown_table(columns, rows)
    print(table)
    if not args.no_write:
        append_results("onnx_import", "ONNX import (onnx.load excluded: from_onnx only)", table,
                       [f"median of {args.repeat} imports, each in a fresh process"
                        + (f", alternating with {args.ref}" if args.ref else "")])


if __name__ == "__main__":
    main()
