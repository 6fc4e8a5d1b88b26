"""Every payload shape and event name of the explorer, defined once.

docs/PROTOCOL.md describes the same contract in prose; `static/src/protocol.js`
mirrors it for the front end. Change the three together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

NAMESPACE = "/explorer"
RUN_EVENT = "run_event"

# Client -> server socket events.
START_RUN = "start_run"
SUBSCRIBE = "subscribe"
UNSUBSCRIBE = "unsubscribe"
CANCEL_RUN = "cancel_run"

# RunEvent types.
RUN_QUEUED = "run_queued"
RUN_STARTED = "run_started"
PASS_STARTED = "pass_started"
PASS_FINISHED = "pass_finished"
PASS_FAILED = "pass_failed"
BUILD_STARTED = "build_started"
BUILD_FINISHED = "build_finished"
RUN_FINISHED = "run_finished"
RUN_FAILED = "run_failed"
RUN_CANCELLED = "run_cancelled"
TERMINAL_EVENTS = frozenset({RUN_FINISHED, RUN_FAILED, RUN_CANCELLED})

RunStatus = Literal["running", "finished", "failed", "cancelled", "interrupted"]
ModelFormat = Literal["onnx", "tflite", "pytorch", "relay"]
UPLOAD_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "onnx": (".onnx",),
    "tflite": (".tflite",),
    "pytorch": (".pt2",),
    "relay": (".relay", ".txt"),
}


class ErrorBody(TypedDict):
    code: str
    message: str
    detail: Any


class ApiError(Exception):
    """An error answered at the boundary as `{"error": {code, message, detail}}`."""

    def __init__(self, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail

    def body(self) -> dict[str, ErrorBody]:
        return {"error": {"code": self.code, "message": self.message, "detail": self.detail}}


def bad_request(code: str, message: str, detail: Any = None) -> ApiError:
    return ApiError(400, code, message, detail)


def not_found(what: str, key: object) -> ApiError:
    return ApiError(404, "not_found", f"no {what} {key!r}", {"what": what})


class TensorInfo(TypedDict):
    name: str
    shape: list[int | str]
    dtype: str


class Session(TypedDict):
    id: str
    name: str
    format: str
    created: float
    num_layers: int
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]


class Layer(TypedDict):
    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]


class FrontendGraph(TypedDict):
    layers: list[Layer]
    inputs: list[Any]
    outputs: list[Any]


class SourceMapEntry(TypedDict):
    node_id: int
    kind: str
    start: list[int]
    end: list[int]
    spans: list[str]
    op: str | None


class Numerics(TypedDict):
    max_abs_err: float
    ok: bool


class RunSummary(TypedDict):
    id: str
    session_id: str
    status: str
    options: dict[str, Any]
    num_passes: int
    num_changed: int
    total_ms: float
    first_numerics_break: str | None
    drifted_layers: list[str]
    failed_pass: str | None
    error: str | None
    final_snapshot: int | None


class RunEvent(TypedDict):
    run_id: str
    session_id: str
    index: int
    type: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What a client may ask of a pipeline run (validated at the boundary): by default the
    run is relay.build at opt_level 3; `build` false runs relay.optimize; `passes` runs
    that explicit list instead of the standard pipeline (and cannot be built)."""

    opt_level: int = 3
    disabled_pass: tuple[str, ...] = ()
    required_pass: tuple[str, ...] = ()
    passes: tuple[str, ...] | None = None
    check_numerics: bool = False
    build: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "opt_level": self.opt_level,
            "disabled_pass": list(self.disabled_pass),
            "required_pass": list(self.required_pass),
            "passes": None if self.passes is None else list(self.passes),
            "check_numerics": self.check_numerics,
            "build": self.build,
        }

    @staticmethod
    def from_json(raw: Any) -> RunOptions:
        if raw is None:
            return RunOptions()
        if not isinstance(raw, dict):
            raise bad_request("bad_options", "run options must be an object")
        unknown = sorted(set(raw) - set(RunOptions().to_json()))
        if unknown:
            raise bad_request("bad_options", f"unknown run options: {', '.join(unknown)}",
                              {"unknown": unknown})
        level = raw.get("opt_level", 3)
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 3:
            raise bad_request("bad_options", "opt_level must be an integer from 0 to 3")
        passes = raw.get("passes")
        build = _flag(raw.get("build", passes is None), "build")
        if build and passes is not None:
            raise bad_request("bad_options", "passes replaces relay.build's pipeline: an "
                              "explicit pass list runs with build false")
        return RunOptions(
            opt_level=level,
            disabled_pass=_names(raw.get("disabled_pass"), "disabled_pass"),
            required_pass=_names(raw.get("required_pass"), "required_pass"),
            passes=None if passes is None else _names(passes, "passes"),
            check_numerics=_flag(raw.get("check_numerics", False), "check_numerics"),
            build=build,
        )


def _names(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise bad_request("bad_options", f"{key} must be a list of pass names")
    return tuple(value)


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise bad_request("bad_options", f"{key} must be true or false")
    return value


def empty_summary(run_id: str, session_id: str, options: dict[str, Any]) -> RunSummary:
    return RunSummary(
        id=run_id, session_id=session_id, status="running", options=options, num_passes=0,
        num_changed=0, total_ms=0.0, first_numerics_break=None, drifted_layers=[],
        failed_pass=None, error=None, final_snapshot=None,
    )
