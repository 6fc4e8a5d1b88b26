"""Pipeline runs: validated at the boundary, executed in a background task.

`RunManager.start` answers at once with the run id; `execute` (also used
synchronously by the CLI) imports the session's module, runs the pipeline
under a PassContext whose instruments include the RecordingInstrument, and
publishes every event through the hub (persisted first, then emitted).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from engine.ir import IRModule
from explorer import engine_bridge
from explorer.build import build_schedules
from explorer.hub import EventHub
from explorer.numerics import NumericsChecker
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
    bad_request,
    empty_summary,
)
from explorer.recording import RecordingInstrument, RunCancelled, SnapshotRecorder
from explorer.sessions import SessionService, new_id

StartTask = Callable[..., Any]


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a chain of wrappers (PassError keeps it as `cause`)."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None) or exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


def _was_cancelled(exc: BaseException) -> bool:
    return isinstance(_root_cause(exc), RunCancelled) or isinstance(exc, RunCancelled)


def _count_planned(pipeline: Any) -> int | None:
    passes = getattr(pipeline, "passes", None)
    if passes is None:
        return None
    return sum((_count_planned(p) or 1) for p in passes)


class RunManager:
    def __init__(self, store: Any, hub: EventHub, sessions: SessionService,
                 start_task: StartTask | None = None) -> None:
        self.store = store
        self.hub = hub
        self.sessions = sessions
        self._start_task = start_task or _thread_task
        self._cancel: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    # --- boundary -------------------------------------------------------------------
    def validate(self, options: RunOptions) -> None:
        known = set(engine_bridge.registered_passes())
        names = [*options.disabled_pass, *options.required_pass, *(options.passes or ())]
        unknown = sorted({n for n in names if n not in known})
        if unknown:
            raise bad_request("unknown_pass", f"unknown passes: {', '.join(unknown)}",
                              {"unknown": unknown, "registered": sorted(known)})

    def _new_run(self, session_id: str, options: RunOptions) -> str:
        self.store.session(session_id)  # 404 before anything starts
        self.validate(options)
        run_id = new_id()
        self.store.add_run(empty_summary(run_id, session_id, options.to_json()))
        return run_id

    def start_sync(self, session_id: str, options: RunOptions) -> str:
        """Run in the calling thread (the CLI); returns the run id once it has ended."""
        run_id = self._new_run(session_id, options)
        self.execute(run_id, session_id, options)
        return run_id

    def start(self, session_id: str, options: RunOptions) -> str:
        """Start a run in a background task; returns its id at once."""
        run_id = self._new_run(session_id, options)
        cancel = threading.Event()
        with self._lock:
            self._cancel[run_id] = cancel
        self._start_task(self._background, run_id, session_id, options, cancel)
        return run_id

    def cancel(self, run_id: str) -> bool:
        self.store.run(run_id)
        with self._lock:
            flag = self._cancel.get(run_id)
        if flag is None:
            return False
        flag.set()
        return True

    def _background(self, run_id: str, session_id: str, options: RunOptions,
                    cancel: threading.Event) -> None:
        try:
            self.execute(run_id, session_id, options, cancel)
        finally:
            with self._lock:
                self._cancel.pop(run_id, None)

    # --- the run itself ---------------------------------------------------------------
    def execute(self, run_id: str, session_id: str, options: RunOptions,
                cancel: threading.Event | None = None) -> RunSummary:
        run = _Run(self, run_id, session_id, options, cancel or threading.Event())
        return run.execute()


def _thread_task(fn: Callable[..., Any], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=fn, args=args, daemon=True)
    thread.start()
    return thread


class _Run:
    """One execution of a pipeline; publishes its events and keeps its summary."""

    def __init__(self, manager: RunManager, run_id: str, session_id: str,
                 options: RunOptions, cancel: threading.Event) -> None:
        self.m = manager
        self.store = manager.store
        self.summary = self.store.run(run_id)
        self.run_id = run_id
        self.session_id = session_id
        self.options = options
        self.cancel = cancel
        self.started = time.perf_counter()
        self.instrument: RecordingInstrument | None = None
        self.checker: NumericsChecker | None = None

    def publish(self, etype: str, data: dict[str, Any]) -> None:
        self.m.hub.publish(self.run_id, self.session_id, etype, data)

    def execute(self) -> RunSummary:
        try:
            mod = self._prepare()
            final = self._pipeline(mod)
            if self.options.build:
                self._build(final)
        except ApiError as err:
            return self._fail(None, err.message, err.code)
        except Exception as exc:  # any failure ends the run cleanly; the pass is named
            if _was_cancelled(exc):
                return self._finish("cancelled", RUN_CANCELLED, {})
            return self._failed_pass(exc)
        return self._finish("finished", RUN_FINISHED, None)

    def _prepare(self) -> IRModule:
        imported = self.m.sessions.imported(self.session_id)
        recorder = SnapshotRecorder(self.store, self.run_id)
        initial = recorder.record(imported.mod)
        numerics_error = None
        if self.options.check_numerics:
            try:
                self.checker = NumericsChecker(imported.mod, imported.params)
            except Exception as exc:  # reported in run_started; the run goes on without it
                numerics_error = f"{type(exc).__name__}: {exc}"
        self.instrument = RecordingInstrument(recorder, self.publish, self.cancel,
                                              self.checker)
        self.pipeline = engine_bridge.build_pipeline(self.options.opt_level,
                                                     self.options.passes)
        data: dict[str, Any] = {"options": self.options.to_json(),
                                "initial_snapshot": initial.id,
                                "num_passes_planned": _count_planned(self.pipeline)}
        if numerics_error:
            data["numerics_error"] = numerics_error
        self.publish(RUN_STARTED, data)
        self.summary["final_snapshot"] = initial.id
        return imported.mod

    def _pipeline(self, mod: IRModule) -> IRModule:
        assert self.instrument is not None
        with engine_bridge.pass_context(self.options.opt_level, self.options.required_pass,
                                        self.options.disabled_pass, [self.instrument]):
            final = self.pipeline(mod)
        self.summary["final_snapshot"] = self.instrument.recorder.record(final).id
        return final

    def _build(self, mod: IRModule) -> None:
        self.publish(BUILD_STARTED, {})
        nodes = build_schedules(mod)
        self.store.put_artifact(self.run_id, "schedules", nodes)
        self.publish(BUILD_FINISHED, {"num_nodes": len(nodes)})

    def _failed_pass(self, exc: BaseException) -> RunSummary:
        failed = self.instrument.state.failed if self.instrument else []
        pass_name = failed[0][0] if failed else getattr(exc, "pass_name", None)
        cause = _root_cause(exc)
        message = f"{type(cause).__name__}: {cause}"
        code = "pass_failed" if pass_name else "run_failed"
        return self._fail(pass_name, message, code)

    def _fail(self, pass_name: str | None, message: str, code: str) -> RunSummary:
        self.summary["failed_pass"] = pass_name
        self.summary["error"] = message
        if self.instrument and self.instrument.state.last_snapshot is not None:
            self.summary["final_snapshot"] = self.instrument.state.last_snapshot.id
        return self._finish("failed", RUN_FAILED,
                            {"pass": pass_name, "message": message, "code": code})

    def _finish(self, status: str, etype: str, data: dict[str, Any] | None) -> RunSummary:
        self._summarize(status)
        self.store.update_run(self.summary)
        self.publish(etype, {"summary": self.summary} if data is None else data)
        return self.summary

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
