"""One execution of a pipeline run, wherever it happens (a worker process or the CLI).

`Execution.execute()` imports the session's model from its stored file, runs
the pipeline under a PassContext whose instruments include the
RecordingInstrument, then `relay.build` under a PassContext with the same
options, and returns an `Outcome`: the run's status, summary and terminal
event. It publishes every other event itself (through `publish`); the caller
decides when and how the terminal event is published (`finish_run`), so a
supervising server can overrule it (a cancel that raced the last pass).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.instrument import PassInstrument
from engine.ir import IRModule
from explorer import engine_bridge
from explorer.build import build_schedules
from explorer.hub import EventHub
from explorer.numerics import NumericsChecker
from explorer.planning import count_planned
from explorer.protocol import (
    BUILD_FINISHED,
    BUILD_STARTED,
    RUN_CANCELLED,
    RUN_FAILED,
    RUN_FINISHED,
    RUN_STARTED,
    ApiError,
    RunOptions,
    RunSummary,
)
from explorer.recording import RecordingInstrument, RunCancelled, SnapshotRecorder
from explorer.sessions import SessionService

Publish = Callable[[str, dict[str, Any]], None]
PipelineHook = Callable[[Any, RunOptions], Any]

TERMINAL_TYPES = {"finished": RUN_FINISHED, "failed": RUN_FAILED, "cancelled": RUN_CANCELLED}


GC_THRESHOLD = (100_000, 50, 100)
"""Collector thresholds for a process that compiles: passes allocate many short-lived
nodes and no cycles of note, and at the default (700, 10, 10) the collector's passes
over a big module made the pipeline grow faster than the model (chain_50000 ran 1.6x
slower; bench/bench_scale.py)."""


def tune_gc_for_compilation() -> None:
    """Raise the collector's thresholds; only for processes that do nothing but compile
    (a run's child process, `explorer run`), never for the server."""
    gc.set_threshold(*GC_THRESHOLD)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended: its summary (status set) and its terminal event's data."""

    summary: RunSummary
    data: dict[str, Any] | None = None  # None: run_finished {"summary": summary}

    @property
    def status(self) -> str:
        return str(self.summary["status"])

    @property
    def event_type(self) -> str:
        return TERMINAL_TYPES[self.status]

    def event_data(self) -> dict[str, Any]:
        return {"summary": self.summary} if self.data is None else self.data

    def to_json(self) -> dict[str, Any]:
        return {"summary": dict(self.summary), "data": self.data}

    @staticmethod
    def from_json(raw: dict[str, Any]) -> Outcome:
        return Outcome(raw["summary"], raw.get("data"))


def finish_run(store: Any, hub: EventHub, outcome: Outcome) -> None:
    """Persist the final summary, then publish the terminal event."""
    summary = outcome.summary
    store.update_run(summary)
    hub.publish(summary["id"], summary["session_id"], outcome.event_type, outcome.event_data())


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a chain of wrappers (PassError keeps it as `cause`)."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None) or exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


def was_cancelled(exc: BaseException) -> bool:
    return isinstance(exc, RunCancelled) or isinstance(root_cause(exc), RunCancelled)


def build_pipeline(options: RunOptions, hooks: Sequence[PipelineHook] = ()) -> Any:
    """The pass a run executes: the standard or explicit pipeline, through the plugins'
    hooks."""
    pipeline = engine_bridge.build_pipeline(options.opt_level, options.passes)
    for hook in hooks:
        pipeline = hook(pipeline, options)
    return pipeline


def run_context(options: RunOptions, instruments: list[Any]) -> Any:
    """The PassContext of a run's pipeline and build."""
    return engine_bridge.pass_context(options.opt_level, options.required_pass,
                                      options.disabled_pass, instruments)


def started_data(options: RunOptions, initial: int, pipeline: Any) -> dict[str, Any]:
    """run_started's data: the options, the initial snapshot and the exact pass plan."""
    return {"options": options.to_json(), "initial_snapshot": initial,
            "num_passes_planned": count_planned(pipeline, run_context(options, []))}


def announce_start(store: Any, publish: Publish, run_id: str, session_snapshot: int,
                   options: RunOptions, hooks: Sequence[PipelineHook] = ()) -> int:
    """Publish run_started with a copy of the session's upload snapshot as the run's
    initial snapshot (before the model is imported again); returns its id."""
    initial = store.copy_snapshot(session_snapshot, run_id)
    publish(RUN_STARTED, started_data(options, initial, build_pipeline(options, hooks)))
    return initial


class CancelCheck(PassInstrument):
    """Stops a pass sequence (the build's) at the next pass once the run is cancelled."""

    def __init__(self, cancel: threading.Event) -> None:
        super().__init__()
        self.cancel = cancel

    def should_run(self, mod: IRModule, info: Any) -> bool:
        if self.cancel.is_set():
            raise RunCancelled("the run was cancelled")
        return True


class Execution:
    """Runs one pipeline and publishes its events (see module docstring)."""

    def __init__(self, store: Any, sessions: SessionService, publish: Publish, run_id: str,
                 session_id: str, options: RunOptions, cancel: threading.Event | None = None,
                 hooks: Sequence[PipelineHook] = (), announced: int | None = None) -> None:
        self.store = store
        self.sessions = sessions
        self.publish = publish
        self.summary = store.run(run_id)
        self.run_id = run_id
        self.session_id = session_id
        self.options = options
        self.cancel = cancel or threading.Event()
        self.hooks = tuple(hooks)
        self.announced = announced  # the initial snapshot of a run_started already published
        self.started = time.perf_counter()
        self.instrument: RecordingInstrument | None = None
        self.checker: NumericsChecker | None = None

    def execute(self) -> Outcome:
        try:
            mod = self._prepare()
            final = self._pipeline(mod)
            self._check_cancel()
            if self.options.build:
                self._build(final)
                self._check_cancel()
        except ApiError as err:
            return self._fail(None, err.message, err.code)
        except Exception as exc:  # any failure ends the run cleanly; the pass is named
            if was_cancelled(exc):
                return self._outcome("cancelled", {})
            return self._failed_pass(exc)
        return self._outcome("finished", None)

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise RunCancelled("the run was cancelled")

    def _prepare(self) -> IRModule:
        imported = self.sessions.imported(self.session_id)
        recorder = SnapshotRecorder(self.store, self.run_id)
        if self.announced is not None:
            recorder.adopt(imported.mod, self.announced)
            initial = self.announced
        else:
            initial = recorder.record(imported.mod).id
        numerics_error = None
        if self.options.check_numerics:
            try:
                self.checker = NumericsChecker(imported.mod, imported.params)
            except Exception as exc:  # reported in run_started; the run goes on without it
                numerics_error = f"{type(exc).__name__}: {exc}"
        self.instrument = RecordingInstrument(recorder, self.publish, self.cancel,
                                              self.checker)
        self.pipeline = build_pipeline(self.options, self.hooks)
        if self.announced is None:
            data = started_data(self.options, initial, self.pipeline)
            if numerics_error:
                data["numerics_error"] = numerics_error
            self.publish(RUN_STARTED, data)
        self.summary["final_snapshot"] = initial
        return imported.mod

    def _context(self, instruments: list[Any]) -> Any:
        return run_context(self.options, instruments)

    def _pipeline(self, mod: IRModule) -> IRModule:
        assert self.instrument is not None
        with self._context([self.instrument]):
            final = self.pipeline(mod)
        self.summary["final_snapshot"] = self.instrument.recorder.record(final).id
        return final

    def _build(self, mod: IRModule) -> None:
        """relay.build under the run's options (opt level, disabled and required passes);
        its own optimize passes are not recorded as pipeline passes."""
        self.publish(BUILD_STARTED, {})
        with self._context([CancelCheck(self.cancel)]):
            nodes = build_schedules(mod)
        self.store.put_artifact(self.run_id, "schedules", nodes)
        self.publish(BUILD_FINISHED, {"num_nodes": len(nodes)})

    def _failed_pass(self, exc: BaseException) -> Outcome:
        failed = self.instrument.state.failed if self.instrument else []
        pass_name = failed[0][0] if failed else getattr(exc, "pass_name", None)
        cause = root_cause(exc)
        message = f"{type(cause).__name__}: {cause}"
        code = "pass_failed" if pass_name else "run_failed"
        return self._fail(pass_name, message, code)

    def _fail(self, pass_name: str | None, message: str, code: str) -> Outcome:
        self.summary["failed_pass"] = pass_name
        self.summary["error"] = message
        if self.instrument and self.instrument.state.last_snapshot is not None:
            self.summary["final_snapshot"] = self.instrument.state.last_snapshot.id
        return self._outcome("failed", {"pass": pass_name, "message": message, "code": code})

    def _outcome(self, status: str, data: dict[str, Any] | None) -> Outcome:
        self._summarize(status)
        return Outcome(self.summary, data)

    def _summarize(self, status: str) -> None:
        s = self.summary
        s["status"] = status
        s["total_ms"] = round((time.perf_counter() - self.started) * 1e3, 3)
        if self.instrument is None:
            return
        records = self.instrument.state.records
        parents = {r.parent for r in records}
        leaves = [r for r in records if r.index not in parents]
        s["num_passes"] = len(leaves)
        s["num_changed"] = sum(r.changed for r in leaves)
        broken = self.instrument.state.first_break
        if broken is not None and self.checker is not None:
            s["first_numerics_break"] = broken[0]
            try:
                s["drifted_layers"] = self.checker.drifted_layers(broken[1])
            except Exception as exc:  # the bisection is best effort; the break stays named
                s["error"] = s["error"] or f"drift bisection failed: {type(exc).__name__}"
