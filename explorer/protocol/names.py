"""The names of the protocol: namespace, socket events, RunEvent types, statuses, formats."""

from typing import Literal, get_args

NAMESPACE = "/explorer"

MAX_SAFE_INT = 2**53 - 1
"""The largest integer the protocol carries (JavaScript's Number.MAX_SAFE_INTEGER): a
`since`, an index or a count beyond it is refused, never passed to SQLite."""

# Server -> client: the one Socket.IO event, its payload a RunEvent.
RUN_EVENT = "run_event"

# Client -> server socket events (each answered by an ack).
START_RUN = "start_run"
SUBSCRIBE = "subscribe"
UNSUBSCRIBE = "unsubscribe"
CANCEL_RUN = "cancel_run"
SET_BREAKPOINTS = "set_breakpoints"
RESUME_RUN = "resume_run"
CLIENT_EVENTS = (START_RUN, SUBSCRIBE, UNSUBSCRIBE, CANCEL_RUN, SET_BREAKPOINTS, RESUME_RUN)

# RunEvent types, in the order a run publishes them.
RUN_QUEUED = "run_queued"
RUN_STARTED = "run_started"
NUMERICS_UNAVAILABLE = "numerics_unavailable"  # asked for, but the numerics are not checked
PASS_STARTED = "pass_started"
PASS_FINISHED = "pass_finished"
PASS_FAILED = "pass_failed"
RUN_PAUSED = "run_paused"  # a breakpoint (or a step) holds the run in its worker
RUN_RESUMED = "run_resumed"
BUILD_STARTED = "build_started"
BUILD_PROGRESS = "build_progress"
BUILD_FINISHED = "build_finished"
RUN_FINISHED = "run_finished"
RUN_FAILED = "run_failed"
RUN_CANCELLED = "run_cancelled"
TERMINAL_EVENTS = frozenset({RUN_FINISHED, RUN_FAILED, RUN_CANCELLED})

RunStatus = Literal["running", "finished", "failed", "cancelled", "interrupted"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "finished", "failed", "cancelled",
                                       "interrupted")

ModelFormat = Literal["onnx", "tflite", "pytorch", "relay"]
MODEL_FORMATS: tuple[ModelFormat, ...] = get_args(ModelFormat)


def model_format(name: str) -> ModelFormat:
    """`name` as a ModelFormat (a ValueError for any other name)."""
    if name not in MODEL_FORMATS:
        raise ValueError(f"unknown model format {name!r}; known: {', '.join(MODEL_FORMATS)}")
    return name


UPLOAD_EXTENSIONS: dict[ModelFormat, tuple[str, ...]] = {
    "onnx": (".onnx",),
    "tflite": (".tflite",),
    "pytorch": (".pt2",),
    "relay": (".relay", ".txt"),
}
RAW_UPLOAD_TYPE = "application/octet-stream"
"""POST /api/sessions?name=FILE with this Content-Type: the body is the model file itself
(the page's upload; no multipart to parse)."""

# What a backtrace step says a pass did to the node.
BacktraceAction = Literal["created", "changed", "kept"]
BACKTRACE_ACTIONS: tuple[BacktraceAction, ...] = ("created", "changed", "kept")

DiffTag = Literal["replace", "delete", "insert"]

# run_failed codes the run path itself produces (an API error code may also appear).
RUN_FAILED_CODES = ("pass_failed", "run_failed", "worker_crashed", "interrupted")

# The TEDD views of a schedule step, in display order.
TEDD_VIEWS = ("schedule_tree", "itervar", "dataflow")
