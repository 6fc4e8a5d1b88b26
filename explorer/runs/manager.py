"""Pipeline runs: validated at the boundary, queued, executed in worker processes.

`RunManager.start` answers at once with the run id. At most
`max_concurrent` runs execute at once, each in its own child process
(explorer/runs/worker.py) watched by a `RunSupervisor` thread (explorer/runs/supervisor.py);
more wait in a queue, announced by a `run_queued` event before their
`run_started`. `cancel` stops a queued run at once and a running one
cooperatively, then by signal. `start_sync` (the CLI) executes in the calling
process. `shutdown` terminates every worker; their runs stay `running` in the
store and become `interrupted` at the next start.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from explorer import compiler
from explorer.hub import EventHub
from explorer.protocol import (
    RUN_QUEUED,
    SYMBOLIC_INPUTS,
    ApiError,
    Breakpoint,
    EventData,
    PauseAt,
    ResumeAction,
    RunOptions,
    bad_request,
    empty_summary,
    run_queued,
)
from explorer.runs.breakpoints import PauseGate
from explorer.runs.children import load_plugins, warm_up
from explorer.runs.config import RunConfig
from explorer.runs.execution import Execution, finish_run
from explorer.runs.supervisor import RunSupervisor
from explorer.session_inputs import symbolic_inputs
from explorer.sessions import SessionService, new_id
from explorer.store import Store

StartTask = Callable[..., Any]


def _thread_task(fn: Callable[..., Any], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=fn, args=args, daemon=True)
    thread.start()
    return thread


def _kill_workers(active: dict[str, RunSupervisor]) -> None:
    for supervisor in list(active.values()):
        supervisor.kill_now()


class RunManager:
    def __init__(self, store: Store, hub: EventHub, sessions: SessionService,
                 start_task: StartTask | None = None, config: RunConfig | None = None) -> None:
        self.store = store
        self.hub = hub
        self.sessions = sessions
        self.config = config or RunConfig()
        self.start_task = start_task or _thread_task
        self.hooks = load_plugins(self.config.plugins)  # registers their passes here too
        self.stopping = False
        self._lock = threading.Lock()
        self._active: dict[str, RunSupervisor] = {}
        self._queue: deque[RunSupervisor] = deque()
        self._finalizer = weakref.finalize(self, _kill_workers, self._active)

    # --- boundary -------------------------------------------------------------------
    def validate(self, options: RunOptions) -> None:
        known = set(compiler.registered_passes())
        names = [*options.disabled_pass, *options.required_pass, *(options.passes or ())]
        unknown = sorted({n for n in names if n not in known})
        if unknown:
            raise bad_request("unknown_pass", f"unknown passes: {', '.join(unknown)}",
                              {"unknown": unknown, "registered": sorted(known)})

    def _new_run(self, session_id: str, options: RunOptions) -> str:
        session = self.store.session(session_id)  # 404 before anything starts
        self.validate(options)
        symbolic = symbolic_inputs(session)
        if options.build and options.passes is None and symbolic:
            listed = "; ".join(f"{name} ({', '.join(map(str, dims))})"
                               for name, dims in symbolic.items())
            raise bad_request(SYMBOLIC_INPUTS, f"relay.build needs static input shapes, and "
                              f"these inputs have symbolic dimensions: {listed}. Pin them "
                              "(the page's 'Pin shapes', POST /api/sessions/<id>/pin, or "
                              "explorer run --input-shapes) or run without build", {"inputs": symbolic})
        if self.stopping:
            raise ApiError(503, "shutting_down", "the server is shutting down")
        run_id = new_id()
        self.store.add_run(empty_summary(run_id, session_id, options.to_json()))
        return run_id

    def start_sync(self, session_id: str, options: RunOptions, gate: PauseGate | None = None
                   ) -> str:
        """Run in the calling thread (the CLI; `gate`: where it may pause); returns the run
        id once it has ended."""
        run_id = self._new_run(session_id, options)

        def publish(etype: str, data: EventData) -> None:
            self.hub.publish(run_id, session_id, etype, data)

        if gate is not None:
            gate.bind(publish, self.store)
        outcome = Execution(self.store, self.sessions, publish, run_id, session_id, options,
                            hooks=self.hooks, gate=gate,
                            numerics_limit=self.config.numerics_weight_limit).execute()
        finish_run(self.store, self.hub, outcome)
        return run_id

    def start(self, session_id: str, options: RunOptions,
              breakpoints: list[Breakpoint] | None = None) -> str:
        """Queue a run for a worker process; returns its id at once."""
        run_id = self._new_run(session_id, options)
        supervisor = RunSupervisor(self, run_id, session_id, options, breakpoints)
        self.hub.open_run(run_id)
        with self._lock:
            launch = len(self._active) < self.config.max_concurrent
            if launch:
                self._active[run_id] = supervisor
            else:
                self._queue.append(supervisor)
                self.hub.publish(run_id, session_id, RUN_QUEUED, run_queued(
                    position=len(self._queue), max_concurrent=self.config.max_concurrent))
        if launch:
            supervisor.launch()
        return run_id

    def cancel(self, run_id: str) -> bool:
        """Cancel a queued or running run of this server; False if it is not one."""
        self.store.run(run_id)
        with self._lock:
            running = self._active.get(run_id)
            queued = next((s for s in self._queue if s.run_id == run_id), None)
            if queued is not None:
                self._queue.remove(queued)
        if queued is not None:
            queued.end_unstarted()
            return True
        return running is not None and running.request_cancel()

    # --- breakpoints (explorer/runs/breakpoints.py) -----------------------------------
    def _supervisor(self, run_id: str) -> RunSupervisor | None:
        self.store.run(run_id)  # 404 for a run that does not exist
        with self._lock:
            found = self._active.get(run_id)
            return found or next((s for s in self._queue if s.run_id == run_id), None)

    def breakpoints(self, run_id: str) -> tuple[list[Breakpoint], bool]:
        """The run's breakpoints and whether it is queued or running here (can pause)."""
        supervisor = self._supervisor(run_id)
        return (list(supervisor.breakpoints), True) if supervisor else ([], False)

    def set_breakpoints(self, run_id: str, breakpoints: list[Breakpoint]) -> bool:
        """Replace a queued or running run's breakpoints; False when it is neither."""
        supervisor = self._supervisor(run_id)
        if supervisor is not None:
            supervisor.set_breakpoints(breakpoints)
        return supervisor is not None

    def resume(self, run_id: str, action: ResumeAction, at: PauseAt | None = None) -> bool:
        """Continue, step or stop a paused run (only at pause `at`, when given); False when
        it is not paused here (or paused elsewhere)."""
        supervisor = self._supervisor(run_id)
        return supervisor is not None and supervisor.resume(action, at)

    # --- bookkeeping ----------------------------------------------------------------
    def run_ended(self, supervisor: RunSupervisor) -> None:
        """A supervisor is done: free its slot for the next queued run."""
        with self._lock:
            if self._active.get(supervisor.run_id) is supervisor:
                del self._active[supervisor.run_id]
            following = None
            if self._queue and not self.stopping \
                    and len(self._active) < self.config.max_concurrent:
                following = self._queue.popleft()
                self._active[following.run_id] = following
        if following is not None:
            following.launch()

    def active_runs(self) -> list[str]:
        with self._lock:
            return list(self._active)

    def queued_runs(self) -> list[str]:
        with self._lock:
            return [s.run_id for s in self._queue]

    def worker_pid(self, run_id: str) -> int | None:
        with self._lock:
            supervisor = self._active.get(run_id)
        worker = supervisor.worker if supervisor is not None else None
        return worker.pid if worker is not None else None

    def warm_up(self) -> None:
        """Start the worker fork server in the background (the first run starts fast)."""
        warm_up()

    def shutdown(self) -> None:
        """Terminate every worker; their runs are left `running` (interrupted at restart)."""
        with self._lock:
            self.stopping = True
            self._queue.clear()
        _kill_workers(self._active)
