"""Every payload shape and event name of the explorer, declared once.

- `names`: the namespace, socket event names, RunEvent types, statuses, formats;
- `errors`: the error body and `ApiError`;
- `options`: `RunOptions` and its wire form;
- `shapes`: sessions, graphs, source maps, numerics, run summaries, the RunEvent envelope;
- `events`: the data of each RunEvent type, with one builder each (`EVENT_PAYLOADS`);
- `http`: the HTTP answers and the socket acks;
- `checks`: a runtime check of a JSON value against any of these declarations.

docs/PROTOCOL.md describes the same contract in prose. The front end's constants and
typedefs are generated from here into `static/src/protocol.gen.js`
(`python -m explorer.protocol.js_gen`); a test fails when that file is stale.
"""

from explorer.protocol.errors import (
    ApiError,
    ErrorBody,
    ErrorResponse,
    bad_request,
    error_response,
    not_found,
)
from explorer.protocol.events import (
    EVENT_PAYLOADS,
    BuildFinished,
    BuildStarted,
    EventData,
    PassFailed,
    PassFinished,
    PassStarted,
    PassStats,
    PlannedPass,
    Publish,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunQueued,
    RunStarted,
    build_finished,
    build_started,
    data_as,
    numerics,
    pass_failed,
    pass_finished,
    pass_started,
    pass_stats,
    planned_pass,
    run_cancelled,
    run_failed,
    run_finished,
    run_queued,
    run_started,
)
from explorer.protocol.http import (
    Ack,
    Backtrace,
    BacktraceStep,
    Diff,
    DiffHunk,
    DiffNodes,
    EventsPage,
    ExportedEvent,
    ExportedGraph,
    ExportedSnapshot,
    LayerLookup,
    LayerNode,
    OkAck,
    PassList,
    RunArtifacts,
    RunDetail,
    RunExport,
    RunImported,
    RunRequest,
    ScheduleDetail,
    ScheduleList,
    ScheduleNode,
    ScheduleRecord,
    ScheduleStep,
    SessionCreated,
    SessionDetail,
    SessionList,
    Snapshot,
    SnapshotDetail,
    SnapshotSourceMap,
    SnapshotSourceMapDetail,
    SnapshotText,
    SnapshotTextDetail,
    StartRunAck,
    StartRunRequest,
    SubscribeAck,
    SubscribeRequest,
    TeddDiagrams,
    Timing,
    TimingNode,
)
from explorer.protocol.names import (
    BACKTRACE_ACTIONS,
    BUILD_FINISHED,
    BUILD_STARTED,
    CANCEL_RUN,
    CLIENT_EVENTS,
    MAX_SAFE_INT,
    MODEL_FORMATS,
    NAMESPACE,
    PASS_FAILED,
    PASS_FINISHED,
    PASS_STARTED,
    RUN_CANCELLED,
    RUN_EVENT,
    RUN_FAILED,
    RUN_FAILED_CODES,
    RUN_FINISHED,
    RUN_QUEUED,
    RUN_STARTED,
    RUN_STATUSES,
    START_RUN,
    SUBSCRIBE,
    TEDD_VIEWS,
    TERMINAL_EVENTS,
    UNSUBSCRIBE,
    UPLOAD_EXTENSIONS,
    BacktraceAction,
    DiffTag,
    ModelFormat,
    RunStatus,
    model_format,
)
from explorer.protocol.options import RunOptions, RunOptionsJSON
from explorer.protocol.shapes import (
    FrontendGraph,
    Layer,
    Numerics,
    RunEvent,
    RunSummary,
    Session,
    SourceMapEntry,
    TensorInfo,
    empty_summary,
)

__all__ = [
    "MAX_SAFE_INT",
    # names
    "BACKTRACE_ACTIONS", "BUILD_FINISHED", "BUILD_STARTED", "CANCEL_RUN", "CLIENT_EVENTS",
    "MODEL_FORMATS", "model_format",
    "NAMESPACE", "PASS_FAILED", "PASS_FINISHED", "PASS_STARTED", "RUN_CANCELLED", "RUN_EVENT",
    "RUN_FAILED", "RUN_FAILED_CODES", "RUN_FINISHED", "RUN_QUEUED", "RUN_STARTED",
    "RUN_STATUSES", "START_RUN", "SUBSCRIBE", "TEDD_VIEWS", "TERMINAL_EVENTS", "UNSUBSCRIBE",
    "UPLOAD_EXTENSIONS", "BacktraceAction", "DiffTag", "ModelFormat", "RunStatus",
    # errors
    "ApiError", "ErrorBody", "ErrorResponse", "bad_request", "error_response", "not_found",
    # options and shapes
    "RunOptions", "RunOptionsJSON", "FrontendGraph", "Layer", "Numerics", "RunEvent",
    "RunSummary", "Session", "SourceMapEntry", "TensorInfo", "empty_summary",
    # run events
    "EVENT_PAYLOADS", "BuildFinished", "BuildStarted", "EventData", "PassFailed",
    "PassFinished", "PassStarted", "PassStats", "PlannedPass", "Publish", "RunCancelled",
    "RunFailed", "RunFinished", "RunQueued", "RunStarted", "build_finished", "build_started",
    "data_as", "numerics", "pass_failed", "pass_finished", "pass_started", "pass_stats",
    "planned_pass", "run_cancelled", "run_failed", "run_finished", "run_queued",
    "run_started",
    # http and socket acks
    "Ack", "Backtrace", "BacktraceStep", "Diff", "DiffHunk", "DiffNodes", "EventsPage",
    "ExportedEvent", "ExportedGraph", "ExportedSnapshot", "LayerLookup", "LayerNode", "OkAck", "PassList",
    "RunArtifacts", "RunDetail", "RunExport", "RunImported", "RunRequest", "ScheduleDetail", "ScheduleList",
    "ScheduleNode", "ScheduleRecord", "ScheduleStep", "SessionCreated", "SessionDetail", "SessionList",
    "Snapshot", "SnapshotDetail", "SnapshotSourceMap", "SnapshotSourceMapDetail",
    "SnapshotText", "SnapshotTextDetail", "StartRunAck", "StartRunRequest", "SubscribeAck",
    "SubscribeRequest", "TeddDiagrams", "Timing", "TimingNode",
]
