#!/usr/bin/env python3
"""relay.build with schedule records: time and the memory the records take.

For ResNet-50, MobileNetV2, BERT-12 and a 5000-op chain (bench/make_models.py): the
time of relay.build (O3 pipeline + FuseOps + lowering every distinct fused function
once to a recorded TE schedule: `kernels`, called from `calls` graph nodes), the kernel
records a run stores (call sites and source), the steps of one kernel as the explorer
makes them when a user opens it (from its source: parse, lower, replay every snapshot to
a loop nest and three TEDD views; median and slowest kernel), and every step of every
kernel; with tracemalloc the memory retained by the build result and by the steps;
records on vs off for the build itself.

    .venv/bin/python bench/bench_build.py [--no-write] [--models resnet50,mobilenetv2,...]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Row, model_path, report

LABELS = {"resnet50": "ResNet-50", "mobilenetv2": "MobileNetV2", "bert12": "BERT-12"}


def _build(mod: Any, params: Any, keep: bool) -> Any:
    import engine as tvm
    from engine import relay

    with tvm.transform.PassContext(opt_level=3, config={"te.keep_schedule_record": keep}):
        return relay.build(mod, target="llvm", params=params)


def _measured(fn: Any) -> tuple[Any, float, float]:
    """(result, seconds, MiB retained by the result) of fn()."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    gc.collect()
    retained = (tracemalloc.get_traced_memory()[0] - before) / 2**20
    tracemalloc.stop()
    return result, seconds, retained


def bench_model(name: str) -> list[Row]:
    import onnx

    from engine.relay.frontend import from_onnx

    mod, params = from_onnx(onnx.load(str(model_path(name))))
    _build(mod, params, True)  # warm-up: imports, op registries
    rows = []
    retained = {}
    for keep in (False, True):
        start = time.perf_counter()
        lib = _build(mod, params, keep)
        seconds = time.perf_counter() - start
        lowered = list(lib.build_module.lowered.values())
        records = sum(len(low.schedule.primitive_record) for low in lowered)
        calls = sum(len(low.calls) for low in lowered)
        del lib
        _, _, retained[keep] = _measured(lambda k=keep: _build(mod, params, k))
        rows.append({"model": LABELS.get(name, name), "records": "on" if keep else "off",
                     "what": "relay.build", "kernels": len(lowered), "calls": calls,
                     "snapshots": records,
                     "seconds": round(seconds, 2), "MiB": round(retained[keep], 1)})
    rows.append({"model": LABELS.get(name, name), "records": "on", "kernels": len(lowered),
                 "what": "the records (on - off)", "snapshots": records, "seconds": "-",
                 "MiB": round(retained[True] - retained[False], 2)})
    rows += _explorer_rows(LABELS.get(name, name), _build(mod, params, True), calls)
    lowered = list(_build(mod, params, True).build_module.lowered.values())
    start = time.perf_counter()
    count = sum(len(low.steps()) for low in lowered)
    step_s = time.perf_counter() - start
    lowered = list(_build(mod, params, True).build_module.lowered.values())
    _, _, steps_mib = _measured(lambda: [low.steps() for low in lowered])
    rows.append({"model": LABELS.get(name, name), "records": "on", "kernels": len(lowered),
                 "what": "all steps (python, loop nest, TEDD)", "snapshots": count,
                 "seconds": round(step_s, 2), "MiB": round(steps_mib, 1)})
    return rows


def _explorer_rows(label: str, lib: Any, calls: int) -> list[Row]:
    """The kernel records a run stores, and the steps of each kernel made from its source
    as when a user opens it (median and slowest)."""
    from explorer.runs.schedules import schedules_of, steps_json

    start = time.perf_counter()
    records = schedules_of(lib)
    record_s = time.perf_counter() - start
    opened = []
    for record in records:
        start = time.perf_counter()
        steps_json(record)
        opened.append(time.perf_counter() - start)
    opened.sort()
    return [{"model": label, "records": "on", "what": "kernel records (as a run stores them)",
             "kernels": len(records), "calls": calls, "snapshots": "-",
             "seconds": round(record_s, 3), "MiB": "-"},
            {"model": label, "records": "on", "what": "one kernel opened: median / slowest",
             "kernels": len(records), "calls": calls,
             "snapshots": "-", "seconds": f"{opened[len(opened) // 2]:.3f} / {opened[-1]:.3f}",
             "MiB": "-"}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,mobilenetv2,bert12,chain_5000")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows: list[Row] = []
    for name in args.models.split(","):
        rows.extend(bench_model(name))
    notes = ["relay.build: O3 pipeline, FuseOps, every distinct fused function lowered once to "
             "one recorded TE schedule (TECompiler's structural cache: `calls` graph nodes "
             "share `kernels` kernels; the record is a list of steps, replayed on demand)",
             "kernel records: what a run stores per kernel (its call sites and source); the "
             "steps are made when a user opens the kernel (one kernel opened), never up front",
             "MiB: memory retained (tracemalloc) by the build result (mostly the weights, "
             "as graph params) / by the materialized steps (every snapshot's loop nest and "
             "TEDD texts, as the explorer stores them); seconds measured without tracemalloc",
             "records on - off: TE keeps its steps either way (the config only hides them), "
             "and a step is a few small tuples, so the record itself costs next to nothing"]
    report("build", "relay.build with schedule records",
           ["model", "records", "what", "kernels", "calls", "snapshots", "seconds", "MiB"], rows,
           notes,
           write=not args.no_write)


if __name__ == "__main__":
    main()
