"""RecordingInstrument: a real engine PassInstrument that records every pass.

For each pass it captures name, opt_level, depth in the Sequential tree and
parent, the snapshot before and after (printed text + source map, stored
content-addressed), whether the module changed, wall time (recording excluded),
span coverage, statistics and optionally a numerics check, and publishes each
event the moment it happens.

Recording is cheap by identity: a module whose functions are the same objects
(and equally typed) as a recently recorded one reuses that snapshot without
printing; "changed" is "the after-module's functions are not the before's".
A snapshot that is printed goes to the store as text plus the printer's column
table (no dict per source-map entry), and its span coverage is read off that
table instead of walking the module again.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

from explorer.compiler import IRModule, PassInstrument, SourceMapTable, print_snapshot
from explorer.protocol import (
    PASS_FAILED,
    PASS_FINISHED,
    PASS_STARTED,
    Numerics,
    Publish,
    pass_failed,
    pass_finished,
    pass_started,
    pass_stats,
)
from explorer.remarks import record_remarks
from explorer.runs.numerics import PassNumerics
from explorer.store import Store

ModuleKey = tuple[tuple[str, int, bool], ...]


class ImportMismatchError(Exception):
    """A run's import of its model is not the module its run_started announced."""


class RunCancelledError(Exception):
    """Raised from an instrument hook when the user cancelled the run."""


class PassGate(Protocol):
    """Where a run may pause between passes (explorer/runs/breakpoints.py): called with the
    module recorded before a pass (before its pass_started), and after its pass_finished;
    it may block, and raises RunCancelledError to stop the run."""

    def before_pass(self, index: int, name: str, snapshot: int) -> None: ...

    def after_pass(self, index: int, name: str, leaf: bool, before: int, after: int
                   ) -> None: ...


@dataclass(slots=True)
class Snapshot:
    id: int
    key: ModuleKey
    coverage: float
    num_nodes: int
    printed: bool


def _same_functions(refs: list[weakref.ref[Any]], mod: IRModule) -> bool:
    """Whether `mod`'s functions are the very objects `refs` point to (an id in a key may
    belong to a new object once the one it was taken from is gone)."""
    funcs = [f for _, f in mod.items()]
    return len(refs) == len(funcs) and all(r() is f for r, f in zip(refs, funcs, strict=True))


def module_key(mod: IRModule) -> ModuleKey:
    """Identity of a module state: each function object, and whether it is typed yet
    (InferType may fill types in place, which changes the printed text)."""
    return tuple((gv.name_hint, id(func), func.has_type) for gv, func in mod.items())


class SnapshotRecorder:
    """Prints and stores module states, reusing the snapshot of an identical state."""

    def __init__(self, store: Store, run_id: str, keep: int = 8) -> None:
        self.store = store
        self.run_id = run_id
        self._recent: OrderedDict[ModuleKey, tuple[Snapshot, list[weakref.ref[Any]]]] = (
            OrderedDict())
        self._keep = keep
        self.print_ms = 0.0
        self.num_printed = 0

    def record_as(self, mod: IRModule, snapshot_id: int) -> Snapshot:
        """Record `mod` as the stored snapshot `snapshot_id` (the upload's, announced before
        this process imported the model again); ImportMismatchError when `mod` does not
        print to exactly that snapshot, node ids included."""
        start = time.perf_counter()
        text, table = print_snapshot(mod)
        if not self.store.holds(snapshot_id, text, table):
            raise ImportMismatchError(
                f"this import of the model differs from the upload's (snapshot {snapshot_id})")
        coverage, num_nodes = table.span_coverage()
        self.print_ms += (time.perf_counter() - start) * 1e3
        snap = Snapshot(snapshot_id, module_key(mod), coverage, num_nodes, printed=False)
        self._remember(snap, mod)
        return snap

    def record(self, mod: IRModule) -> Snapshot:
        key = module_key(mod)
        hit = self._recent.get(key)
        if hit is not None and _same_functions(hit[1], mod):
            self._recent.move_to_end(key)
            return Snapshot(hit[0].id, key, hit[0].coverage, hit[0].num_nodes, printed=False)
        start = time.perf_counter()
        text, table = print_snapshot(mod)
        return self._store(mod, key, text, table, start)

    def _store(self, mod: IRModule, key: ModuleKey, text: str, table: SourceMapTable,
               start: float) -> Snapshot:
        coverage, num_nodes = table.span_coverage()
        snap_id = self.store.add_snapshot(self.run_id, text, table)
        self.print_ms += (time.perf_counter() - start) * 1e3
        self.num_printed += 1
        snap = Snapshot(snap_id, key, coverage, num_nodes, printed=True)
        self._remember(snap, mod)
        return snap

    def _remember(self, snap: Snapshot, mod: IRModule) -> None:
        # Weak references: a key's ids are trusted only while its functions are alive, and
        # a recorder never pins old modules (their folded weights) in memory.
        self._recent[snap.key] = (snap, [weakref.ref(f) for _, f in mod.items()])
        if len(self._recent) > self._keep:
            self._recent.popitem(last=False)


@dataclass(slots=True)
class _Frame:
    index: int
    name: str
    opt_level: int
    depth: int
    parent: int | None
    before: Snapshot
    started: float = 0.0
    overhead_at_start: float = 0.0
    module: Any = None  # the module the pass was given
    leaf: bool = True  # no pass ran nested in this one


@dataclass(slots=True)
class PassRecord:
    """What the run summary needs of one finished pass."""

    index: int
    name: str
    depth: int
    parent: int | None
    changed: bool
    leaf: bool
    elapsed_ms: float
    numerics: Numerics | None
    after: int


@dataclass
class RecordingState:
    records: list[PassRecord] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    last_snapshot: Snapshot | None = None


class RecordingInstrument(PassInstrument):
    """Records every pass of the pipeline it instruments (see module docstring)."""

    def __init__(self, recorder: SnapshotRecorder, publish: Publish,
                 cancel: threading.Event | None = None,
                 numerics: PassNumerics | None = None,
                 gate: PassGate | None = None) -> None:
        super().__init__()
        self.gate = gate
        self.recorder = recorder
        self.publish = publish
        self.cancel = cancel or threading.Event()
        self.numerics = numerics
        self.state = RecordingState()
        self._stack: list[_Frame] = []
        self._next_index = 0
        self._overhead = 0.0

    # --- hooks --------------------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        self._stack.clear()

    def exit_pass_ctx(self) -> None:
        self._stack.clear()

    def should_run(self, mod: IRModule, info: Any) -> bool:
        self._check_cancel()
        return True

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        self._check_cancel()
        t0 = time.perf_counter()
        parent = self._stack[-1].index if self._stack else None
        frame = _Frame(self._next_index, str(info.name), int(info.opt_level), len(self._stack),
                       parent, self.recorder.record(mod), module=mod)
        self._next_index += 1
        self.state.last_snapshot = frame.before
        if self.gate is not None:  # a pause here is recording overhead, in no pass's time
            self.gate.before_pass(frame.index, frame.name, frame.before.id)
        if self._stack:
            self._stack[-1].leaf = False
        self.publish(PASS_STARTED, pass_started(
            pass_index=frame.index, name=frame.name, opt_level=frame.opt_level,
            depth=frame.depth, parent_index=frame.parent))
        self._stack.append(frame)
        self._overhead += time.perf_counter() - t0
        frame.overhead_at_start = self._overhead
        frame.started = time.perf_counter()

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        stopped = time.perf_counter()
        frame = self._pop(info)
        if frame is None:
            return
        elapsed = (stopped - frame.started) - (self._overhead - frame.overhead_at_start)
        t0 = time.perf_counter()
        after = self.recorder.record(mod)
        changed = after.key != frame.before.key
        numerics = None if self.numerics is None else self.numerics.after_pass(
            frame.index, frame.name, (frame.before.id, frame.module), (after.id, mod))
        self.state.last_snapshot = after
        record_remarks(self.recorder.store, self.recorder.run_id, frame.index)
        self.state.records.append(PassRecord(frame.index, frame.name, frame.depth, frame.parent,
                                             changed, frame.leaf, elapsed * 1e3, numerics,
                                             after.id))
        self.publish(PASS_FINISHED, pass_finished(
            pass_index=frame.index, name=frame.name, opt_level=frame.opt_level,
            depth=frame.depth, parent_index=frame.parent, before=frame.before.id,
            after=after.id, changed=changed, leaf=frame.leaf,
            elapsed_ms=round(elapsed * 1e3, 4), span_coverage=round(after.coverage, 6),
            stats=pass_stats(nodes=after.num_nodes,
                             nodes_delta=after.num_nodes - frame.before.num_nodes),
            numerics=numerics))
        if self.gate is not None:
            self.gate.after_pass(frame.index, frame.name, frame.leaf, frame.before.id,
                                 after.id)
        self._overhead += time.perf_counter() - t0

    def run_after_pass_failed(self, mod: IRModule, info: Any, exc: BaseException) -> None:
        frame = self._pop(info)
        if frame is None:
            return
        if isinstance(exc, RunCancelledError) or isinstance(exc.__cause__, RunCancelledError):
            return
        message = f"{type(exc).__name__}: {exc}"
        self.state.failed.append((frame.name, message))
        self.publish(PASS_FAILED, pass_failed(pass_index=frame.index, name=frame.name,
                                              message=message, before=frame.before.id))

    # --- helpers ------------------------------------------------------------------
    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise RunCancelledError("the run was cancelled")

    def _pop(self, info: Any) -> _Frame | None:
        name = str(info.name)
        while self._stack:
            frame = self._stack.pop()
            if frame.name == name:
                return frame
        return None
