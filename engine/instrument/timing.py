"""PassTimingInstrument: wall time of every pass, nested as the passes are.

A Sequential's children are timed under it; `render()` prints the tree, one
line per pass, children indented by a tab:

    name: total_us [self_us] (percent of all; percent of parent)

Profiles are cleared when a context holding the instrument is entered or
exited (as in TVM: render before leaving the scope), so after
`override_instruments(None)` render() is empty.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from engine.transform.hooks import PassInstrument


@dataclass(eq=False, slots=True)
class PassProfile:
    """One timed pass run and the passes it ran."""

    name: str
    info: Any
    start: float
    end: float | None = None
    failed: bool = False
    children: list[PassProfile] = field(default_factory=list)

    @property
    def duration_us(self) -> float:
        end = self.end if self.end is not None else time.perf_counter()
        return (end - self.start) * 1e6

    @property
    def self_us(self) -> float:
        return max(self.duration_us - sum(c.duration_us for c in self.children), 0.0)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "duration_us": self.duration_us, "self_us": self.self_us,
                "failed": self.failed, "children": [c.as_dict() for c in self.children]}


class PassTimingInstrument(PassInstrument):
    """Times each pass (nested); `render()` returns the timing tree as text."""

    def __init__(self) -> None:
        self._roots: list[PassProfile] = []
        self._open: list[PassProfile] = []

    @property
    def profiles(self) -> list[PassProfile]:
        """The top-level timed passes, each with its children."""
        return list(self._roots)

    def enter_pass_ctx(self) -> None:
        self._clear()

    def exit_pass_ctx(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._roots = []
        self._open = []

    def run_before_pass(self, mod: Any, info: Any) -> None:
        profile = PassProfile(info.name, info, 0.0)
        siblings = self._open[-1].children if self._open else self._roots
        siblings.append(profile)
        self._open.append(profile)
        profile.start = time.perf_counter()

    def run_after_pass(self, mod: Any, info: Any) -> None:
        self._close(info, failed=False)

    def run_after_pass_failed(self, mod: Any, info: Any, exc: BaseException) -> None:
        self._close(info, failed=True)

    def _close(self, info: Any, failed: bool) -> None:
        now = time.perf_counter()
        while self._open:
            profile = self._open.pop()
            if profile.end is None:
                profile.end = now
            if profile.info is info:
                profile.failed = failed
                return

    def render(self) -> str:
        """The timing tree as text ("" when nothing was timed)."""
        total = sum(p.duration_us for p in self._roots)
        lines: list[str] = []
        for root in self._roots:
            _render(root, 0, total, total, lines)
        return "\n".join(lines)


def _render(profile: PassProfile, depth: int, total: float, parent: float,
            lines: list[str]) -> None:
    duration = profile.duration_us
    share_total = 100.0 * duration / total if total else 0.0
    share_parent = 100.0 * duration / parent if parent else 0.0
    failed = " FAILED" if profile.failed else ""
    lines.append(f"{chr(9) * depth}{profile.name}: {duration:.0f}us [{profile.self_us:.0f}us] "
                 f"({share_total:.2f}%; {share_parent:.2f}%){failed}")
    for child in profile.children:
        _render(child, depth + 1, total, duration, lines)
