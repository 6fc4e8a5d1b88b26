"""Build progress and cancellation between kernels: an instrument of every building run.

LowerTE tells the instruments after each fused call it lowers (the engine's
`PassInstrument.run_progress`). This one publishes `build_started` when lowering begins
and `build_progress` (calls done of all, kernels so far) each time another percent
of the calls is done (every call of a small build, at most 101 events for a big one),
always for the first and the last; when the run's cancel
flag is set it raises `RunCancelledError` there, so a cancelled build stops between two
kernels, not after the last.
"""

from __future__ import annotations

import threading
from typing import Any

from explorer.compiler import PassInstrument
from explorer.protocol import (
    BUILD_PROGRESS,
    BUILD_STARTED,
    Publish,
    build_progress,
    build_started,
)
from explorer.runs.recording import RunCancelledError


class BuildProgressInstrument(PassInstrument):
    """Publishes the build's progress; stops it when the run is cancelled."""

    def __init__(self, publish: Publish, cancel: threading.Event) -> None:
        self.publish = publish
        self.cancel = cancel
        self.started = False
        self.kernels: set[str] = set()
        self._percent = -1

    def run_progress(self, info: Any, done: int, total: int, item: str) -> None:
        if self.cancel.is_set():
            raise RunCancelledError("the run was cancelled")
        if not self.started:
            self.started = True
            self.publish(BUILD_STARTED, build_started())
        if item:
            self.kernels.add(item)
        percent = 100 * done // total if total else 100
        if percent != self._percent or done == total:
            self._percent = percent
            self.publish(BUILD_PROGRESS, build_progress(done=done, total=total,
                                                        kernels=len(self.kernels), kernel=item))
