"""Build progress and cancellation between kernels: an instrument of every building run.

LowerTE tells the instruments after each fused call it lowers (the engine's
`PassInstrument.run_progress`). This one publishes `build_started` when lowering begins
and `build_progress` (calls done of all, kernels so far) at most every
`INTERVAL_S` seconds, always for the first and the last call; when the run's cancel
flag is set it raises `RunCancelledError` there, so a cancelled build stops between two
kernels, not after the last.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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

INTERVAL_S = 0.25
"""Least time between two build_progress events (the first and last are always sent)."""


class BuildProgressInstrument(PassInstrument):
    """Publishes the build's progress; stops it when the run is cancelled."""

    def __init__(self, publish: Publish, cancel: threading.Event,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.publish = publish
        self.cancel = cancel
        self.clock = clock
        self.started = False
        self.kernels: set[str] = set()
        self._last = float("-inf")

    def run_progress(self, info: Any, done: int, total: int, item: str) -> None:
        if self.cancel.is_set():
            raise RunCancelledError("the run was cancelled")
        if not self.started:
            self.started = True
            self.publish(BUILD_STARTED, build_started())
        if item:
            self.kernels.add(item)
        now = self.clock()
        if done in (0, total) or now - self._last >= INTERVAL_S:
            self._last = now
            self.publish(BUILD_PROGRESS, build_progress(done=done, total=total,
                                                        kernels=len(self.kernels), kernel=item))
