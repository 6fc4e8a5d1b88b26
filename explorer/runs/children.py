"""The children of the server: the fork server they come from, and what each child does
first.

Run workers (explorer/runs/worker.py) and upload probes (explorer/runs/probe.py)
are children of a multiprocessing fork server (start method "forkserver") that
has the engine and the explorer preloaded, so a child starts in milliseconds
and the threaded server itself is never forked. A child dies with the server
(PR_SET_PDEATHSIG on its parent, the fork server, which exits when the server
does) and imports the configured plugins.

Plugins are module names from the server's configuration, never from a
client. Importing one may register passes (`engine.transform.register_pass`)
and may define `wrap_passes(passes, options) -> list[Pass]` to change the
top-level passes of every run (tests insert gated or failing passes this way).

As with any fork-server child, a child imports the server's `__main__` module
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from explorer.compiler import ENGINE_MODULES
from explorer.protocol import RunOptions

START_METHOD = "forkserver"
PRELOAD = ("explorer.runs.worker", "explorer.runs.probe", "explorer.runs.schedules", "explorer.graphserve",
           *ENGINE_MODULES, "numpy")
PASSES_HOOK = "wrap_passes"
EXIT_PARENT_GONE = 70
_PR_SET_PDEATHSIG = 1

PassesHook = Callable[[list[Any], RunOptions], list[Any]]
"""A plugin's `wrap_passes(passes, options)`: the top-level passes of a run."""


def load_plugins(names: Iterable[str]) -> list[PassesHook]:
    """Import each plugin module; the pipeline hooks they define, in order."""
    hooks = []
    for name in names:
        module = importlib.import_module(name)
        hook = getattr(module, PASSES_HOOK, None)
        if callable(hook):
            hooks.append(hook)
    return hooks



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


@dataclass(frozen=True, slots=True)
class ChildEnd:
    """How a one-shot child ended: its reply, or that it timed out, or how it died."""

    reply: Any = None
    replied: bool = False
    timed_out: bool = False
    exit: str = ""  # when it died without replying: 'killed by SIGKILL', 'exit code 3'...


def call_child(target: Callable[[Any, Any], None], job: Any, name: str, timeout: float
               ) -> ChildEnd:
    """Run `target(job, conn)` in a child of the fork server, wait up to `timeout` seconds
    for the one message it sends on `conn`; the child is killed and reaped either way."""
    ctx = mp_context()
    conn, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=target, args=(job, child), daemon=True, name=name)
    process.start()
    child.close()
    try:
        if not multiprocessing.connection.wait([conn, process.sentinel], timeout):
            return ChildEnd(timed_out=True)
        with contextlib.suppress(EOFError, OSError):
            if conn.poll():
                return ChildEnd(reply=conn.recv(), replied=True)
        process.join(5)
        return ChildEnd(exit=exit_description(process.exitcode))
    finally:
        conn.close()
        if process.is_alive():
            process.kill()
        process.join(5)


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
