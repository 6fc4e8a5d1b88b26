#!/usr/bin/env python3
"""Pass benchmark: time of each of FoldConstant, DeadCodeElimination, EliminateCommonSubexpr,
SimplifyInference, SimplifyExpr, CanonicalizeOps, ToANormalForm, ToGraphNormalForm,
LambdaLift and RemoveUnusedFunctions on ResNet-50, MobileNetV2 and BERT-12.

Each model is imported once with the ONNX frontend; the passes run in build order, each
on the (type-inferred) result of the previous ones, so every pass sees the IR it would
see in the pipeline. A pass is timed as the median of `--repeat` runs on the same input
(passes never change their input). Prints a table (seconds; "changed" = the pass
returned a new module; span coverage after the pass) and appends it to
bench/results/passes.md.

    .venv/bin/python bench/bench_passes.py [--repeat 3] [--models resnet50,mobilenetv2,bert12]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import Row, model_path, per_model_main, report, timed  # noqa: E402

from engine import relay  # noqa: E402
from engine.relay.analysis import span_coverage  # noqa: E402
from engine.relay.frontend import load  # noqa: E402

T = relay.transform
PIPELINE: list[tuple[str, Callable[[], Any]]] = [
    ("SimplifyInference", T.SimplifyInference),
    ("EliminateCommonSubexpr", T.EliminateCommonSubexpr),
    ("FoldConstant", T.FoldConstant),
    ("SimplifyExpr", T.SimplifyExpr),
    ("CanonicalizeOps", T.CanonicalizeOps),
    ("DeadCodeElimination", T.DeadCodeElimination),
    ("ToANormalForm", T.ToANormalForm),
    ("ToGraphNormalForm", T.ToGraphNormalForm),
    ("LambdaLift", T.LambdaLift),
    ("RemoveUnusedFunctions", T.RemoveUnusedFunctions),
]
MODELS = {"resnet50": "ResNet-50", "mobilenetv2": "MobileNetV2", "bert12": "BERT-12"}


def bench_model(name: str, repeat: int) -> list[Row]:
    mod = T.InferType()(load(str(model_path(name))).mod)
    rows: list[Row] = []
    for pass_name, make in PIPELINE:
        pass_ = make()
        timing = timed(lambda: pass_(mod), repeat=repeat)  # noqa: B023 - called right here
        new = pass_(mod)
        rows.append({"model": MODELS[name], "pass": pass_name, "median s": timing.median,
                     "best s": timing.best, "changed": new is not mod,
                     "spans": f"{span_coverage(new).ratio:.1%}"})
        mod = T.InferType()(new)
    total = sum(r["median s"] for r in rows)
    rows.append({"model": MODELS[name], "pass": "(all of the above)", "median s": total})
    return rows


def main(argv: list[str] | None = None) -> None:
    rows, args = per_model_main(argv, __doc__.splitlines()[0], list(MODELS), bench_model)
    report("passes", "Optimization passes: time per pass (first half of issue 6)",
           ["model", "pass", "median s", "best s", "changed", "spans"], rows,
           notes=[f"median of {args.repeat} runs per pass, on the output of the passes above it",
                  "the full O3 pipeline is timed by the pipeline benchmark"],
           write=not args.no_write)


if __name__ == "__main__":
    main()
