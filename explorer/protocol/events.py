"""The data of every RunEvent type: one TypedDict and one builder each.

`EVENT_PAYLOADS` maps each event type to its payload type; emitting sites build
payloads with the builders (keyword-only, so every field is named where it is
emitted) and readers annotate with the TypedDicts.
"""

from collections.abc import Callable
from typing import TypedDict, TypeVar, cast

from explorer.protocol.debug import RunPaused, RunResumed
from explorer.protocol.debug import run_paused as run_paused  # builders of every event type
from explorer.protocol.debug import run_resumed as run_resumed  # are reachable from here
from explorer.protocol.names import (
    BUILD_FINISHED,
    BUILD_PROGRESS,
    BUILD_STARTED,
    NUMERICS_UNAVAILABLE,
    PASS_FAILED,
    PASS_FINISHED,
    PASS_STARTED,
    RUN_CANCELLED,
    RUN_FAILED,
    RUN_FINISHED,
    RUN_PAUSED,
    RUN_QUEUED,
    RUN_RESUMED,
    RUN_STARTED,
)
from explorer.protocol.options import RunOptionsJSON
from explorer.protocol.shapes import Numerics, RunEvent, RunSummary


class RunQueued(TypedDict):
    """The run waits for a free worker (MAX_CONCURRENT_RUNS); 1 = next in line."""

    position: int
    max_concurrent: int


class PlannedPass(TypedDict):
    """One leaf pass the run will execute, in order."""

    name: str
    depth: int
    opt_level: int


class RunStarted(TypedDict):
    """The run got a worker; `initial_snapshot` is the imported module."""

    options: RunOptionsJSON
    initial_snapshot: int
    num_passes_planned: int | None  # len(plan); null when the plan cannot be worked out
    plan: list[PlannedPass]


class NumericsUnavailable(TypedDict):
    """check_numerics was asked, but this run's numerics are not checked (published after
    run_started, before the first pass finishes): the model cannot be evaluated, or its
    weights are over the numerics weight limit. The run goes on without numerics."""

    message: str


class PassStarted(TypedDict):
    """A pass (or a Sequential, around its children) began."""

    pass_index: int
    name: str
    opt_level: int
    depth: int
    parent_index: int | None


class PassStats(TypedDict):
    nodes: int  # computing expressions after the pass
    nodes_delta: int


class PassFinished(PassStarted):
    """A pass ended; `leaf`: no other pass ran nested inside it."""

    before: int
    after: int
    changed: bool
    leaf: bool
    elapsed_ms: float  # excludes the recording itself
    span_coverage: float  # 0..1
    stats: PassStats
    numerics: Numerics | None


class PassFailed(TypedDict):
    """A pass raised; its Sequentials report the same failure after it."""

    pass_index: int
    name: str
    message: str
    before: int
    after: None


class BuildStarted(TypedDict):
    """relay.build began lowering (no fields): LowerTE started."""


class BuildProgress(TypedDict):
    """LowerTE lowered `done` of the `total` fused calls, into `kernels` distinct kernels so
    far (calls of identical functions share one); `kernel` is the last one. Sent at most a
    few times a second, always for the first and the last call."""

    done: int
    total: int
    kernels: int
    kernel: str


class BuildFinished(TypedDict):
    num_nodes: int
    num_kernels: int


class RunFinished(TypedDict):
    summary: RunSummary


RunFailed = TypedDict("RunFailed", {"pass": str | None, "message": str, "code": str})
RunFailed.__doc__ = "The run ended failed; `pass` names the failing pass, `code` says how."


class RunCancelled(TypedDict):
    """The run was cancelled; `message` when the server stopped a stalled run."""

    message: str | None


EventData = (RunQueued | RunStarted | NumericsUnavailable | PassStarted | PassFinished | PassFailed | RunPaused
             | RunResumed | BuildStarted | BuildProgress | BuildFinished | RunFinished
             | RunFailed | RunCancelled)

EVENT_PAYLOADS: dict[str, type] = {
    RUN_QUEUED: RunQueued,
    RUN_STARTED: RunStarted,
    NUMERICS_UNAVAILABLE: NumericsUnavailable,
    PASS_STARTED: PassStarted,
    PASS_FINISHED: PassFinished,
    PASS_FAILED: PassFailed,
    RUN_PAUSED: RunPaused,
    RUN_RESUMED: RunResumed,
    BUILD_STARTED: BuildStarted,
    BUILD_PROGRESS: BuildProgress,
    BUILD_FINISHED: BuildFinished,
    RUN_FINISHED: RunFinished,
    RUN_FAILED: RunFailed,
    RUN_CANCELLED: RunCancelled,
}

Publish = Callable[[str, EventData], None]
"""What the run path publishes through: an event type and the payload built for it."""


# --- builders --------------------------------------------------------------------------------
def run_queued(*, position: int, max_concurrent: int) -> RunQueued:
    return RunQueued(position=position, max_concurrent=max_concurrent)


def planned_pass(*, name: str, depth: int, opt_level: int) -> PlannedPass:
    return PlannedPass(name=name, depth=depth, opt_level=opt_level)


def run_started(*, options: RunOptionsJSON, initial_snapshot: int,
                num_passes_planned: int | None, plan: list[PlannedPass]) -> RunStarted:
    return RunStarted(options=options, initial_snapshot=initial_snapshot,
                      num_passes_planned=num_passes_planned, plan=plan)


def numerics_unavailable(*, message: str) -> NumericsUnavailable:
    return NumericsUnavailable(message=message)


def pass_started(*, pass_index: int, name: str, opt_level: int, depth: int,
                 parent_index: int | None) -> PassStarted:
    return PassStarted(pass_index=pass_index, name=name, opt_level=opt_level, depth=depth,
                       parent_index=parent_index)


def pass_stats(*, nodes: int, nodes_delta: int) -> PassStats:
    return PassStats(nodes=nodes, nodes_delta=nodes_delta)


def pass_finished(*, pass_index: int, name: str, opt_level: int, depth: int,
                  parent_index: int | None, before: int, after: int, changed: bool,
                  leaf: bool, elapsed_ms: float, span_coverage: float, stats: PassStats,
                  numerics: Numerics | None) -> PassFinished:
    return PassFinished(pass_index=pass_index, name=name, opt_level=opt_level, depth=depth,
                        parent_index=parent_index, before=before, after=after,
                        changed=changed, leaf=leaf, elapsed_ms=elapsed_ms,
                        span_coverage=span_coverage, stats=stats, numerics=numerics)


def pass_failed(*, pass_index: int, name: str, message: str, before: int) -> PassFailed:
    return PassFailed(pass_index=pass_index, name=name, message=message, before=before,
                      after=None)


def build_started() -> BuildStarted:
    return BuildStarted()


def build_progress(*, done: int, total: int, kernels: int, kernel: str) -> BuildProgress:
    return BuildProgress(done=done, total=total, kernels=kernels, kernel=kernel)


def build_finished(*, num_nodes: int, num_kernels: int) -> BuildFinished:
    return BuildFinished(num_nodes=num_nodes, num_kernels=num_kernels)


def run_finished(*, summary: RunSummary) -> RunFinished:
    return RunFinished(summary=summary)


def run_failed(*, pass_name: str | None, message: str, code: str) -> RunFailed:
    """`pass_name` is the payload's `pass` (a Python keyword)."""
    return RunFailed({"pass": pass_name, "message": message, "code": code})


def run_cancelled(*, message: str | None) -> RunCancelled:
    return RunCancelled(message=message)


def numerics(*, max_abs_err: float | None, ok: bool, error: str | None = None,
             quantized: bool = False, max_lsb_err: float | None = None) -> Numerics:
    """A numerics result; `error` only when the snapshot could not be evaluated,
    `max_lsb_err` only when the model has `quantized` outputs."""
    result = Numerics(max_abs_err=max_abs_err, ok=ok)
    if quantized:
        result["max_lsb_err"] = max_lsb_err
    if error is not None:
        result["error"] = error
    return result


# --- readers ---------------------------------------------------------------------------------
Payload = TypeVar("Payload")


def data_as(event: RunEvent, payload: type[Payload]) -> Payload:
    """The event's data as the payload type its `type` names (a KeyError or TypeError when
    `payload` is not that type): `data_as(event, PassFinished)["leaf"]`."""
    declared = EVENT_PAYLOADS[event["type"]]
    if declared is not payload:
        raise TypeError(f"a {event['type']} event carries {declared.__name__}, "
                        f"not {payload.__name__}")
    return cast(Payload, event["data"])
