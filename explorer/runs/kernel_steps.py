"""The schedule steps of a kernel, made when a user first opens it, then kept.

A run stores its kernels with their sources, not their steps (explorer/runs/schedules.py).
The first GET of a kernel's detail makes its steps in a short-lived child of the run
workers' fork server (the source may come from an imported export: the server parses
nothing itself), which stores them as the run's `schedule_steps/<kernel>` artifact;
every later GET reads that artifact. Two requests for the same kernel wait for one child.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass
from typing import Any

from explorer.protocol import ApiError, ScheduleDetail, ScheduleRecord, ScheduleStep
from explorer.runs.children import call_child, die_with_parent
from explorer.runs.schedules import find_kernel, node_json, steps_json
from explorer.store import Store

STEPS_TIMEOUT = 300.0
"""Seconds the steps of one kernel may take before the request is refused."""

ARTIFACT = "schedules"


def steps_key(func_name: str) -> str:
    return f"schedule_steps/{func_name}"


@dataclass(frozen=True, slots=True)
class StepsJob:
    """What the child needs (pickled to it): where the kernel is and where to write."""

    db_path: str
    run_id: str
    func_name: str


class KernelSteps:
    """The server's side: the detail of a kernel, its steps made once per run and kernel."""

    def __init__(self, store: Store, timeout: float = STEPS_TIMEOUT) -> None:
        self.store = store
        self.timeout = timeout
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def records(self, run_id: str) -> list[ScheduleRecord]:
        self.store.run(run_id)
        found: list[ScheduleRecord] = self.store.artifact(run_id, ARTIFACT, [])
        return found

    def detail(self, run_id: str, index: int) -> ScheduleDetail:
        """The kernel graph node `index` calls, every call site, and its steps."""
        record = find_kernel(self.records(run_id), index)
        if record is None:
            raise ApiError(404, "not_found", f"run {run_id!r} has no graph node {index}")
        node = {**node_json(record), "calls": record.get("calls", [])}
        return {"node": node, "steps": self.steps(run_id, record)}  # type: ignore[typeddict-item]

    def steps(self, run_id: str, record: ScheduleRecord) -> list[ScheduleStep]:
        if "steps" in record:
            return record["steps"]
        key = steps_key(record["func_name"])
        with self._lock_for(run_id, key):
            done: list[ScheduleStep] | None = self.store.artifact(run_id, key)
            if done is None:
                make_steps(StepsJob(self.store.path, run_id, record["func_name"]),
                           self.timeout)
                done = self.store.artifact(run_id, key, [])
            return done

    def _lock_for(self, run_id: str, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault((run_id, key), threading.Lock())


def make_steps(job: StepsJob, timeout: float) -> None:
    """Make and store one kernel's steps in a child; an ApiError naming why it could not."""
    name = job.func_name
    end = call_child(_steps_main, job, f"explorer-steps-{name}", timeout)
    if end.timed_out:
        raise ApiError(504, "schedule_timeout",
                       f"the schedule steps of {name} took longer than {timeout:.0f} s")
    if not end.replied:
        raise ApiError(500, "schedule_crashed", f"the process making the schedule steps of "
                       f"{name} stopped ({end.exit})")
    if end.reply is not None:
        raise ApiError(422, "schedule_failed", str(end.reply))


def _steps_main(job: StepsJob, conn: Any) -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store = Store(job.db_path)
    reply: str | None = None
    try:
        records: list[ScheduleRecord] = store.artifact(job.run_id, ARTIFACT, [])
        record = next(r for r in records if r["func_name"] == job.func_name)
        store.put_artifact(job.run_id, steps_key(job.func_name), steps_json(record))
    except Exception as exc:  # a kernel whose source does not lower: named, not raised
        reply = f"the schedule steps of {job.func_name} could not be made: " \
                f"{type(exc).__name__}: {exc}"
    finally:
        store.close()
    conn.send(reply)
    conn.close()
