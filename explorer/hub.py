"""Persist-then-publish of run events, and race-free replay for late subscribers.

A producer appends an event to the store (which gives it the run's next
index) and hands it to the sinks while holding the run's lock; a subscriber
reads the stored events >= `since` and joins the live stream under the same
lock. So every event is either in the replay (stored before the subscriber
took the lock) or delivered live (published after it joined), never both and
never neither.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from explorer.protocol import RunEvent
from explorer.store import Store

Sink = Callable[[RunEvent], None]


class EventHub:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._sinks: list[Sink] = []
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def lock_for(self, run_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(run_id, threading.Lock())

    def publish(self, run_id: str, session_id: str, etype: str, data: dict[str, Any]) -> RunEvent:
        with self.lock_for(run_id):
            event = self.store.append_event(run_id, session_id, etype, data)
            for sink in self._sinks:
                sink(event)
        return event

    def subscribe(self, run_id: str, since: int, send: Sink, join: Callable[[], None]) -> int:
        """Send the stored events >= since with `send`, then `join` the live stream."""
        with self.lock_for(run_id):
            missed = self.store.events(run_id, since)
            for event in missed:
                send(event)
            join()
        return len(missed)
