"""Shapes shared by the HTTP answers and the run events: sessions, graphs, source maps,
numerics, run summaries and the RunEvent envelope.

No `from __future__ import annotations` in the declaration modules: Python 3.11 only sees
`NotRequired` in a TypedDict whose annotations are evaluated.
"""

from typing import Any, NotRequired, TypedDict

from explorer.protocol.names import ModelFormat, RunStatus
from explorer.protocol.options import RunOptionsJSON


class TensorInfo(TypedDict):
    name: str
    shape: list[int | str]  # a dynamic dimension: the model's symbol for it ("batch") or "?"
    dtype: str


class Session(TypedDict):
    id: str
    name: str
    format: ModelFormat
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


class QParam(TypedDict):
    """A qnn call's scale or zero point, every value (the text shows a short form)."""

    role: str  # the operand's name: input_scale, output_zero_point, ...
    dtype: str
    shape: list[int]
    values: list[float]


class SourceMapEntry(TypedDict):
    """One printed expression: 1-based line, 0-based column, end exclusive."""

    node_id: int
    kind: str
    start: list[int]
    end: list[int]
    spans: list[str]
    op: str | None
    ref: NotRequired[bool]  # true on a use of a bound name (`%3` after its definition)
    qparam: NotRequired[QParam]  # on a qnn call's scale or zero point constant


class Numerics(TypedDict):
    """The numerical check of one snapshot against the imported model's outputs."""

    max_abs_err: float | None
    ok: bool
    # the error in quantization steps (LSBs) over the quantized outputs: integer ones, and
    # float ones made by a dequantize (error / its scale); absent when no output is quantized
    max_lsb_err: NotRequired[float | None]
    error: NotRequired[str]  # the snapshot could not be evaluated
    # the error this pass adds: its snapshot against the snapshot before it (absent on a
    # snapshot that no pass made, e.g. when the numerics of a final module are asked for)
    step_max_abs_err: NotRequired[float | None]
    step_ok: NotRequired[bool]
    introduced: NotRequired[bool]  # this pass broke numerics (not merely inherited a break)


class BisectRewrite(TypedDict):
    """One rewrite of a pass (engine.transform.bisect.Rewrite): its number in the pass run
    (1-based), the pass, and the expression of the snapshot before it that it replaced."""

    index: int
    node_id: int
    op: str | None
    layers: list[str]
    applied: bool


class NumericsBisect(TypedDict):
    """The bisection over the rewrites of the pass that broke numerics."""

    total: int  # rewrites the pass asks for
    runs: int  # runs of the pass the search took
    rewrite: BisectRewrite | None  # the first rewrite after which the output is wrong
    broken_at_zero: bool  # wrong even with no rewrite allowed (not a counted rewrite)
    error: str | None  # the bisection could not run


class NumericsBreak(TypedDict):
    """The first pass that broke numerics: its snapshots, the error it added, the
    frontend layers that drifted between its before and after snapshots (dataflow order,
    the first is where the drift starts) and the nodes of its after snapshot that carry
    them (for badges), and the bisection within the pass."""

    pass_name: str
    pass_index: int
    before: int
    after: int
    max_abs_err: float | None  # against the snapshot before
    layers: list[str]
    nodes: list[int]
    bisect: NumericsBisect | None


class RunSummary(TypedDict):
    id: str
    session_id: str
    status: RunStatus
    options: RunOptionsJSON
    num_passes: int
    num_changed: int
    total_ms: float
    first_numerics_break: str | None
    drifted_layers: list[str]
    failed_pass: str | None
    error: str | None
    final_snapshot: int | None
    numerics_break: NotRequired[NumericsBreak | None]


class RunEvent(TypedDict):
    """The one server -> client socket payload; `data` is the payload `type` names
    (EVENT_PAYLOADS in explorer.protocol.events)."""

    run_id: str
    session_id: str
    index: int
    type: str
    data: dict[str, Any]


def empty_summary(run_id: str, session_id: str, options: RunOptionsJSON) -> RunSummary:
    return RunSummary(
        id=run_id, session_id=session_id, status="running", options=options, num_passes=0,
        num_changed=0, total_ms=0.0, first_numerics_break=None, drifted_layers=[],
        failed_pass=None, error=None, final_snapshot=None,
    )
