#!/usr/bin/env python3
"""Pipeline benchmark: the standard O3 pipeline (relay.build's order) on ResNet-50,
MobileNetV2 and BERT-12, with the time of every pass in it.

Each repeat imports the model afresh (InferType records types in place, so a second run
on the same module would be warmer than a user's first) and runs the pipeline under a
PassContext with a PassTimingInstrument. The table
gives, per pass (by position in the pipeline, nested passes under their parent), the
median over the repeats, and the whole pipeline's median. Appended to
bench/results/pipeline.md.

    .venv/bin/python bench/bench_pipeline.py [--repeat 3] [--models resnet50,mobilenetv2,bert12]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import Row, median_of, model_path, per_model_main, report  # noqa: E402

import engine as tvm  # noqa: E402
from engine.instrument import PassTimingInstrument  # noqa: E402
from engine.relay.frontend import load  # noqa: E402
from engine.relay.transform.pipeline import standard_pipeline  # noqa: E402

MODELS = {"resnet50": "ResNet-50", "mobilenetv2": "MobileNetV2", "bert12": "BERT-12"}


def _flatten(profiles: list, depth: int = 0) -> list[tuple[str, float]]:
    """(indented pass name, ms) in pipeline order, parents before their children."""
    out: list[tuple[str, float]] = []
    for prof in profiles:
        out.append(("  " * depth + prof.name, prof.duration_us / 1000.0))
        out += _flatten(prof.children, depth + 1)
    return out


def run_once(mod: tvm.IRModule) -> tuple[float, list[tuple[str, float]]]:
    timing = PassTimingInstrument()
    with tvm.transform.PassContext(opt_level=3, instruments=[timing]):
        start = time.perf_counter()
        standard_pipeline(3)(mod)
        total = time.perf_counter() - start
        passes = _flatten(timing.profiles)
    return total, passes


def bench_model(name: str, repeat: int) -> list[Row]:
    path = str(model_path(name))
    runs = [run_once(load(path).mod) for _ in range(repeat)]
    rows: list[Row] = []
    # the sequence of passes is the same in every run; take the median per position
    for k, (pass_name, _) in enumerate(runs[0][1]):
        if pass_name.strip() == "sequential":
            continue
        rows.append({"model": MODELS[name], "pass": pass_name,
                     "median ms": median_of([r[1][k][1] for r in runs])})
    rows.append({"model": MODELS[name], "pass": "(whole O3 pipeline)",
                 "median ms": median_of([r[0] * 1000.0 for r in runs])})
    return rows


def main(argv: list[str] | None = None) -> None:
    rows, args = per_model_main(argv, __doc__.splitlines()[0], list(MODELS), bench_model)
    report("pipeline", "The O3 pipeline: time of every pass", ["model", "pass", "median ms"],
           rows, notes=[f"median of {args.repeat} runs of the whole pipeline, each on a fresh import; "
                        "nested passes are indented under their parent"],
           write=not args.no_write)


if __name__ == "__main__":
    main()
