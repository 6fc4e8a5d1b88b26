"""One execution of a pipeline run, wherever it happens (a worker process or the CLI).

`Execution.execute()` imports the session's model from its stored file (in a
worker, the only place a server ever parses an uploaded file), records the
imported module as the run's initial snapshot and publishes `run_started`
with it and the exact pass plan, then applies the passes of `relay.build` (or
`relay.optimize`, or the user's explicit list) under a PassContext whose
instruments include the RecordingInstrument, and, when building, generates
the graph and stores the kernels of that same final module. It returns an
`Outcome`: the run's status, summary and terminal event. It publishes every
other event itself (through `publish`); the caller decides when and how the
terminal event is published (`finish_run`), so a supervising server can
overrule it (a cancel that raced the last pass).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from explorer import compiler
from explorer.compiler import Compiled, IRModule, NumericsChecker, PassContext
from explorer.hub import EventHub
from explorer.protocol import (
    BUILD_FINISHED,
    BUILD_STARTED,
    NUMERICS_UNAVAILABLE,
    RUN_CANCELLED,
    RUN_FAILED,
    RUN_FINISHED,
    RUN_STARTED,
    ApiError,
    EventData,
    Publish,
    RunCancelled,
    RunFailed,
    RunOptions,
    RunStarted,
    RunStatus,
    RunSummary,
    build_finished,
    build_started,
    numerics_unavailable,
    run_cancelled,
    run_failed,
    run_finished,
    run_started,
)
from explorer.runs.build_progress import BuildProgressInstrument
from explorer.runs.children import PassesHook
from explorer.runs.numerics import (
    PassNumerics,
    PassTree,
    analyze_break,
    numerics_refusal,
    replay_apply,
)
from explorer.runs.recording import (
    PassGate,
    RecordingInstrument,
    RunCancelledError,
    SnapshotRecorder,
)
from explorer.runs.schedules import schedules_of
from explorer.sessions import SessionService
from explorer.store import Store

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
    data: RunFailed | RunCancelled | None = None  # None: run_finished {"summary": summary}

    @property
    def status(self) -> str:
        return str(self.summary["status"])

    @property
    def event_type(self) -> str:
        return TERMINAL_TYPES[self.status]

    def event_data(self) -> EventData:
        return run_finished(summary=self.summary) if self.data is None else self.data

    def to_json(self) -> dict[str, Any]:
        return {"summary": dict(self.summary), "data": self.data}

    @staticmethod
    def from_json(raw: dict[str, Any]) -> Outcome:
        return Outcome(raw["summary"], raw.get("data"))

    @staticmethod
    def failed(summary: RunSummary, pass_name: str | None, message: str, code: str
               ) -> Outcome:
        """`summary` marked failed (the pass and message named) with its run_failed data."""
        summary["status"] = "failed"
        summary["failed_pass"] = pass_name
        summary["error"] = message
        return Outcome(summary, run_failed(pass_name=pass_name, message=message, code=code))

    @staticmethod
    def cancelled(summary: RunSummary, reason: str | None = None) -> Outcome:
        """`summary` marked cancelled (why, when not the user) with its run_cancelled data."""
        summary["status"] = "cancelled"
        if reason is not None:
            summary["error"] = reason
        return Outcome(summary, run_cancelled(message=reason))


def finish_run(store: Store, hub: EventHub, outcome: Outcome) -> None:
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
    return isinstance(exc, RunCancelledError) or isinstance(root_cause(exc), RunCancelledError)


def run_context(options: RunOptions, instruments: list[Any]) -> PassContext:
    """The PassContext of a run: its options and the instruments."""
    return compiler.pass_context(options.opt_level, options.required_pass,
                                 options.disabled_pass, instruments)


def run_passes(options: RunOptions, ctx: PassContext, hooks: Sequence[PassesHook] = ()
               ) -> list[Any]:
    """The top-level passes a run applies: the engine's, through the plugins' hooks."""
    passes = compiler.run_passes(options.passes, options.build, ctx)
    for hook in hooks:
        passes = list(hook(passes, options))
    return passes


def started_data(options: RunOptions, initial: int, passes: Sequence[Any], ctx: PassContext
                 ) -> RunStarted:
    """run_started's data: the options, the initial snapshot and the exact pass plan."""
    plan = compiler.plan(passes, ctx)
    return run_started(options=options.to_json(), initial_snapshot=initial,
                       num_passes_planned=None if plan is None else len(plan),
                       plan=plan or [])


def announce_start(store: Store, publish: Publish, run_id: str, session_snapshot: int,
                   options: RunOptions, hooks: Sequence[PassesHook] = ()) -> int:
    """Publish run_started, before the run's worker has imported the model, with a copy of
    the session's upload snapshot as the run's initial snapshot (the worker's import has
    the same node ids: `compiler.load_model`; it checks); returns that snapshot's id."""
    initial = store.copy_snapshot(session_snapshot, run_id)
    publish_started(publish, options, initial, hooks)
    return initial


def publish_started(publish: Publish, options: RunOptions, initial: int,
                    hooks: Sequence[PassesHook] = ()) -> None:
    """Publish run_started: the options, the initial snapshot and the pass plan."""
    ctx = run_context(options, [])
    publish(RUN_STARTED, started_data(options, initial, run_passes(options, ctx, hooks), ctx))


class Execution:
    """Runs one pipeline and publishes its events (see module docstring)."""

    def __init__(self, store: Store, sessions: SessionService, publish: Publish, run_id: str,
                 session_id: str, options: RunOptions, cancel: threading.Event | None = None,
                 hooks: Sequence[PassesHook] = (), announced: int | None = None,
                 gate: PassGate | None = None, *, numerics_limit: int) -> None:
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
        self.gate = gate  # where the run may pause (breakpoints), if anywhere
        self.numerics_limit = numerics_limit  # weight bytes over which numerics are not checked
        self.started = time.perf_counter()
        self.instrument: RecordingInstrument | None = None
        self.build_progress = BuildProgressInstrument(publish, self.cancel)
        self.numerics: PassNumerics | None = None
        self.passes: list[Any] = []

    def execute(self) -> Outcome:
        try:
            imported = self.sessions.imported(self.session_id)
            ctx, passes = self._start(imported.mod, imported.params)
            compiled = compiler.compile_module(imported.mod, imported.params, passes,
                                               self.options.build, ctx)
            self._finish(compiled)
            self._analyze_numerics()
        except ApiError as err:
            return self._fail(None, err.message, err.code)
        except Exception as exc:  # any failure ends the run cleanly; the pass is named
            if was_cancelled(exc):
                return self._outcome("cancelled", run_cancelled(message=None))
            return self._failed_pass(exc)
        return self._outcome("finished", None)

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise RunCancelledError("the run was cancelled")

    def _start(self, mod: IRModule, params: dict[str, Any]) -> tuple[PassContext, list[Any]]:
        """Record the imported module, publish run_started (unless the server did), then
        set up the numerics check (its reference outputs: the imported module evaluated)
        and the instruments."""
        recorder = SnapshotRecorder(self.store, self.run_id)
        if self.announced is not None:
            initial = recorder.record_as(mod, self.announced).id
        else:
            initial = recorder.record(mod).id
            publish_started(self.publish, self.options, initial, self.hooks)
        if self.options.check_numerics:
            self.numerics = self._numerics(mod, params)
        self.instrument = RecordingInstrument(recorder, self.publish, self.cancel,
                                              self.numerics, self.gate)
        ctx = run_context(self.options, [self.instrument, self.build_progress])
        passes = self.passes = run_passes(self.options, ctx, self.hooks)
        self.summary["final_snapshot"] = initial
        return ctx, passes

    def _numerics(self, mod: IRModule, params: dict[str, Any]) -> PassNumerics | None:
        """The numerics check of this run, or None after publishing why there is none."""
        refused = numerics_refusal(mod, params, self.numerics_limit)
        if refused is None:
            try:
                return PassNumerics(NumericsChecker(mod, params))
            except Exception as exc:  # the run goes on without numerics, and says why
                refused = f"{type(exc).__name__}: {exc}"
        self.publish(NUMERICS_UNAVAILABLE, numerics_unavailable(message=refused))
        return None

    def _finish(self, compiled: Compiled) -> None:
        """Record the final module; when built, store the kernels of that same module."""
        assert self.instrument is not None
        self._check_cancel()
        self.summary["final_snapshot"] = self.instrument.recorder.record(compiled.mod).id
        if compiled.lib is None:
            return
        if not self.build_progress.started:  # nothing was lowered
            self.publish(BUILD_STARTED, build_started())
        nodes = schedules_of(compiled.lib)
        self.store.put_artifact(self.run_id, "schedules", nodes)
        self.publish(BUILD_FINISHED, build_finished(
            num_nodes=compiled.lib.build_module.num_nodes, num_kernels=len(nodes)))
        self._check_cancel()

    def _analyze_numerics(self) -> None:
        """Describe the first pass that broke numerics (layers, nodes, the bisection over
        its rewrites) in the summary."""
        brk = self.numerics.first_break if self.numerics else None
        if brk is None or self.numerics is None or self.instrument is None:
            return
        self._check_cancel()
        tree = PassTree.of(self.instrument.state.records)
        apply = replay_apply(self.passes, self.options, brk, tree)
        self.summary["numerics_break"] = analyze_break(brk, self.numerics, apply,
                                                       self._check_cancel)

    def _failed_pass(self, exc: BaseException) -> Outcome:
        failed = self.instrument.state.failed if self.instrument else []
        pass_name = failed[0][0] if failed else getattr(exc, "pass_name", None)
        cause = root_cause(exc)
        message = f"{type(cause).__name__}: {cause}"
        code = "pass_failed" if pass_name else "run_failed"
        return self._fail(pass_name, message, code)

    def _fail(self, pass_name: str | None, message: str, code: str) -> Outcome:
        if self.instrument and self.instrument.state.last_snapshot is not None:
            self.summary["final_snapshot"] = self.instrument.state.last_snapshot.id
        self._summarize("failed")
        return Outcome.failed(self.summary, pass_name, message, code)

    def _outcome(self, status: RunStatus, data: RunFailed | RunCancelled | None) -> Outcome:
        self._summarize(status)
        return Outcome(self.summary, data)

    def _summarize(self, status: RunStatus) -> None:
        s = self.summary
        s["status"] = status
        s["total_ms"] = round((time.perf_counter() - self.started) * 1e3, 3)
        if self.instrument is None:
            return
        leaves = [r for r in self.instrument.state.records if r.leaf]
        s["num_passes"] = len(leaves)
        s["num_changed"] = sum(r.changed for r in leaves)
        broken = self.numerics.first_break if self.numerics else None
        if broken is not None:
            s["first_numerics_break"] = broken.name
            found = s.get("numerics_break")
            s["drifted_layers"] = found["layers"] if found else []
