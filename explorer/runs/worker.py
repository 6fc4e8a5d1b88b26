"""Run workers: each pipeline run executes in its own child process.

Children come from a multiprocessing fork server (start method "forkserver")
that has the engine and the explorer preloaded, so a run starts in
milliseconds and the threaded server itself is never forked. A child:

- dies with the server (PR_SET_PDEATHSIG on its parent, the fork server, which
  exits when the server does; and a listener thread that exits on EOF of the
  control pipe), and ignores Ctrl-C (the server stops it);
- takes the server's environment at run start, imports the configured pass
  plugins, opens its own connection to the SQLite store (WAL), loads the
  session's model from its stored file and runs the `Execution`;
- appends each event to the store and sends it to the server over the pipe
  (`("event", RunEvent)`), then sends `("outcome", Outcome JSON)`;
- listens for `("cancel",)` and sets the run's cancel flag (checked between
  passes), and for the breakpoint controls `("breakpoints", [...])` and
  `("resume", action)`, which it hands to the run's `PauseGate`
  (explorer/runs/breakpoints.py).

The fork server, plugins and how a child dies are explorer/runs/children.py's.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from explorer.protocol import Breakpoint, EventData, RunOptions, RunOptionsJSON
from explorer.runs.breakpoints import PauseGate
from explorer.runs.children import (
    EXIT_PARENT_GONE,
    die_with_parent,
    load_plugins,
    mp_context,
)
from explorer.runs.execution import Execution, Outcome, tune_gc_for_compilation
from explorer.sessions import SessionService
from explorer.store import Store


@dataclass(frozen=True, slots=True)
class Job:
    """Everything a worker needs, all plain data (it is pickled to the child)."""

    run_id: str
    session_id: str
    options: RunOptionsJSON
    db_path: str
    models_dir: str
    numerics_weight_limit: int  # RunConfig's: weight bytes over which numerics are not checked
    plugins: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    announced: int | None = None  # the run's initial snapshot, when run_started is out
    breakpoints: tuple[Breakpoint, ...] = ()


# --- the child ------------------------------------------------------------------------------
def worker_main(job: Job, conn: Connection) -> None:
    """Entry point of a run's child process."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tune_gc_for_compilation()
    if job.env:
        os.environ.clear()
        os.environ.update(dict(job.env))
    cancel = threading.Event()
    gate = PauseGate(job.breakpoints, cancel)
    threading.Thread(target=_listen, args=(conn, cancel, gate), name="control-listener",
                     daemon=True).start()
    store = Store(job.db_path)
    try:
        outcome = _execute(job, store, SessionService(store, Path(job.models_dir)), conn,
                           cancel, gate)
    except Exception as exc:  # outside the pipeline (a plugin that fails to import...)
        _send(conn, ("error", f"{type(exc).__name__}: {exc}"))
    else:
        _send(conn, ("outcome", outcome.to_json()))
    finally:
        store.close()


def _execute(job: Job, store: Store, sessions: SessionService, conn: Connection,
             cancel: threading.Event, gate: PauseGate) -> Outcome:
    def publish(etype: str, data: EventData) -> None:
        _send(conn, ("event", store.append_event(job.run_id, job.session_id, etype, data)))

    hooks = load_plugins(job.plugins)
    options = RunOptions.from_json(job.options)
    gate.bind(publish, store)
    return Execution(store, sessions, publish, job.run_id, job.session_id, options, cancel,
                     hooks, announced=job.announced, gate=gate,
                     numerics_limit=job.numerics_weight_limit).execute()


def _send(conn: Connection, message: tuple[Any, ...]) -> None:
    try:
        conn.send(message)
    except OSError:  # the server is gone: nobody is left to report to
        os._exit(EXIT_PARENT_GONE)


def _listen(conn: Connection, cancel: threading.Event, gate: PauseGate) -> None:
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(EXIT_PARENT_GONE)
        kind = message[0] if message else None
        if kind == "cancel":
            cancel.set()
            gate.wake()
        elif kind == "breakpoints":
            gate.set_breakpoints(message[1])
        elif kind == "resume":
            gate.command(message[1], message[2])


# --- the server's side ----------------------------------------------------------------------
class WorkerProcess:
    """The server's handle on one run's child: messages in, cancel and termination out."""

    def __init__(self, job: Job) -> None:
        ctx = mp_context()
        self._send_lock = threading.Lock()  # control messages come from several threads
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=worker_main, args=(job, child),
                                   name=f"explorer-run-{job.run_id}", daemon=True)
        try:
            self.process.start()
        finally:
            child.close()

    @property
    def pid(self) -> int | None:
        pid: int | None = self.process.pid
        return pid

    def receive(self, timeout: float) -> tuple[list[tuple[Any, ...]], bool]:
        """(the messages that arrived within `timeout`, whether the pipe has closed)."""
        ready = multiprocessing.connection.wait([self.conn, self.process.sentinel], timeout)
        messages: list[tuple[Any, ...]] = []
        if not ready:
            return messages, False
        try:
            while self.conn.poll():
                messages.append(self.conn.recv())
        except (EOFError, OSError):
            return messages, True
        return messages, False

    def drain(self) -> list[tuple[Any, ...]]:
        """Whatever the (ended) child sent that was not read yet."""
        messages: list[tuple[Any, ...]] = []
        with contextlib.suppress(EOFError, OSError):
            while self.conn.poll():
                messages.append(self.conn.recv())
        return messages

    def request_cancel(self) -> None:
        self.send(("cancel",))

    def send(self, message: tuple[Any, ...]) -> None:
        """A control message to the child (cancel, breakpoints, resume)."""
        with self._send_lock, contextlib.suppress(OSError):  # OSError: already gone
            self.conn.send(message)

    def is_alive(self) -> bool:
        return bool(self.process.is_alive())

    def terminate(self) -> None:
        if self.process.is_alive():
            self.process.terminate()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()

    def join(self, timeout: float | None = None) -> int | None:
        self.process.join(timeout)
        code: int | None = self.process.exitcode
        return code

    def close(self) -> None:
        self.conn.close()
