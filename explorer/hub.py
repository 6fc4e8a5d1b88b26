"""Persist-then-publish of run events, and race-free replay for late subscribers.

Every event is in the store before any client sees it. Two producers exist:
the server itself (`publish`: append to the store, then hand to the sinks,
both under the run's lock) and a run's worker process, which appends its
events to the store on its own connection and tells the server; the server
then `relay`s each one to the sinks in index order.

For a run that is live in this server the hub keeps a cursor: the index of
the next event the sinks have not seen. A subscriber takes the run's lock,
replays the stored events >= `since` below the cursor and joins the live
stream; everything at or past the cursor reaches it live. So every event is
either replayed or delivered live, never both and never neither, even when
the worker has stored events the server has not relayed yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from explorer.protocol import EventData, RunEvent
from explorer.store import Store

Sink = Callable[[RunEvent], None]


class EventHub:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._sinks: list[Sink] = []
        self._locks: dict[str, threading.Lock] = {}
        self._cursors: dict[str, int] = {}
        self._guard = threading.Lock()

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def lock_for(self, run_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(run_id, threading.Lock())

    # --- live runs ----------------------------------------------------------------------
    def open_run(self, run_id: str) -> None:
        """Track the relay cursor of a run that is about to produce events here."""
        with self.lock_for(run_id):
            self._cursors[run_id] = len(self.store.events(run_id))

    def close_run(self, run_id: str) -> None:
        """The run produces no more events here: subscribers get everything stored."""
        with self.lock_for(run_id):
            self._cursors.pop(run_id, None)
        with self._guard:
            self._locks.pop(run_id, None)

    def is_open(self, run_id: str) -> bool:
        return run_id in self._cursors

    # --- producers ----------------------------------------------------------------------
    def publish(self, run_id: str, session_id: str, etype: str, data: EventData) -> RunEvent:
        """Store an event made by this server and hand it to the sinks."""
        with self.lock_for(run_id):
            event = self.store.append_event(run_id, session_id, etype, data)
            self._emit(event)
        return event

    def relay(self, event: RunEvent) -> None:
        """Hand an event another process stored to the sinks, in index order: events the
        sinks already had are skipped, missing earlier ones are read from the store."""
        run_id = event["run_id"]
        with self.lock_for(run_id):
            cursor = self._cursors.get(run_id)
            if cursor is None or event["index"] < cursor:
                return
            if event["index"] > cursor:
                for missed in self.store.events(run_id, cursor):
                    if missed["index"] >= event["index"]:
                        break
                    self._emit(missed)
            self._emit(event)

    def catch_up(self, run_id: str) -> int:
        """Relay every stored event the sinks have not had yet; returns how many."""
        with self.lock_for(run_id):
            cursor = self._cursors.get(run_id)
            if cursor is None:
                return 0
            missed = self.store.events(run_id, cursor)
            for event in missed:
                self._emit(event)
        return len(missed)

    def _emit(self, event: RunEvent) -> None:
        for sink in self._sinks:
            sink(event)
        run_id = event["run_id"]
        if run_id in self._cursors:
            self._cursors[run_id] = event["index"] + 1

    # --- consumers ----------------------------------------------------------------------
    def subscribe(self, run_id: str, since: int, send: Sink, join: Callable[[], None]) -> int:
        """Send the events >= since the sinks have had with `send`, then `join` the live
        stream (which brings the rest)."""
        with self.lock_for(run_id):
            missed = self.store.events(run_id, since)
            cursor = self._cursors.get(run_id)
            if cursor is not None:
                missed = [e for e in missed if e["index"] < cursor]
            for event in missed:
                send(event)
            join()
        return len(missed)
