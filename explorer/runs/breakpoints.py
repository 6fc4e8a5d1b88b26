"""Breakpoints in a run's worker: pause at a pass boundary, wait, go on.

The RecordingInstrument calls its `PauseGate` at each pass boundary: `before_pass` once
the module before the pass is recorded (before `pass_started` is published and before
the pass's clock starts), `after_pass` once `pass_finished` is published. The gate
decides whether a breakpoint (explorer/protocol/debug.py) or a pending step asks to
pause; if so it publishes `run_paused` with the module's snapshot and blocks the
pipeline's thread until the worker's control listener hands it an action: `continue`,
`step` (pause again after the next leaf pass) or `stop`; a cancel wakes it too and
stops the run. Every pause is closed by a `run_resumed` event, so any watcher reading
the event stream knows whether the run is paused now.

The paused time counts in no pass's `elapsed_ms` (the recording counts it as its own
overhead), and the supervisor does not count it as a stall (explorer/runs/supervisor.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TextIO

from explorer.protocol import (
    RUN_PAUSED,
    RUN_RESUMED,
    Breakpoint,
    PauseAt,
    Publish,
    ResumeAction,
    bad_request,
    check_breakpoints,
    run_paused,
    run_resumed,
)
from explorer.protocol.debug import PauseWhen
from explorer.runs.recording import RunCancelledError
from explorer.store import Store


class LayerWatch:
    """Which of the watched layers a pass touched: the expressions carrying a layer (by
    node id, from the snapshots' source maps) differ before and after it. Node ids are
    stable across a run, so a pass that leaves a layer's expressions alone keeps them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[int, dict[str, frozenset[int]]] = {}

    def touched(self, layers: Iterable[str], before: int, after: int) -> list[str]:
        wanted = sorted(set(layers))
        if not wanted or before == after:
            return []
        was, now = self._nodes(before, wanted), self._nodes(after, wanted)
        return [layer for layer in wanted if was[layer] != now[layer]]

    def _nodes(self, snapshot: int, layers: list[str]) -> dict[str, frozenset[int]]:
        known = self._cache.setdefault(snapshot, {})
        missing = [layer for layer in layers if layer not in known]
        if missing:
            table = self.store.snapshot_source_map_table(snapshot)
            known.update(table.nodes_of_layers(missing))
        if len(self._cache) > 8:  # a run walks forward: old snapshots are not asked again
            del self._cache[next(iter(self._cache))]
        return known


class PauseGate:
    """The worker's side of breakpoints (see module docstring). `set_breakpoints`,
    `command` and `wake` come from the control listener thread; the pass hooks from the
    pipeline's thread."""

    def __init__(self, breakpoints: Iterable[Breakpoint], cancel: threading.Event) -> None:
        self.cancel = cancel
        self._breakpoints: list[Breakpoint] = list(breakpoints)
        self._cond = threading.Condition()
        self._paused = False
        self._at: PauseAt | None = None  # the pause it is in (or was in last)
        self._action: ResumeAction | None = None
        self._stepping = False
        self._publish: Publish | None = None
        self._layers: LayerWatch | None = None

    def bind(self, publish: Publish, store: Store) -> None:
        """Where pauses are announced, and the store the snapshots' source maps are in."""
        self._publish = publish
        self._layers = LayerWatch(store)

    # --- control (listener thread) --------------------------------------------------------
    def set_breakpoints(self, breakpoints: Iterable[Breakpoint]) -> None:
        with self._cond:
            self._breakpoints = list(breakpoints)

    def command(self, action: ResumeAction, at: PauseAt | None = None) -> bool:
        """Resume a paused run; False (and nothing happens) when it is not paused, or not
        at pause `at` (when given: the answer to a pause that has ended is not the next
        pause's)."""
        with self._cond:
            if not self._paused or self._action is not None:
                return False
            if at is not None and at != self._at:
                return False
            self._action = action
            self._cond.notify_all()
            return True

    def wake(self) -> None:
        """The run was cancelled: a pause ends (as `stop`)."""
        with self._cond:
            self._cond.notify_all()

    # --- pass hooks (pipeline thread) -----------------------------------------------------
    def before_pass(self, index: int, name: str, snapshot: int) -> None:
        point = self._matching("before", name)
        if point is not None:
            self._pause(index, name, "before", snapshot, f"breakpoint before {name}", point,
                        [])

    def after_pass(self, index: int, name: str, leaf: bool, before: int, after: int) -> None:
        point = self._matching("after", name)
        if point is not None:
            self._pause(index, name, "after", after, f"breakpoint after {name}", point, [])
            return
        if not leaf:
            return
        touched, point = self._touched(before, after)
        if point is not None:
            self._pause(index, name, "after", after,
                        f"{name} touched layer {', '.join(touched)}", point, touched)
        elif self._stepping:
            self._pause(index, name, "after", after, f"stepped over {name}", None, [])

    def _await_action(self, snapshot: int) -> ResumeAction:
        """Block until `command()` or a cancel says how to go on (the terminal's gate asks
        its user instead)."""
        with self._cond:
            while self._action is None and not self.cancel.is_set():
                self._cond.wait()
            return "stop" if self.cancel.is_set() else (self._action or "stop")

    # --- helpers -------------------------------------------------------------------------
    def _matching(self, kind: str, name: str) -> Breakpoint | None:
        with self._cond:
            return next((b for b in self._breakpoints
                         if b["kind"] == kind and b["target"] == name), None)

    def _touched(self, before: int, after: int) -> tuple[list[str], Breakpoint | None]:
        with self._cond:
            watched = [b for b in self._breakpoints if b["kind"] == "touches"]
        if not watched or self._layers is None:
            return [], None
        touched = self._layers.touched((b["target"] for b in watched), before, after)
        point = next((b for b in watched if b["target"] in touched), None)
        return touched, point

    def _pause(self, index: int, name: str, when: PauseWhen, snapshot: int, reason: str,
               point: Breakpoint | None, layers: list[str]) -> None:
        assert self._publish is not None, "PauseGate.bind() first"
        with self._cond:
            self._paused, self._action, self._stepping = True, None, False
            self._at = PauseAt(pass_index=index, when=when)
        self._publish(RUN_PAUSED, run_paused(pass_index=index, name=name, when=when,
                                             snapshot=snapshot, reason=reason,
                                             breakpoint=point, layers=layers))
        action = self._await_action(snapshot)
        with self._cond:
            self._paused, self._action = False, None
            self._stepping = action == "step"
        self._publish(RUN_RESUMED, run_resumed(action=action))
        if action == "stop":
            self.cancel.set()
            raise RunCancelledError("the run was stopped at a breakpoint")


class TerminalGate(PauseGate):
    """`explorer run --break ...`: at a pause, the terminal asks what to do (continue, step,
    print the module, stop); the end of the input continues."""

    PROMPT = "paused: [c]ontinue, [s]tep one pass, [p]rint the module, [q]uit (stop) > "
    ACTIONS: dict[str, ResumeAction] = {"c": "continue", "continue": "continue", "": "continue",
                                        "s": "step", "step": "step", "q": "stop",
                                        "quit": "stop", "stop": "stop"}

    def __init__(self, breakpoints: Iterable[Breakpoint], store: Store, read: TextIO,
                 out: TextIO) -> None:
        super().__init__(breakpoints, threading.Event())
        self.store, self.read, self.out = store, read, out

    def _await_action(self, snapshot: int) -> ResumeAction:
        while True:
            print(f"\n{self.PROMPT}", end="", file=self.out, flush=True)
            line = self.read.readline()
            if not line:  # end of input: run on
                print("(end of input: continuing)", file=self.out)
                return "continue"
            answer = line.strip().lower()
            if not self.read.isatty():  # piped answers: the transcript shows them
                print(answer, file=self.out)
            if answer in ("p", "print"):
                print(self.store.snapshot(snapshot)["text"], file=self.out)
            elif answer in self.ACTIONS:
                return self.ACTIONS[answer]
            else:
                print(f"unknown answer {answer!r}", file=self.out)


def parse_breakpoint(text: str) -> Breakpoint:
    """`before:FuseOps`, `after:FoldConstant` or `touches:conv1` (the CLI's --break)."""
    kind, sep, target = text.partition(":")
    if not sep:
        raise bad_request("bad_breakpoints", f"--break {text!r}: write before:PASS, "
                          "after:PASS or touches:LAYER")
    return check_breakpoints([{"kind": kind, "target": target}])[0]
