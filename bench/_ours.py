"""Our side of the benchmarks: import -> O3 pipeline (recorded or not) -> build, per stage.

Stages are timed in wall-clock seconds (`*_s`); import and the recorded pipeline also in
this process's CPU seconds (`*_cpu_s`), which other work on a shared machine inflates far
less than the wall clock.

The recording is the explorer's own `RecordingInstrument` over an in-memory `Store`:
every pass's before/after module printed (text + source map) and stored, exactly what
a browser session gets. `run_ours(path)` returns one row of stage times, snapshot
counts and bytes, and per-pass (pass time, recording time) pairs; a stage that has not
landed yet is reported as "not available: <what>" in the row instead of raising.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.ir import IRModule
from explorer import compiler
from explorer.runs.recording import RecordingInstrument, SnapshotRecorder
from explorer.store import Store

Row = dict[str, Any]


class CountingStore(Store):
    """An in-memory Store that also counts the raw bytes of every snapshot it stores."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.text_bytes = 0
        self.map_entries = 0

    def add_snapshot(self, run_id: str, text: str, source_map: list[dict[str, Any]]) -> int:
        self.text_bytes += len(text.encode())
        self.map_entries += len(source_map)
        return super().add_snapshot(run_id, text, source_map)


class TimedRecording(RecordingInstrument):
    """The recording instrument, with the time its own hooks take charged to each pass."""

    def __init__(self, recorder: SnapshotRecorder) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        super().__init__(recorder, lambda etype, data: self.events.append((etype, data)))
        self.hook_s: dict[int, float] = defaultdict(float)  # pass_index -> seconds

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        index = self._next_index
        t0 = time.perf_counter()
        super().run_before_pass(mod, info)
        self.hook_s[index] += time.perf_counter() - t0

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        index = self._stack[-1].index if self._stack else -1
        t0 = time.perf_counter()
        super().run_after_pass(mod, info)
        self.hook_s[index] += time.perf_counter() - t0


@dataclass
class OursResult:
    row: Row = field(default_factory=dict)
    passes: list[Row] = field(default_factory=list)
    final: IRModule | None = None


def import_model(path: Path) -> tuple[IRModule, float]:
    from engine.relay import frontend

    t0 = time.perf_counter()
    result = frontend.load(str(path))
    return result.mod, time.perf_counter() - t0


def failed_pass(exc: BaseException) -> str | None:
    """The innermost pass named by a chain of PassErrors (None if no pass is named)."""
    name = None
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        name = getattr(node, "pass_name", None) or name
        node = getattr(node, "cause", None) or node.__cause__
    return name


def working_disabled(mod: IRModule, opt_level: int = 3, tries: int = 4
                     ) -> tuple[tuple[str, ...], list[str]]:
    """Passes to disable so the standard pipeline completes on `mod` (empty when it runs
    as is), with one note per pass that had to go; a failure no pass names re-raises."""
    disabled: list[str] = []
    notes: list[str] = []
    for _ in range(tries):
        try:
            pipeline_plain(mod, opt_level, tuple(disabled))
            return tuple(disabled), notes
        except Exception as exc:  # a pass of others' pipeline failed: name it, route around
            name = failed_pass(exc)
            if name is None or name in disabled or name == "InferType":
                raise
            disabled.append(name)
            notes.append(f"{name} disabled: {str(exc).splitlines()[0][:200]}")
    raise RuntimeError(f"the pipeline still fails with {disabled} disabled")


def optimize_passes(opt_level: int, disabled: tuple[str, ...]) -> list[Any]:
    """relay.build's optimization stage (the standard pipeline) under these options: what
    a run applies before LowerTE."""
    return compiler.run_passes(None, False, compiler.pass_context(opt_level, (), disabled, []))


def pipeline_plain(mod: IRModule, opt_level: int = 3,
                   disabled: tuple[str, ...] = ()) -> tuple[IRModule, float]:
    passes = optimize_passes(opt_level, disabled)
    t0 = time.perf_counter()
    final = compiler.compile_module(mod, {}, passes, False,
                                    compiler.pass_context(opt_level, (), disabled, [])).mod
    return final, time.perf_counter() - t0


def pipeline_recorded(mod: IRModule, opt_level: int = 3,
                      disabled: tuple[str, ...] = ()) -> tuple[OursResult, float]:
    store = CountingStore()
    recorder = SnapshotRecorder(store, "bench")
    instrument = TimedRecording(recorder)
    passes = optimize_passes(opt_level, disabled)
    t0 = time.perf_counter()
    recorder.record(mod)
    final = compiler.compile_module(
        mod, {}, passes, False, compiler.pass_context(opt_level, (), disabled, [instrument])).mod
    recorder.record(final)
    elapsed = time.perf_counter() - t0
    out = OursResult(final=final)
    out.passes = _per_pass(instrument)
    leaves = [p for p in out.passes if p["leaf"]]
    out.row = {"snapshots": recorder.num_printed, "passes": len(leaves),
               "changed": sum(p["changed"] for p in leaves),
               "snapshot_mb": store.text_bytes / 2**20,
               "stored_mb": store.run_bytes("bench") / 2**20,
               "record_s": recorder.print_ms / 1e3,
               "pass_s": sum(p["pass_s"] for p in leaves)}
    return out, elapsed


def _per_pass(instrument: TimedRecording) -> list[Row]:
    finished = [d for etype, d in instrument.events if etype == "pass_finished"]
    return [{"name": d["name"], "pass_s": d["elapsed_ms"] / 1e3, "changed": d["changed"],
             "leaf": d["leaf"], "nodes": d["stats"]["nodes"],
             "record_s": instrument.hook_s.get(d["pass_index"], 0.0)} for d in finished]


def build(mod: IRModule, opt_level: int = 3, disabled: tuple[str, ...] = ()
          ) -> tuple[int, float]:
    """(kernels, seconds) of the rest of relay.build on an optimized module (LowerTE, graph
    codegen) and the kernel records a run stores (call sites and source; the steps are made
    when a kernel is opened: bench_build.py times them)."""
    from explorer.runs.schedules import schedules_of

    ctx = compiler.pass_context(opt_level, (), disabled, [])
    lowering = compiler.run_passes(None, True, ctx)[1:]
    t0 = time.perf_counter()
    lib = compiler.compile_module(mod, {}, lowering, True, ctx).lib
    assert lib is not None
    nodes = schedules_of(lib)
    return len(nodes), time.perf_counter() - t0


def not_available(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else ""
    return f"not available: {type(err).__name__}: {text}"[:160]


def run_ours(path: Path, opt_level: int = 3, do_build: bool = True,
             disabled: tuple[str, ...] | None = None) -> OursResult:
    """Import + recorded O3 pipeline + build of one model file, each stage timed.

    `disabled=None` first finds which passes (if any) must be disabled for the pipeline
    to complete (see `working_disabled`; that probe run is not timed)."""
    cpu = time.process_time()
    mod, import_s = import_model(path)
    import_cpu_s = time.process_time() - cpu
    notes: list[str] = []
    if disabled is None:
        disabled, notes = working_disabled(mod, opt_level)
    cpu = time.process_time()
    result, pipe_s = pipeline_recorded(mod, opt_level, disabled)
    result.row.update({"import_s": import_s, "pipeline_s": pipe_s, "import_cpu_s": import_cpu_s,
                       "pipeline_cpu_s": time.process_time() - cpu,
                       "disabled": ",".join(disabled) or "none", "notes": notes})
    build_s = 0.0
    if do_build and result.final is not None:
        try:
            nodes, build_s = build(result.final, opt_level, disabled)
            result.row.update({"build_s": build_s, "build_nodes": nodes})
        except (ImportError, AttributeError, NotImplementedError) as err:
            result.row["build"] = not_available(err)
    result.row["total_s"] = import_s + pipe_s + build_s
    return result


def run_plain(path: Path, opt_level: int = 3, disabled: tuple[str, ...] | None = None) -> Row:
    """Import + the same pipeline without any instrument (the recording's baseline)."""
    mod, import_s = import_model(path)
    notes: list[str] = []
    if disabled is None:
        disabled, notes = working_disabled(mod, opt_level)
    cpu = time.process_time()
    _, pipe_s = pipeline_plain(mod, opt_level, disabled)
    return {"import_s": import_s, "pipeline_s": pipe_s,
            "pipeline_cpu_s": time.process_time() - cpu,
            "disabled": ",".join(disabled) or "none", "notes": notes}


def main(argv: list[str] | None = None) -> int:
    """Worker mode: one model, one JSON line (stage times, snapshots, peak RSS)."""
    import argparse

    from _common import emit_json, peak_rss_mb

    parser = argparse.ArgumentParser(description="our side of one benchmark run")
    parser.add_argument("model", type=Path)
    parser.add_argument("--disabled", default=None, help="comma-separated; default: probe")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--per-pass", action="store_true")
    args = parser.parse_args(argv)
    from explorer.runs.execution import tune_gc_for_compilation

    tune_gc_for_compilation()  # as a run's child process does
    disabled = None if args.disabled is None else tuple(p for p in args.disabled.split(",")
                                                        if p and p != "none")
    try:
        if args.no_record:
            row = run_plain(args.model, disabled=disabled)
        else:
            result = run_ours(args.model, do_build=not args.no_build, disabled=disabled)
            row = result.row
            if args.per_pass:
                row["per_pass"] = result.passes
        row["status"] = "ok"
    except RecursionError as exc:
        row = {"status": "RecursionError", "error": str(exc)[:200]}
    except Exception as exc:  # a failed stage is a result: reported, not raised
        row = {"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    row["peak_rss_mb"] = peak_rss_mb()
    emit_json(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
