#!/usr/bin/env python3
"""Run every benchmark, one after the other (`make bench`).

    .venv/bin/python bench/run_all.py [--quick] [--only NAME[,NAME...]] [--list]

Each benchmark runs as its own process (`bench/bench_NAME.py`), so one failing or
missing benchmark is reported and the others still run. Each one prints its table and
appends it to bench/results/NAME.md. `--quick` is a short smoke run: each benchmark
gets its own quick arguments, and bench/results/ is restored afterwards (a smoke run
records nothing).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH, RESULTS, ROOT, markdown_table


@dataclass(frozen=True, slots=True)
class Benchmark:
    name: str
    full: tuple[str, ...] = ()
    quick: tuple[str, ...] = ("--quick", "--no-write")

    @property
    def script(self) -> Path:
        return BENCH / f"bench_{self.name}.py"


# Order: cheap and independent first; the long side-by-side with TVM last.
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("recording"),
    Benchmark("breakpoints", quick=("--repeat", "1", "--models", "mlp", "--no-write")),
    Benchmark("scale"),
    Benchmark("browser"),
    Benchmark("graph", quick=("--models", "resnet50", "--repeat", "1", "--no-write")),
    Benchmark("interpreter", quick=("--repeat", "1", "--models", "mlp")),
    Benchmark("explorer", quick=("mlp",)),
    Benchmark("upload", quick=("--models", "mlp", "--repeat", "1", "--no-write")),
    Benchmark("llm", quick=("--small", "--no-write")),
    Benchmark("debug", quick=("--models", "mlp", "--no-write")),
    Benchmark("passes"),
    Benchmark("pipeline", quick=("--models", "mobilenetv2", "--repeat", "1", "--no-write")),
    Benchmark("build", quick=("--models", "mobilenetv2", "--no-write")),
    Benchmark("onnx_torch_export"),
    Benchmark("tvm"),
)


def accepts(script: Path, flag: str) -> bool:
    """Whether a benchmark's --help mentions `flag` (others' scripts may not take it)."""
    try:
        out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                             text=True, timeout=120, cwd=str(ROOT)).stdout
    except subprocess.TimeoutExpired:
        return False
    return flag in out


def arguments(bench: Benchmark, quick: bool) -> list[str]:
    if not quick:
        return list(bench.full)
    args = list(bench.quick)
    if args and args[0].startswith("--") and not accepts(bench.script, args[0]):
        return []  # the script has no such option: run it with its defaults
    if "--no-write" in args and not accepts(bench.script, "--no-write"):
        args.remove("--no-write")
    return args


def run_one(bench: Benchmark, quick: bool) -> dict[str, object]:
    if not bench.script.exists():
        return {"benchmark": bench.name, "status": f"not available: {bench.script.name} missing",
                "seconds": 0.0}
    cmd = [sys.executable, str(bench.script), *arguments(bench, quick)]
    print(f"\n=== {bench.name}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=str(ROOT))
    status = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
    return {"benchmark": bench.name, "status": status, "seconds": time.perf_counter() - t0}


def snapshot_results() -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in RESULTS.glob("*.md")}


def restore_results(saved: dict[Path, bytes]) -> None:
    """Undo what a smoke run appended: saved files get their bytes back, new ones go."""
    for path in RESULTS.glob("*.md"):
        if path not in saved:
            path.unlink()
    for path, data in saved.items():
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run of each")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names")
    parser.add_argument("--list", action="store_true", help="list the benchmarks")
    args = parser.parse_args(argv)
    known = {b.name: b for b in BENCHMARKS}
    if args.list:
        print("\n".join(known))
        return 0
    chosen = list(BENCHMARKS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            parser.error(f"unknown benchmark(s) {unknown}; known: {', '.join(known)}")
        chosen = [known[n] for n in names]
    saved = snapshot_results() if args.quick else None
    try:
        rows = [run_one(b, args.quick) for b in chosen]
    finally:
        if saved is not None:
            restore_results(saved)
    print("\n" + markdown_table(("benchmark", "status", "seconds"), rows))
    return 0 if all(str(r["status"]).startswith(("ok", "not available")) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
