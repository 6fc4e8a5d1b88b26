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
  passes).

Plugins are module names from the server's configuration, never from a
client. Importing one may register passes (`engine.transform.register_pass`)
and may define `wrap_passes(passes, options) -> list[Pass]` to change the
top-level passes of every run (tests insert gated or failing passes this way).

As with any fork-server child, a worker imports the server's `__main__` module
(as `__mp_main__`): a script that creates the app must do so under
`if __name__ == "__main__":`.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from explorer.compiler import ENGINE_MODULES
from explorer.protocol import EventData, RunOptions, RunOptionsJSON
from explorer.runs.execution import Execution, Outcome, PassesHook, tune_gc_for_compilation
from explorer.sessions import SessionService
from explorer.store import Store

START_METHOD = "forkserver"
PRELOAD = ("explorer.runs.worker", "explorer.runs.probe", "explorer.runs.schedules",
           *ENGINE_MODULES, "numpy")
PASSES_HOOK = "wrap_passes"
EXIT_PARENT_GONE = 70
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class Job:
    """Everything a worker needs, all plain data (it is pickled to the child)."""

    run_id: str
    session_id: str
    options: RunOptionsJSON
    db_path: str
    models_dir: str
    plugins: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    announced: int | None = None  # the run's initial snapshot, when run_started is out


def load_plugins(names: Iterable[str]) -> list[PassesHook]:
    """Import each plugin module; the pipeline hooks they define, in order."""
    hooks = []
    for name in names:
        module = importlib.import_module(name)
        hook = getattr(module, PASSES_HOOK, None)
        if callable(hook):
            hooks.append(hook)
    return hooks


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
    threading.Thread(target=_listen, args=(conn, cancel), name="cancel-listener",
                     daemon=True).start()
    store = Store(job.db_path)
    try:
        outcome = _execute(job, store, SessionService(store, Path(job.models_dir)), conn,
                           cancel)
    except Exception as exc:  # outside the pipeline (a plugin that fails to import...)
        _send(conn, ("error", f"{type(exc).__name__}: {exc}"))
    else:
        _send(conn, ("outcome", outcome.to_json()))
    finally:
        store.close()


def _execute(job: Job, store: Store, sessions: SessionService, conn: Connection,
             cancel: threading.Event) -> Outcome:
    def publish(etype: str, data: EventData) -> None:
        _send(conn, ("event", store.append_event(job.run_id, job.session_id, etype, data)))

    hooks = load_plugins(job.plugins)
    options = RunOptions.from_json(job.options)
    return Execution(store, sessions, publish, job.run_id, job.session_id, options, cancel,
                     hooks, announced=job.announced).execute()


def _send(conn: Connection, message: tuple[Any, ...]) -> None:
    try:
        conn.send(message)
    except OSError:  # the server is gone: nobody is left to report to
        os._exit(EXIT_PARENT_GONE)


def _listen(conn: Connection, cancel: threading.Event) -> None:
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(EXIT_PARENT_GONE)
        if message and message[0] == "cancel":
            cancel.set()


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent (the fork server) exits."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the listener's EOF check remains
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(EXIT_PARENT_GONE)


# --- the server's side ----------------------------------------------------------------------
def mp_context() -> Any:
    """The fork-server context, its server preloading the engine and the explorer."""
    ctx = multiprocessing.get_context(START_METHOD)
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def warm_up() -> None:
    """Start the fork server now (in the background), so the first run starts fast."""
    from multiprocessing import forkserver

    mp_context()
    threading.Thread(target=forkserver.ensure_running, name="forkserver-warm-up",
                     daemon=True).start()


def wait_ready() -> None:
    """Block until the fork server has preloaded (a first child has started and ended)."""
    process = mp_context().Process(target=_nothing, name="explorer-warm-up", daemon=True)
    process.start()
    process.join()


def _nothing() -> None:
    pass


class WorkerProcess:
    """The server's handle on one run's child: messages in, cancel and termination out."""

    def __init__(self, job: Job) -> None:
        ctx = mp_context()
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
        with contextlib.suppress(OSError):  # already gone
            self.conn.send(("cancel",))

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


def exit_description(exitcode: int | None) -> str:
    """'killed by SIGKILL', 'exit code 3' ..."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def environment() -> tuple[tuple[str, str], ...]:
    return tuple(os.environ.items())


def plugin_names(raw: Sequence[str] | str | None) -> tuple[str, ...]:
    """Plugin module names from configuration (a list, or a comma-separated string)."""
    if not raw:
        return ()
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(name.strip() for name in items if name.strip())
