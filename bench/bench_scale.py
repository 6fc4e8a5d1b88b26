#!/usr/bin/env python3
"""Scale: synthetic chains of 1k..100k ops and a wide graph, ours and real TVM.

    .venv/bin/python bench/bench_scale.py [--sizes 1000,5000,10000,50000,100000]
                                          [--branches 2000] [--repeat 3] [--quick]
                                          [--tvm-timeout 600] [--no-tvm] [--no-build]
                                          [--no-write]

Each model goes through our import, O3 pipeline with recording and build (one subprocess
per run: bench/_ours.py), stage times are medians. Linearity: import + recorded pipeline
of chain_50000 must cost at most 11x chain_5000 (wall clock; CPU time, which a
shared machine inflates less, is reported beside it). `--no-build` leaves the build
stage out. The same files then go through real TVM
(bench/tvm_worker.py) with a time-out; where it stops (time-out, error) is recorded.
The wide graph (`wide_B`: B parallel Add/Relu/Mul branches of one input, concatenated)
is generated here with onnx.helper.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import MODEL_DIR, Row, model_path, report, run_worker
from bench_tvm import aggregate, ours_cmd, tvm_available, tvm_cmd

SIZES = (1000, 5000, 10000, 50000, 100000)
QUICK_SIZES = (1000, 5000)
LINEAR_LIMIT = 11.0
COLUMNS = ("model", "ops", "status", "import_s", "pipeline_s", "record_s", "build_s",
           "total_s", "us_per_op", "import_cpu_s", "pipeline_cpu_s", "peak_rss_mb", "snapshots",
           "snapshot_mb")
TVM_COLUMNS = ("model", "ops", "status", "import_s", "pipeline_s", "total_s", "peak_rss_mb",
               "error")


def wide_model(branches: int, width: int = 16) -> Path:
    """`wide_B.onnx`: B parallel branches (Add const, Relu, Mul const) of one input,
    concatenated on axis 1; generated once and cached in bench/models/."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    path = MODEL_DIR / f"wide_{branches}.onnx"
    if path.exists():
        return path
    rng = np.random.default_rng(branches)
    nodes, inits, outs = [], [], []
    for b in range(branches):
        add_c, mul_c = f"branch{b}.bias", f"branch{b}.scale"
        inits += [numpy_helper.from_array(rng.standard_normal(width).astype("float32"), add_c),
                  numpy_helper.from_array(rng.standard_normal(width).astype("float32"), mul_c)]
        nodes += [helper.make_node("Add", ["x", add_c], [f"b{b}_a"], name=f"branch{b}/add"),
                  helper.make_node("Relu", [f"b{b}_a"], [f"b{b}_r"], name=f"branch{b}/relu"),
                  helper.make_node("Mul", [f"b{b}_r", mul_c], [f"b{b}_m"], name=f"branch{b}/mul")]
        outs.append(f"b{b}_m")
    nodes.append(helper.make_node("Concat", outs, ["y"], name="concat", axis=1))
    graph = helper.make_graph(
        nodes, f"wide_{branches}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width * branches])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    onnx.save_model(model, str(tmp))
    tmp.replace(path)
    return path


def ours_row(name: str, ops: int, path: Path, repeat: int, timeout: float,
             build: bool = True) -> Row:
    def cmd(disabled: str | None) -> list[str]:
        return ours_cmd(path, disabled) + ([] if build else ["--no-build"])

    first = run_worker(cmd(None), timeout)
    runs = [first] + [run_worker(cmd(first.get("disabled")), timeout)
                      for _ in range(repeat - 1)]
    row = aggregate(runs)
    row.update({"model": name, "ops": ops})
    if isinstance(row.get("total_s"), float):
        row["us_per_op"] = row["total_s"] / ops * 1e6
    return row


def linearity(rows: list[Row]) -> list[str]:
    by_ops = {r["ops"]: r for r in rows if r["model"].startswith("chain_")}
    small, big = by_ops.get(5000), by_ops.get(50000)
    if not small or not big:
        return ["linearity: needs chain_5000 and chain_50000 (not both measured)"]

    def cost(row: Row, clock: str) -> float | None:
        a, b = row.get(f"import_{clock}"), row.get(f"pipeline_{clock}")
        return a + b if isinstance(a, float) and isinstance(b, float) else None

    notes = []
    for clock, what in (("s", "wall clock"), ("cpu_s", "CPU time")):
        a, b = cost(small, clock), cost(big, clock)
        if a is None or b is None:
            notes.append(f"linearity ({what}): a run failed or has no such time")
            continue
        ratio = b / a
        verdict = "met" if ratio <= LINEAR_LIMIT else "NOT met"
        notes.append(f"linearity (import + recorded pipeline, {what}): chain_50000 / "
                     f"chain_5000 = {ratio:.2f}x (limit {LINEAR_LIMIT:.0f}x for 10x the ops): "
                     f"{verdict}")
    return notes + build_linearity(small, big)


BUILD_LINEAR_LIMIT = 11.0


def build_linearity(small: Row, big: Row) -> list[str]:
    """The build's own ratio (LowerTE, graph codegen and the kernel records a run stores)."""
    a, b = small.get("build_s"), big.get("build_s")
    if not (isinstance(a, float) and isinstance(b, float) and a > 0):
        return []
    ratio = b / a
    verdict = "met" if ratio <= BUILD_LINEAR_LIMIT else "NOT met"
    return [f"linearity (build): chain_50000 / chain_5000 = {ratio:.2f}x "
            f"(limit {BUILD_LINEAR_LIMIT:.0f}x): {verdict}; kernels: "
            f"{small.get('build_nodes')} and {big.get('build_nodes')}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None)
    parser.add_argument("--branches", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--tvm-timeout", type=float, default=600)
    parser.add_argument("--no-tvm", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--no-build", action="store_true", help="import + recorded pipeline")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        list(QUICK_SIZES if args.quick else SIZES)
    branches = 100 if args.quick else args.branches
    repeat = 1 if args.quick else max(1, args.repeat)
    models = [(f"chain_{n}", n, model_path(f"chain_{n}")) for n in sizes]
    models.append((f"wide_{branches}", 3 * branches + 1, wide_model(branches)))
    rows = []
    for name, ops, path in models:
        rows.append(ours_row(name, ops, path, repeat, args.timeout, not args.no_build))
        print(f"  ours {name}: {rows[-1].get('status')} {rows[-1].get('total_s')}",
              file=sys.stderr)
    notes = linearity(rows) + [f"{r['model']}: {r['error']}" for r in rows if r.get("error")]
    notes += sorted({f"build: {r['build']}" for r in rows if r.get("build")})
    report("scale", f"Scale, ours ({repeat} run(s) each, medians)", COLUMNS, rows, notes,
           write=not args.no_write)
    if args.no_tvm:
        return 0
    reason = tvm_available()
    tvm_rows = []
    for name, ops, path in models:
        row = {"status": reason} if reason else run_worker(tvm_cmd(path)[:-1],
                                                            args.tvm_timeout)
        row.update({"model": name, "ops": ops})
        tvm_rows.append(row)
        print(f"  tvm {name}: {row.get('status')} {row.get('total_s')}", file=sys.stderr)
    report("scale", f"Scale, Apache TVM 0.27 (one run each, time-out {args.tvm_timeout:.0f} s)",
           TVM_COLUMNS, tvm_rows, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
