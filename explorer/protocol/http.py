"""The bodies of the HTTP answers (docs/PROTOCOL.md, "HTTP") and of the socket acks.

Routes and queries build them with the TypedDict constructors, keyword by keyword.
"""

from typing import Any, NotRequired, TypedDict

from explorer.protocol.debug import Breakpoint, BreakpointList, ResumeAck
from explorer.protocol.errors import ErrorResponse
from explorer.protocol.names import BacktraceAction, DiffTag
from explorer.protocol.options import RunOptionsJSON
from explorer.protocol.shapes import FrontendGraph, RunEvent, RunSummary, Session, SourceMapEntry


# --- sessions and runs ------------------------------------------------------------------------
class SessionCreated(TypedDict):
    """POST /api/sessions (multipart field `file`, or the file as the body with
    Content-Type RAW_UPLOAD_TYPE and ?name=FILE[&input_shapes=JSON]), POST
    /api/sessions/demo, POST /api/sessions/<sid>/pin (201)."""

    session: Session


class SessionRenamed(TypedDict):
    """PATCH /api/sessions/<sid> with {"name": ...}: the session under its new name."""

    session: Session


class SessionList(TypedDict):
    """GET /api/sessions (most recent first)."""

    sessions: list[Session]


class SessionDetail(TypedDict):
    """GET /api/sessions/<sid>."""

    session: Session
    graph: FrontendGraph
    runs: list[RunSummary]


class PassList(TypedDict):
    """GET /api/passes: the registered pass names."""

    passes: list[str]


class RunDetail(TypedDict):
    """GET /api/runs/<rid>."""

    run: RunSummary


class EventsPage(TypedDict):
    """GET /api/runs/<rid>/events?since=N: every stored event with index >= N, in order."""

    events: list[RunEvent]


class RunImported(TypedDict):
    """POST /api/runs/import (201): the new session (without a model file) and run."""

    session: Session
    run: RunSummary


# --- snapshots and diffs ----------------------------------------------------------------------
class Snapshot(TypedDict):
    id: int
    text: str
    source_map: list[SourceMapEntry]
    line_count: int


class SnapshotDetail(TypedDict):
    """GET /api/snapshots/<id>."""

    snapshot: Snapshot


class SnapshotText(TypedDict):
    id: int
    text: str


class SnapshotTextDetail(TypedDict):
    """GET /api/snapshots/<id>?part=text."""

    snapshot: SnapshotText


class SnapshotSourceMap(TypedDict):
    id: int
    source_map: list[SourceMapEntry]


class SnapshotSourceMapDetail(TypedDict):
    """GET /api/snapshots/<id>?part=source_map."""

    snapshot: SnapshotSourceMap


class DiffHunk(TypedDict):
    """1-based inclusive line ranges; an empty range has end = start - 1."""

    tag: DiffTag
    a_start: int
    a_end: int
    b_start: int
    b_end: int


class DiffNodes(TypedDict):
    """Node ids: `added` / `removed` / `kept` by id alone; `rewritten`, after-side ids of the
    expressions whose own operator or attributes a pass changed (explorer.nodediff)."""

    added: list[int]
    removed: list[int]
    kept: list[int]
    rewritten: list[int]


class DiffSummary(TypedDict):
    """The node-level diff by operator: `rewritten` keys read "before → after"."""

    created: dict[str, int]
    removed: dict[str, int]
    rewritten: dict[str, int]
    functions: int  # functions created
    grouped_calls: int  # calls created inside them
    # per frontend layer (span source name), most changed first: {created, removed, rewritten}
    layers: dict[str, dict[str, int]]
    text: str  # one line of words


class Diff(TypedDict):
    """GET /api/diff?a=<snapshot>&b=<snapshot>[&part=nodes]; with part=nodes, `unified` is
    empty and `hunks` too."""

    a: int
    b: int
    unified: str
    hunks: list[DiffHunk]
    nodes: DiffNodes
    summary: DiffSummary


# --- provenance -------------------------------------------------------------------------------
class BacktraceStep(TypedDict):
    """`pass_index` null and `pass_name` "import" for a node of the imported module."""

    pass_index: int | None
    pass_name: str
    snapshot_id: int
    action: BacktraceAction


class Backtrace(TypedDict):
    """GET /api/runs/<rid>/backtrace/<node_id>."""

    node_id: int
    layers: list[str]
    steps: list[BacktraceStep]


class LayerNode(TypedDict):
    node_id: int
    kind: str
    start: list[int]
    end: list[int]
    op: str | None
    spans: list[str]


class LayerLookup(TypedDict):
    """GET /api/runs/<rid>/layers/<name>: the final IR's expressions carrying the layer."""

    layer: str
    snapshot_id: int
    nodes: list[LayerNode]


class TimingNode(TypedDict):
    pass_index: int
    name: str
    elapsed_ms: float
    changed: bool
    children: list["TimingNode"]


class Timing(TypedDict):
    """GET /api/runs/<rid>/timing: the Sequential tree of the finished passes."""

    total_ms: float
    passes: list[TimingNode]


# --- schedules --------------------------------------------------------------------------------
class KernelFields(TypedDict):
    """A kernel: `index` is the graph node of its first call, `spans` the layers of all its
    calls (identical fused functions share one kernel)."""

    index: int
    name: str
    func_name: str
    spans: list[str]
    ops: list[str]
    num_steps: int


class ScheduleNode(KernelFields):
    """A kernel as the kernel list shows it."""

    num_calls: int


class KernelCall(TypedDict):
    """One call site of a kernel: its graph node and the layers of that call."""

    index: int
    spans: list[str]


class KernelNode(ScheduleNode):
    """A kernel with every call site."""

    calls: list[KernelCall]


class TeddDiagrams(TypedDict):
    """DOT text of each TEDD view (TEDD_VIEWS)."""

    schedule_tree: str
    itervar: str
    dataflow: str


class ScheduleStep(TypedDict):
    k: int
    primitive: str
    python: str
    loop_nest: str
    tedd: TeddDiagrams


class ScheduleList(TypedDict):
    """GET /api/runs/<rid>/schedules."""

    nodes: list[ScheduleNode]


class ScheduleDetail(TypedDict):
    """GET /api/runs/<rid>/schedules/<index> (index: any graph node calling the kernel); the
    steps are made when first asked for, then kept."""

    node: KernelNode
    steps: list[ScheduleStep]


RemarkRecord = TypedDict("RemarkRecord", {
    "pass": str, "kind": str, "rule": str, "message": str, "node_id": int, "op": str,
    "layers": list[str], "args": dict[str, Any]})
"""One optimization remark as a run stores it: `kind` applied / missed / analysis, the rule
that decided, the node it is about (0: none) with its op and layers; `pass` is the pass's
name."""


class RemarkEntry(RemarkRecord):
    """A remark as the API answers it: with the index of its pass in the run."""

    pass_index: int


class PassRemarks(TypedDict):
    """The remarks of one pass as a run stores (and exports) them: at most 5000 of `count`."""

    count: int
    remarks: list[RemarkRecord]


class RemarkList(TypedDict):
    """GET /api/runs/<rid>/remarks[?pass=I][&node=N]: `count` how many the passes made
    (a pass keeps at most 5000); with `node`, the remarks about it by id or by the layers
    its spans name (`layers`)."""

    remarks: list[RemarkEntry]
    count: int
    node_id: NotRequired[int]
    layers: NotRequired[list[str]]


# --- socket requests and acks -----------------------------------------------------------------
class StartRunRequest(TypedDict):
    session_id: str
    options: RunOptionsJSON
    breakpoints: NotRequired[list[Breakpoint]]  # where the run pauses (explorer/protocol/debug.py)


class StartRunAck(TypedDict):
    run_id: str


class SubscribeRequest(TypedDict):
    run_id: str
    since: int


class SubscribeAck(TypedDict):
    ok: bool
    replayed: int


class RunRequest(TypedDict):
    """`unsubscribe` and `cancel_run`."""

    run_id: str


class OkAck(TypedDict):
    """`unsubscribe` (always true) and `cancel_run` (false: not queued or running here)."""

    ok: bool


Ack = StartRunAck | SubscribeAck | OkAck | BreakpointList | ResumeAck | ErrorResponse

class ExportedEvent(TypedDict):
    index: int
    type: str
    data: dict[str, Any]


class ExportedGraph(FrontendGraph):
    """The session's graph as stored: with the input shapes the upload gave."""

    input_shapes: NotRequired[dict[str, list[int]] | None]


class ExportedSnapshot(TypedDict):
    text: str
    source_map: list[SourceMapEntry]


class ScheduleRecord(KernelFields):
    """One kernel as a run stores it (the `schedules` artifact): a ScheduleNode, its calls
    and its source (Relay text of its primitive function) to make the steps from. Runs
    stored before kernels were shared and steps made on demand have one record per graph
    node with its `steps` instead."""

    num_calls: NotRequired[int]
    calls: NotRequired[list[KernelCall]]
    source: NotRequired[str]
    steps: NotRequired[list[ScheduleStep]]


class RunArtifacts(TypedDict, total=False):
    """The artifacts of a run export (`schedules`: every kernel of a built run; `remarks`:
    by pass index, the remarks of each pass that made some)."""

    schedules: list[ScheduleRecord]
    remarks: dict[str, PassRemarks]


class RunExport(TypedDict):
    """GET /api/runs/<rid>/export; POST /api/runs/import takes the same document."""

    format: str
    version: int
    exported: float
    session: Session
    graph: ExportedGraph
    run: RunSummary
    events: list[ExportedEvent]
    snapshots: dict[str, ExportedSnapshot]
    artifacts: RunArtifacts


class TensorStats(TypedDict):
    """A tensor's summary: shape, dtype, statistics over its finite values, NaN / Inf
    counts, a histogram (`edges` has one more element than `counts`), and every value
    (flattened) when it is small (else null)."""

    shape: list[int]
    dtype: str
    size: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    nan: int
    inf: int
    histogram: dict[str, list[float]]  # {"edges": [...], "counts": [...]}
    values: list[float | None] | None  # NaN / Inf as null


class TensorReference(TypedDict):
    """The same tensor in the model's own runtime (onnxruntime, tflite-runtime): the
    runtime's tensor it read (`tensor`), its stats, and the largest difference from the
    engine's value when the shapes agree; `error` when it could not be read."""

    runtime: str
    layer: str | None
    tensor: str | None
    stats: TensorStats | None
    max_abs_diff: float | None
    error: str | None
    # the expression computes the layer's output (the last expression carrying it); false
    # for a part of a layer converted to several expressions: the difference then compares
    # different values
    layer_output: bool


class TensorReport(TypedDict):
    """GET /api/runs/<rid>/tensors/<snapshot>/<node>: one expression's value on the run's
    seeded inputs (computed in a worker on demand, then cached)."""

    snapshot: int
    node_id: int
    op: str | None
    layers: list[str]
    stats: TensorStats
    reference: TensorReference | None  # null: the model's format has no reference runtime
