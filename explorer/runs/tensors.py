"""The tensor inspector: one expression's value on the run's seeded inputs, and the same
tensor in the model's own runtime.

`inspect_tensor` answers GET /api/runs/<rid>/tensors/<snapshot>/<node> from the run's
cache (an artifact per expression), else computes it in a child of the run workers'
fork server (the server never imports or evaluates a model itself). The child imports
the session's model again, replays the run's passes up to the one that made the
snapshot (`StopAfter`, numbering passes as the recorder did), checks that the module
prints to exactly the stored snapshot, finds the expression by its place in the source
map (the i-th entry of the stored map is the i-th of the fresh one), taps it on the
seeded inputs the numerics check uses, and summarizes it (`tensor_stats`). For an ONNX
model it also asks onnxruntime for the tensor of the layer the expression computes, by
adding that node's output to the graph's outputs (explorer/runs/reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from explorer import compiler
from explorer.compiler import IRModule
from explorer.protocol import (
    PASS_FINISHED,
    RUN_STARTED,
    ApiError,
    RunOptions,
    TensorReport,
    TensorStats,
)
from explorer.runs.child_call import answer, call_in_child
from explorer.runs.children import load_plugins
from explorer.runs.numerics import StopAfter, numerics_refusal, run_until
from explorer.runs.reference import reference_tensor
from explorer.sessions import SessionService
from explorer.store import Store

TENSOR_TIMEOUT = 300.0
MAX_VALUES = 64
"""Tensors of at most this many elements come with every value."""
BINS = 24
SEED = 0  # the numerics check's seed: the inspector shows the values that check sees


@dataclass(frozen=True, slots=True)
class TensorJob:
    run_id: str
    session_id: str
    snapshot: int
    node_id: int
    pass_index: int | None  # the pass whose after-module is the snapshot (None: the import)
    options: dict[str, Any]
    db_path: str
    models_dir: str
    plugins: tuple[str, ...]
    numerics_weight_limit: int


def artifact_key(snapshot: int, node_id: int) -> str:
    return f"tensor:{snapshot}:{node_id}"


def inspect_tensor(store: Store, run_id: str, snapshot: int, node_id: int, models_dir: str,
                   plugins: tuple[str, ...], weight_limit: int,
                   timeout: float = TENSOR_TIMEOUT) -> TensorReport:
    """The cached report, or one computed now in a child process (then cached)."""
    summary = store.run(run_id)
    cached = store.artifact(run_id, artifact_key(snapshot, node_id))
    if cached is not None:
        return cast(TensorReport, cached)
    if node_id not in set(store.snapshot_source_map_table(snapshot).node_ids().tolist()):
        raise ApiError(404, "no_such_node", f"snapshot {snapshot} has no expression {node_id}")
    job = TensorJob(run_id, summary["session_id"], snapshot, node_id,
                    _producing_pass(store, run_id, snapshot), dict(summary["options"]),
                    str(store.path), models_dir, plugins, weight_limit)
    report = _in_child(job, timeout)
    store.put_artifact(run_id, artifact_key(snapshot, node_id), report)
    return report


def _producing_pass(store: Store, run_id: str, snapshot: int) -> int | None:
    """The first pass whose after-module is `snapshot`; None for the run's initial one."""
    for event in store.events(run_id):
        data = event["data"]
        if event["type"] == RUN_STARTED and data["initial_snapshot"] == snapshot:
            return None
        if event["type"] == PASS_FINISHED and data["after"] == snapshot:
            return int(data["pass_index"])
    raise ApiError(404, "no_such_snapshot", f"run {run_id} has no snapshot {snapshot}")


def _in_child(job: TensorJob, timeout: float) -> TensorReport:
    return cast(TensorReport, call_in_child(_child_main, job, timeout,
                                            f"explorer-tensor-{job.run_id}", "tensor",
                                            "computing the tensor"))


# --- the child ------------------------------------------------------------------------------
def _child_main(job: TensorJob, conn: Any) -> None:
    answer(conn, job.db_path, lambda store: compute(job, store, load_plugins(job.plugins)),
           lambda exc: (422, "tensor_failed", f"{type(exc).__name__}: {exc}", None))


def compute(job: TensorJob, store: Store, hooks: list[Any]) -> TensorReport:
    from explorer.runs.execution import run_context, run_passes

    imported = SessionService(store, Path(job.models_dir)).imported(job.session_id)
    mod = imported.mod
    refused = numerics_refusal(mod, imported.params, job.numerics_weight_limit)
    if refused is not None:  # computing one tensor evaluates the model up to it
        raise ApiError(422, "too_large", f"no tensor values: {refused}")
    if job.pass_index is not None:
        options = RunOptions.from_json(job.options)
        if options.check_numerics:  # as in the run: the check types the import in place
            compiler.NumericsChecker(mod, imported.params)
        ctx = run_context(options, [StopAfter(job.pass_index)])
        try:
            mod = run_until(compiler.bind_params(mod, imported.params),
                            run_passes(options, ctx, hooks), ctx)
        except LookupError as exc:
            raise ApiError(409, "replay_failed", str(exc)) from None
    expr = _expression(store, job, mod)
    inputs = {**compiler.make_inputs(imported.mod, imported.params, SEED),
              **{k: np.asarray(getattr(v, "numpy", lambda v=v: v)())
                 for k, v in imported.params.items()}}
    value = np.asarray(_only(compiler.tap_values(mod, [expr], inputs)[0]))
    layers = list(expr.span.source_names())
    model_file = store.session_model_file(job.session_id)
    reference = None if model_file is None else reference_tensor(
        imported.format, Path(job.models_dir) / model_file, layers, inputs, value, tensor_stats)
    if reference is not None and reference["layer"] is not None:
        carrying = compiler.NumericsChecker.nodes_naming(mod, [reference["layer"]])
        reference["layer_output"] = bool(carrying) and carrying[-1] == expr.node_id
    return TensorReport(snapshot=job.snapshot, node_id=job.node_id,
                        op=getattr(getattr(expr, "op", None), "name", None), layers=layers,
                        stats=tensor_stats(value), reference=reference)


def _expression(store: Store, job: TensorJob, mod: IRModule) -> Any:
    text, table = compiler.print_snapshot(mod)
    if store.snapshot_part(job.snapshot, "text").decode() != text:
        raise ApiError(409, "snapshot_not_reproduced",
                       f"replaying the run's passes did not give snapshot {job.snapshot} again "
                       "(the pipeline differs from the run's, or a pass is not deterministic)")
    stored = store.snapshot_source_map_table(job.snapshot).node_ids()
    place = int(np.flatnonzero(stored == job.node_id)[0])
    expr = compiler.dataflow_node(mod, int(table.node_ids()[place]))
    if expr is None:
        raise ApiError(422, "not_tappable",
                       f"expression {job.node_id} is not a computed value of @main's dataflow "
                       "(a function body, a variable or a constant): pick the call that uses it")
    return expr


def _only(value: Any) -> Any:
    """A tuple-valued expression shows its first field."""
    while isinstance(value, list | tuple):
        value = value[0]
    return value.numpy() if hasattr(value, "numpy") else value


def tensor_stats(value: np.ndarray) -> TensorStats:
    data = np.asarray(value)
    flat = data.astype(np.float64).ravel() if data.dtype != bool else data.ravel().astype(float)
    finite = flat[np.isfinite(flat)]
    counts, edges = (np.histogram(finite, bins=BINS) if finite.size else (np.zeros(0), np.zeros(0)))
    return TensorStats(
        shape=[int(d) for d in data.shape], dtype=str(data.dtype), size=int(data.size),
        min=_num(finite.min()) if finite.size else None,
        max=_num(finite.max()) if finite.size else None,
        mean=_num(finite.mean()) if finite.size else None,
        std=_num(finite.std()) if finite.size else None,
        nan=int(np.isnan(flat).sum()), inf=int(np.isinf(flat).sum()),
        histogram={"edges": [float(e) for e in edges], "counts": [float(c) for c in counts]},
        values=[_num(v) for v in flat] if data.size <= MAX_VALUES else None)


def _num(value: Any) -> float | None:
    """A JSON number; None for NaN / Inf (counted apart)."""
    number = float(value)
    return number if np.isfinite(number) else None
