"""The passes running in one thread under one PassContext: a stack of frames.

A frame is pushed when a pass starts (after `should_run` said yes) and popped
after its `run_after_pass` / `run_after_pass_failed` hooks, so inside the
hooks the stack holds the running pass on top and its enclosing Sequentials
below it. Frames are numbered in start order (0, 1, 2, ... per context scope).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from engine.transform.pass_info import PassInfo

HISTORY_LIMIT = 256
"""How many finished pass names a context remembers for error messages."""


@dataclass(eq=False, slots=True)
class PassFrame:
    """One running pass: its start index, info, nesting depth, parent, statistics and
    remarks."""

    index: int
    info: PassInfo
    depth: int
    parent: PassFrame | None
    stats: dict[str, float] = field(default_factory=dict)
    remarks: list[Any] = field(default_factory=list)  # engine.transform.remarks.Remark
    finished: bool = False
    rewrites: int = 0  # rewrites counted in this run of the pass (engine.transform.bisect)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def parent_index(self) -> int | None:
        return None if self.parent is None else self.parent.index


class RunState(threading.local):
    """Per-thread run state of one PassContext (each thread sees its own)."""

    def __init__(self) -> None:
        self.frames: list[PassFrame] = []
        self.next_index = 0
        self.history: deque[str] = deque(maxlen=HISTORY_LIMIT)
        self.hook_error: BaseException | None = None

    def reset(self) -> None:
        """Start numbering afresh (a new `with` scope), unless passes are running."""
        if self.frames:
            return
        self.next_index = 0
        self.history.clear()
        self.hook_error = None

    def push(self, info: PassInfo) -> PassFrame:
        parent = self.frames[-1] if self.frames else None
        frame = PassFrame(self.next_index, info, len(self.frames), parent)
        self.next_index += 1
        self.frames.append(frame)
        return frame

    def pop(self, frame: PassFrame) -> None:
        while self.frames:
            if self.frames.pop() is frame:
                break
        if frame.finished:
            self.history.append(frame.info.name)
