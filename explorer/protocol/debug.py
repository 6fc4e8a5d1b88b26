"""Debugging a run: breakpoints, pausing and resuming, and comparing two runs.

A breakpoint is `{"kind": "before" | "after", "target": pass name}` (the run pauses
before / after every pass of that name) or `{"kind": "touches", "target": layer name}`
(the run pauses after a leaf pass that created, removed or rewrote an expression carrying
that frontend layer in its span). A paused run's worker waits inside its PassInstrument
until it is told to `continue`, `step` (run one leaf pass, then pause after it) or `stop`
(cancel the run).

No `from __future__ import annotations`: Python 3.11 only sees `NotRequired` in a
TypedDict whose annotations are evaluated (see shapes.py).
"""

from typing import Any, Literal, NotRequired, TypedDict, get_args

from explorer.protocol.errors import bad_request
from explorer.protocol.shapes import Numerics

BreakpointKind = Literal["before", "after", "touches"]
BREAKPOINT_KINDS: tuple[BreakpointKind, ...] = get_args(BreakpointKind)

ResumeAction = Literal["continue", "step", "stop"]
RESUME_ACTIONS: tuple[ResumeAction, ...] = get_args(ResumeAction)

PauseWhen = Literal["before", "after"]

MAX_BREAKPOINTS = 64
MAX_TARGET_CHARS = 512


class Breakpoint(TypedDict):
    """Pause before / after a pass named `target`, or after a pass that touches layer `target`."""

    kind: BreakpointKind
    target: str


class BreakpointsRequest(TypedDict):
    """`set_breakpoints` (socket) / PUT /api/runs/<rid>/breakpoints: replaces the run's list."""

    run_id: str
    breakpoints: list[Breakpoint]


class BreakpointList(TypedDict):
    """GET or PUT /api/runs/<rid>/breakpoints, and the `set_breakpoints` ack: the run's
    breakpoints; `live` is false when the run no longer executes here (nothing can pause)."""

    breakpoints: list[Breakpoint]
    live: bool


class PauseAt(TypedDict):
    """One pause of a run: a pass boundary is passed once, so `pass_index` and `when` (as
    its `run_paused` gave them) name it."""

    pass_index: int
    when: PauseWhen


class ResumeRequest(TypedDict):
    """`resume_run` (socket) / POST /api/runs/<rid>/resume. With `at`, only that pause is
    answered: a click meant for a pause another page already answered does not resume the
    run's next one (the ack says `ok: false`)."""

    run_id: str
    action: ResumeAction
    at: NotRequired[PauseAt | None]


class ResumeAck(TypedDict):
    """`ok` false when the run was not paused (or not live here): nothing was resumed."""

    ok: bool


# --- run events -------------------------------------------------------------------------------
class RunPaused(TypedDict):
    """The run waits in its worker, `when` "before" or "after" pass `pass_index` `name`;
    `snapshot` is the module at that point. `reason` says why in words; `breakpoint` is the
    one that matched (null after a `step`); `layers`, for a `touches` breakpoint, the chosen
    layers the pass touched."""

    pass_index: int
    name: str
    when: PauseWhen
    snapshot: int
    reason: str
    breakpoint: Breakpoint | None
    layers: list[str]


class RunResumed(TypedDict):
    """The paused run goes on (`continue`, `step`) or is being stopped (`stop`)."""

    action: ResumeAction


def run_paused(*, pass_index: int, name: str, when: PauseWhen, snapshot: int, reason: str,
               breakpoint: Breakpoint | None, layers: list[str]) -> RunPaused:
    return RunPaused(pass_index=pass_index, name=name, when=when, snapshot=snapshot,
                     reason=reason, breakpoint=breakpoint, layers=layers)


def run_resumed(*, action: ResumeAction) -> RunResumed:
    return RunResumed(action=action)


# --- comparing two runs -------------------------------------------------------------------
class ComparedPass(TypedDict):
    """One run's side of a compared pass (a leaf pass_finished, or its pass_failed)."""

    pass_index: int
    changed: bool
    failed: bool
    elapsed_ms: float | None
    nodes: int | None
    before: int | None
    after: int | None
    numerics: Numerics | None


class ComparisonRow(TypedDict):
    """One leaf pass aligned across the two runs (by `path` and `name`): `a` or `b` is null
    where that run did not run it; `same_after` is true when both after-snapshots print
    the same text."""

    name: str
    path: list[str]  # the Sequentials the pass ran in, outermost first
    a: ComparedPass | None
    b: ComparedPass | None
    same_after: bool | None


class RunComparison(TypedDict):
    """GET /api/compare?a=<run>&b=<run>: the leaf passes of two runs aligned by name."""

    a: str
    b: str
    rows: list[ComparisonRow]
    same_final: bool | None  # the two runs' final modules print the same text


# --- validation at the boundary -------------------------------------------------------------
def check_breakpoints(raw: Any) -> list[Breakpoint]:
    """`raw` as a list of breakpoints, or a 400 naming what is wrong (duplicates dropped)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("bad_breakpoints", "breakpoints must be a list")
    if len(raw) > MAX_BREAKPOINTS:
        raise bad_request("bad_breakpoints", f"at most {MAX_BREAKPOINTS} breakpoints")
    found: list[Breakpoint] = []
    for k, item in enumerate(raw):
        point = _breakpoint(item, k)
        if point not in found:
            found.append(point)
    return found


def _breakpoint(item: Any, k: int) -> Breakpoint:
    if not isinstance(item, dict) or set(item) != {"kind", "target"}:
        raise bad_request("bad_breakpoints",
                          f'breakpoint {k} must be {{"kind": ..., "target": ...}}')
    kind, target = item["kind"], item["target"]
    if kind not in BREAKPOINT_KINDS:
        raise bad_request("bad_breakpoints", f"breakpoint {k}: kind must be one of "
                          f"{', '.join(BREAKPOINT_KINDS)}, not {kind!r}")
    if not isinstance(target, str) or not target.strip() or len(target) > MAX_TARGET_CHARS:
        raise bad_request("bad_breakpoints", f"breakpoint {k}: target must be a pass or "
                          f"layer name of 1 to {MAX_TARGET_CHARS} characters")
    return Breakpoint(kind=kind, target=target.strip())


def check_action(raw: Any) -> ResumeAction:
    if raw not in RESUME_ACTIONS:
        raise bad_request("bad_action", f"action must be one of {', '.join(RESUME_ACTIONS)}, "
                          f"not {raw!r}")
    action: ResumeAction = raw
    return action


def check_pause_at(raw: Any) -> PauseAt | None:
    """A resume's `at` (None when absent), or a 400 naming what is wrong."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"pass_index", "when"} \
            or type(raw["pass_index"]) is not int or raw["pass_index"] < 0 \
            or raw["when"] not in get_args(PauseWhen):
        raise bad_request("bad_pause", 'at must be {"pass_index": int >= 0, '
                          '"when": "before" | "after"}, as run_paused gave them')
    return PauseAt(pass_index=raw["pass_index"], when=raw["when"])


def check_run_pair(a: Any, b: Any) -> tuple[str, str]:
    if not isinstance(a, str) or not isinstance(b, str) or not a or not b:
        raise bad_request("bad_argument", "compare needs two run ids: ?a=<run>&b=<run>")
    return a, b
