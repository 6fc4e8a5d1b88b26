"""Real Apache TVM's side of bench_tvm.py / bench_scale.py, run in .venv-tvm's python.

    .venv-tvm/bin/python bench/tvm_worker.py MODEL.onnx [--pipeline zero] [--no-record]
                                             [--build]

Imports the ONNX file with `tvm.relax.frontend.onnx.from_onnx`, runs TVM's default
optimisation pipeline (`relax.get_pipeline("zero")`: LegalizeOps, AnnotateTIROpPattern,
FoldConstant, FuseOps, FuseTIR) under a PassContext whose `pass_instrument` keeps
`mod.script()` after every pass (the equivalent of our recording), optionally compiles
(`tvm.compile`, target llvm), and prints one JSON line: stage times, snapshot count and
bytes, peak RSS. Standalone on purpose: it must not import our engine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_recorder(record: bool) -> Any:
    import tvm

    @tvm.instrument.pass_instrument
    class ScriptRecorder:
        """Keeps the TVMScript text of the module after every pass."""

        def __init__(self) -> None:
            self.texts: list[str] = []
            self.names: list[str] = []
            self.seconds = 0.0

        def run_after_pass(self, mod: Any, info: Any) -> None:
            self.names.append(str(info.name))
            if not record:
                return
            t0 = time.perf_counter()
            self.texts.append(mod.script())
            self.seconds += time.perf_counter() - t0

    return ScriptRecorder()


def run(path: Path, pipeline_name: str, record: bool, build: bool) -> dict[str, Any]:
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    row: dict[str, Any] = {"status": "ok", "tvm": tvm.__version__}
    t0 = time.perf_counter()
    mod = from_onnx(onnx.load(str(path)), keep_params_in_input=False)
    row["import_s"] = time.perf_counter() - t0
    recorder = make_recorder(record)
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3, instruments=[recorder]):
        mod = relax.get_pipeline(pipeline_name)(mod)
    row["pipeline_s"] = time.perf_counter() - t0
    row.update({"record_s": recorder.seconds, "passes": len(recorder.names),
                "snapshots": len(recorder.texts),
                "snapshot_mb": sum(len(t.encode()) for t in recorder.texts) / 2**20})
    del recorder
    if build:
        t0 = time.perf_counter()
        tvm.compile(mod, target="llvm")
        row["build_s"] = time.perf_counter() - t0
    row["total_s"] = row["import_s"] + row["pipeline_s"] + row.get("build_s", 0.0)
    row["peak_rss_mb"] = peak_rss_mb()
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--pipeline", default="zero")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--build", action="store_true")
    args = parser.parse_args(argv)
    try:
        row = run(args.model, args.pipeline, not args.no_record, args.build)
    except Exception as exc:  # reported as a row: where real TVM stops is a result too
        row = {"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}",
               "peak_rss_mb": peak_rss_mb()}
    sys.stdout.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
