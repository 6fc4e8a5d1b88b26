"""The server's side of one run: start its worker, relay its events, stop it, end it.

A `RunSupervisor` thread waits on the worker's pipe, relays each event it
announces through the hub (the worker stored it first), and enforces:

- cancel: the worker is asked to stop between passes; if it has not ended
  `cancel_grace` seconds later it gets SIGTERM, then SIGKILL after
  `kill_grace`; the run ends `cancelled` with its snapshots so far;
- no progress (no event) for `stall_timeout` seconds: cancelled the same way,
  with a message saying so;
- a worker that dies without an outcome (crash, OOM kill) ends its run
  `failed` with code `worker_crashed`, naming the pass that was running;
- breakpoints: the run's list is kept here and sent to the worker (at start and
  whenever it changes); a run paused at one (between `run_paused` and
  `run_resumed`) is waiting for its user, not stalled, and is resumed by a
  control message (explorer/runs/breakpoints.py).

The terminal event is always written here, after the worker has ended and
every event it stored has been relayed, so a cancel acknowledged while the last
pass ran still ends the run `cancelled`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from explorer.hub import EventHub
from explorer.protocol import (
    BUILD_FINISHED,
    BUILD_STARTED,
    PASS_FAILED,
    PASS_FINISHED,
    PASS_STARTED,
    RUN_PAUSED,
    RUN_RESUMED,
    RUN_STARTED,
    Breakpoint,
    EventData,
    PauseAt,
    ResumeAction,
    RunEvent,
    RunOptions,
    RunSummary,
)
from explorer.runs.children import PassesHook, environment, exit_description
from explorer.runs.config import RunConfig
from explorer.runs.execution import Outcome, announce_start, finish_run
from explorer.runs.worker import Job, WorkerProcess
from explorer.sessions import SessionService
from explorer.store import Store


class RunHost(Protocol):
    """What a supervisor needs of the run manager that started it."""

    store: Store
    hub: EventHub
    sessions: SessionService
    config: RunConfig
    hooks: list[PassesHook]
    stopping: bool
    start_task: Callable[..., Any]

    def run_ended(self, supervisor: RunSupervisor) -> None: ...

WORKER_CRASHED = "worker_crashed"


@dataclass(frozen=True, slots=True)
class _Finished:
    index: int
    leaf: bool
    changed: bool


class RunTracker:
    """What the server knows of a run from its events: the pass running now, the last
    snapshot, the finished passes (for a summary when the worker could not write one)."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}
        self.finished: list[_Finished] = []
        self.last_snapshot: int | None = None
        self.phase = "starting"
        self.pause: PauseAt | None = None  # where it is paused, if it is
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            RUN_PAUSED: self._paused, RUN_RESUMED: self._resumed,
            RUN_STARTED: self._run_started, PASS_STARTED: self._pass_started,
            PASS_FINISHED: self._pass_finished, PASS_FAILED: self._pass_failed,
            BUILD_STARTED: self._build_started, BUILD_FINISHED: self._build_finished,
        }

    def observe(self, event: RunEvent) -> None:
        handler = self._handlers.get(event["type"])
        if handler is not None:
            handler(event["data"])

    def _run_started(self, data: dict[str, Any]) -> None:
        self.phase = "pipeline"
        self.last_snapshot = data.get("initial_snapshot", self.last_snapshot)

    @property
    def paused(self) -> bool:
        return self.pause is not None

    def _paused(self, data: dict[str, Any]) -> None:
        self.pause = PauseAt(pass_index=int(data["pass_index"]), when=data["when"])

    def _resumed(self, data: dict[str, Any]) -> None:
        self.pause = None

    def _pass_started(self, data: dict[str, Any]) -> None:
        self.open[int(data["pass_index"])] = str(data["name"])

    def _pass_finished(self, data: dict[str, Any]) -> None:
        index = int(data["pass_index"])
        self.open.pop(index, None)
        self.finished.append(_Finished(index, bool(data["leaf"]), bool(data["changed"])))
        self.last_snapshot = data.get("after", self.last_snapshot)

    def _pass_failed(self, data: dict[str, Any]) -> None:
        self.open.pop(int(data["pass_index"]), None)
        self.last_snapshot = data.get("before", self.last_snapshot)

    def _build_started(self, data: dict[str, Any]) -> None:
        self.phase = "build"

    def _build_finished(self, data: dict[str, Any]) -> None:
        self.phase = "built"

    def running_pass(self) -> str | None:
        """The innermost pass that started and did not end."""
        return self.open[max(self.open)] if self.open else None

    def where(self) -> str:
        name = self.running_pass()
        if name is not None:
            return f"while pass {name!r} was running"
        return {"starting": "before the pipeline started", "build": "during relay.build",
                "pipeline": "between passes"}.get(self.phase, "after the pipeline")

    def fill(self, summary: RunSummary) -> None:
        leaves = [f for f in self.finished if f.leaf]
        summary["num_passes"] = len(leaves)
        summary["num_changed"] = sum(f.changed for f in leaves)
        if self.last_snapshot is not None:
            summary["final_snapshot"] = self.last_snapshot


class RunSupervisor:
    """Supervises one run's worker process (see module docstring)."""

    def __init__(self, manager: RunHost, run_id: str, session_id: str,
                 options: RunOptions, breakpoints: list[Breakpoint] | None = None) -> None:
        self.manager = manager
        self.breakpoints: list[Breakpoint] = list(breakpoints or [])
        self.run_id = run_id
        self.session_id = session_id
        self.options = options
        self.tracker = RunTracker()
        self.worker: WorkerProcess | None = None
        self.outcome: Outcome | None = None
        self.error: str | None = None
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._cancel_at: float | None = None
        self._cancel_reason: str | None = None
        self._signalled = 0  # 1: SIGTERM sent, 2: SIGKILL sent
        self._decided = False  # the terminal outcome is chosen: cancels come too late

    # --- control (any thread) -----------------------------------------------------------
    def launch(self) -> None:
        """Announce the run, then start the worker and the thread that supervises it."""
        cfg = self.manager.config
        self.started = time.monotonic()
        try:
            announced = self._announce()
            job = Job(self.run_id, self.session_id, self.options.to_json(),
                      self.manager.store.path, str(self.manager.sessions.models_dir),
                      cfg.numerics_weight_limit, cfg.plugins, environment(), announced,
                      tuple(self.breakpoints))
            worker = WorkerProcess(job)
        except Exception as exc:  # no process: the run fails, the server goes on
            self.error = f"the run's worker could not start: {type(exc).__name__}: {exc}"
            self._end(None)
            return
        with self._lock:
            self.worker = worker
            if self._cancel_at is not None:
                worker.request_cancel()
            elif self.breakpoints != list(job.breakpoints):  # changed while it started
                worker.send(("breakpoints", self.breakpoints))
        self.manager.start_task(self._supervise)

    def _announce(self) -> int | None:
        """Publish run_started from the session's upload snapshot, so the client sees the
        imported module before the worker has imported it again (and, with the numerics
        check, evaluated it); None (the worker announces the run) for a session without
        one."""
        store = self.manager.store
        snapshot = store.session_snapshot(self.session_id)
        if snapshot is None:
            return None

        def publish(etype: str, data: EventData) -> None:
            self.tracker.observe(self.manager.hub.publish(self.run_id, self.session_id,
                                                          etype, data))

        return announce_start(store, publish, self.run_id, snapshot, self.options,
                              self.manager.hooks)

    def request_cancel(self, reason: str | None = None) -> bool:
        """Ask the run to stop; False when its end has already been decided."""
        with self._lock:
            if self._decided:
                return False
            if self._cancel_at is not None:
                return True
            self._cancel_at = time.monotonic()
            self._cancel_reason = reason
            worker = self.worker
        if worker is not None:
            worker.request_cancel()
        return True

    def set_breakpoints(self, breakpoints: list[Breakpoint]) -> None:
        """Replace the run's breakpoints (the worker's too, once it runs)."""
        with self._lock:
            self.breakpoints = list(breakpoints)
            worker = self.worker
            if worker is not None:
                worker.send(("breakpoints", self.breakpoints))

    def resume(self, action: ResumeAction, at: PauseAt | None = None) -> bool:
        """Resume the paused run (`stop` cancels it); False when it is not paused, or not
        at pause `at` (when given). The worker's gate checks `at` again: this side may not
        have seen the run resume yet."""
        with self._lock:
            worker = self.worker if not self._decided else None
        pause = self.tracker.pause
        if worker is None or pause is None or at not in (None, pause):
            return False
        if action == "stop":
            return self.request_cancel()
        worker.send(("resume", action, at))
        return True

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_at is not None

    def kill_now(self) -> None:
        """Server shutdown: stop the worker at once."""
        worker = self.worker
        if worker is None:
            return
        worker.terminate()
        if worker.join(1.0) is None:
            worker.kill()
            worker.join(5.0)

    def end_unstarted(self) -> None:
        """A queued run that is cancelled before its worker started."""
        self.request_cancel()
        self._end(None)

    # --- the supervising thread ---------------------------------------------------------
    def _supervise(self) -> None:
        worker = self.worker
        assert worker is not None
        try:
            self._pump(worker)
        finally:
            exitcode = worker.join(5.0)
            if exitcode is None:
                worker.kill()
                exitcode = worker.join(5.0)
            for message in worker.drain():
                self._handle(message)
            worker.close()
            self._end(exitcode)

    def _pump(self, worker: WorkerProcess) -> None:
        cfg = self.manager.config
        last_progress = time.monotonic()
        while True:
            messages, closed = worker.receive(cfg.poll_interval)
            for message in messages:
                self._handle(message)
                last_progress = time.monotonic()
            if self.tracker.paused:  # waiting for its user is no stall
                last_progress = time.monotonic()
            if closed or not worker.is_alive():
                return
            self._enforce(worker, time.monotonic() - last_progress)

    def _handle(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "event":
            self.tracker.observe(message[1])
            self.manager.hub.relay(message[1])
        elif kind == "outcome":
            self.outcome = Outcome.from_json(message[1])
        elif kind == "error":
            self.error = str(message[1])

    def _enforce(self, worker: WorkerProcess, idle: float) -> None:
        cfg = self.manager.config
        if self._cancel_at is None:
            if idle > cfg.stall_timeout:
                self.request_cancel(self._stall_message(cfg.stall_timeout))
            return
        waited = time.monotonic() - self._cancel_at
        if waited > cfg.cancel_grace + cfg.kill_grace and self._signalled < 2:
            self._signalled = 2
            worker.kill()
        elif waited > cfg.cancel_grace and self._signalled < 1:
            self._signalled = 1
            worker.terminate()

    def _stall_message(self, limit: float) -> str:
        return (f"the run made no progress for {limit:g} s {self.tracker.where()}; "
                "it was stopped (limit: RUN_STALL_TIMEOUT)")

    # --- the end --------------------------------------------------------------------------
    def _end(self, exitcode: int | None) -> None:
        hub = self.manager.hub
        with self._lock:
            self._decided = True
        try:
            if not self.manager.stopping:
                hub.catch_up(self.run_id)
                finish_run(self.manager.store, hub, self._decide(exitcode))
        finally:
            hub.close_run(self.run_id)
            self.manager.run_ended(self)

    def _decide(self, exitcode: int | None) -> Outcome:
        if self.outcome is not None:
            if self.cancel_requested and self.outcome.status == "finished":
                return self._cancelled(dict(self.outcome.summary))  # type: ignore[arg-type]
            return self.outcome
        summary = self._summary()
        if self.cancel_requested:
            return self._cancelled(summary)
        if self.error is not None:
            return Outcome.failed(summary, None, self.error, "run_failed")
        pass_name = self.tracker.running_pass()
        message = (f"the worker process of the run died ({exit_description(exitcode)}) "
                   f"{self.tracker.where()}")
        return Outcome.failed(summary, pass_name, message, WORKER_CRASHED)

    def _summary(self) -> RunSummary:
        summary: RunSummary = self.manager.store.run(self.run_id)
        self.tracker.fill(summary)
        summary["total_ms"] = round((time.monotonic() - self.started) * 1e3, 3)
        return summary

    def _cancelled(self, summary: RunSummary) -> Outcome:
        return Outcome.cancelled(summary, self._cancel_reason)
