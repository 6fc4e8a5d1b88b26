#!/usr/bin/env python3
"""Recording overhead: our O3 pipeline with and without the explorer's RecordingInstrument.

    .venv/bin/python bench/bench_recording.py [--models resnet50] [--repeat 3] [--quick]
                                              [--no-write]

Every run is a fresh process (bench/_ours.py, build off); plain and recorded runs take
turns, medians over `--repeat` of each, on the wall and the CPU clock. Goal (DESIGN.md budgets): recording a snapshot costs less than the pass it
records, on ResNet-50; so the recording overhead of the whole pipeline must stay below
the time of its passes. A second table gives, per pass, its time and the time its
recording hooks took (printing + source map + storing the before/after snapshots).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH, Row, load_average, median_of, model_path, report, run_worker
from bench_tvm import aggregate

COLUMNS = ("model", "plain pipeline_s", "recorded pipeline_s", "overhead_s",
           "overhead / pass time", "overhead / pass time (cpu)", "snapshots", "snapshot_mb",
           "peak_rss_mb plain", "peak_rss_mb recorded", "load avg", "goal met")
PASS_COLUMNS = ("#", "pass", "changed", "pass_ms", "record_ms", "record / pass")


def worker(path: Path, disabled: str | None, record: bool) -> list[str]:
    cmd = [sys.executable, str(BENCH / "_ours.py"), str(path), "--no-build"]
    cmd += ["--per-pass"] if record else ["--no-record"]
    return cmd + (["--disabled", disabled] if disabled else [])


def per_pass(runs: list[Row]) -> list[Row]:
    """Leaf passes with median pass and recording times over the recorded runs."""
    lists = [r["per_pass"] for r in runs if r.get("status") == "ok" and r.get("per_pass")]
    if not lists:
        return []
    rows = []
    for i, first in enumerate(lists[0]):
        if not first["leaf"]:
            continue
        same = [lst[i] for lst in lists if i < len(lst) and lst[i]["name"] == first["name"]]
        pass_ms = median_of([p["pass_s"] for p in same]) * 1e3
        rec_ms = median_of([p["record_s"] for p in same]) * 1e3
        rows.append({"#": i, "pass": first["name"], "changed": first["changed"],
                     "pass_ms": pass_ms, "record_ms": rec_ms,
                     "record / pass": rec_ms / pass_ms if pass_ms > 0 else None})
    return rows


def bench_model(name: str, repeat: int, timeout: float) -> tuple[Row, list[Row]]:
    path = model_path(name)
    # A first run finds what must be disabled; it warms its pipeline up doing so, so it is
    # not timed. Then plain and recorded runs take turns, each in a fresh process, so a
    # load that drifts during the benchmark weighs on both sides alike.
    load_before = load_average()
    disabled = run_worker(worker(path, None, False), timeout).get("disabled")
    recorded: list[Row] = []
    plain: list[Row] = []
    for _ in range(repeat):
        recorded.append(run_worker(worker(path, disabled, True), timeout))
        plain.append(run_worker(worker(path, disabled, False), timeout))
    rec, base = aggregate(recorded), aggregate(plain)
    row: Row = {"model": name, "plain pipeline_s": base.get("pipeline_s"),
                "recorded pipeline_s": rec.get("pipeline_s"), "snapshots": rec.get("snapshots"),
                "snapshot_mb": rec.get("snapshot_mb"), "peak_rss_mb plain": base.get("peak_rss_mb"),
                "peak_rss_mb recorded": rec.get("peak_rss_mb"),
                "disabled": rec.get("disabled"), "error": rec.get("error") or base.get("error"),
                "load avg": f"{load_before:.1f} -> {load_average():.1f}"}
    cpu_a, cpu_b = base.get("pipeline_cpu_s"), rec.get("pipeline_cpu_s")
    if isinstance(cpu_a, float) and isinstance(cpu_b, float) and cpu_a > 0:
        row["overhead / pass time (cpu)"] = (cpu_b - cpu_a) / cpu_a
    a, b = row["plain pipeline_s"], row["recorded pipeline_s"]
    if isinstance(a, float) and isinstance(b, float) and a > 0:
        row["overhead_s"] = b - a
        row["overhead / pass time"] = (b - a) / a
        ratios = [row["overhead / pass time"], row.get("overhead / pass time (cpu)", 0.0)]
        row["goal met"] = "yes" if max(ratios) <= 1.0 else "no"  # on the wall and CPU clocks
    return row, per_pass(recorded)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--quick", action="store_true", help="mobilenetv2, one run")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    names = ["mobilenetv2"] if args.quick else args.models.split(",")
    repeat = 1 if args.quick else max(1, args.repeat)
    rows: list[Row] = []
    for name in names:
        row, passes = bench_model(name, repeat, args.timeout)
        rows.append(row)
        notes = [f"disabled to complete the pipeline: {row.get('disabled')}"]
        if row.get("error"):
            notes.append(f"error: {row['error']}")
        report("recording", f"{name}: per-pass recording cost (medians of {repeat})",
               PASS_COLUMNS, passes, notes, write=not args.no_write)
    report("recording", f"Recording overhead ({repeat} run(s) each, medians)", COLUMNS, rows,
           ["overhead = recorded - plain pipeline wall time; goal: overhead <= pass time on "
            "both clocks; (cpu): the same from the processes' CPU seconds, which a loaded "
            "machine inflates less; load avg: 1-minute, before -> after the model's runs"],
           write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
