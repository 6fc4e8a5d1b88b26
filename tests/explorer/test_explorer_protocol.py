"""explorer.protocol: one payload type and one keyword-only builder per RunEvent type,
and a runtime check that names what a value gets wrong."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import pytest

from explorer import protocol as p
from explorer.protocol import checks, events, names

BUILDERS = {t: getattr(events, t) for t in p.EVENT_PAYLOADS}


def _sample_summary() -> p.RunSummary:
    return p.empty_summary("r", "s", p.RunOptions().to_json())


SAMPLES: dict[str, Any] = {
    p.RUN_QUEUED: p.run_queued(position=1, max_concurrent=2),
    p.RUN_STARTED: p.run_started(
        options=p.RunOptions().to_json(), initial_snapshot=1, num_passes_planned=1,
        plan=[p.planned_pass(name="InferType", depth=1, opt_level=0)]),
    p.NUMERICS_UNAVAILABLE: p.numerics_unavailable(message="the model cannot be evaluated"),
    p.PASS_STARTED: p.pass_started(pass_index=0, name="InferType", opt_level=0, depth=1,
                                   parent_index=None),
    p.PASS_FINISHED: p.pass_finished(
        pass_index=0, name="InferType", opt_level=0, depth=1, parent_index=None, before=1,
        after=2, changed=True, leaf=True, elapsed_ms=0.5, span_coverage=1.0,
        stats=p.pass_stats(nodes=3, nodes_delta=0),
        numerics=p.numerics(max_abs_err=None, ok=False, error="ValueError: no")),
    p.PASS_FAILED: p.pass_failed(pass_index=0, name="FoldConstant", message="boom", before=1),
    p.RUN_PAUSED: p.run_paused(pass_index=3, name="FuseOps", when="before", snapshot=2,
                               reason="breakpoint before FuseOps",
                               breakpoint={"kind": "before", "target": "FuseOps"}, layers=[]),
    p.RUN_RESUMED: p.run_resumed(action="continue"),
    p.BUILD_STARTED: p.build_started(),
    p.BUILD_PROGRESS: p.build_progress(done=1, total=3, kernels=1, kernel="fused_add"),
    p.BUILD_FINISHED: p.build_finished(num_nodes=2, num_kernels=1),
    p.RUN_FINISHED: p.run_finished(summary=_sample_summary()),
    p.RUN_FAILED: p.run_failed(pass_name="FoldConstant", message="boom", code="pass_failed"),
    p.RUN_CANCELLED: p.run_cancelled(message=None),
}


def test_every_event_type_has_a_payload_and_a_builder():
    declared = [v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)
                and (k.startswith(("RUN_", "PASS_", "BUILD_", "NUMERICS_")))
                and k != "RUN_EVENT"]
    assert sorted(p.EVENT_PAYLOADS) == sorted(declared)
    assert set(p.EVENT_PAYLOADS) >= p.TERMINAL_EVENTS
    assert set(SAMPLES) == set(p.EVENT_PAYLOADS)


@pytest.mark.parametrize("event_type", list(p.EVENT_PAYLOADS))
def test_builders_are_keyword_only_and_return_exactly_their_payload(event_type):
    builder = BUILDERS[event_type]
    params = inspect.signature(builder).parameters.values()
    assert all(x.kind is inspect.Parameter.KEYWORD_ONLY for x in params)
    assert get_type_hints(builder)["return"] is p.EVENT_PAYLOADS[event_type]
    assert checks.event_problems(event_type, SAMPLES[event_type]) == []


def test_pass_finished_carries_every_pass_started_field_and_leaf():
    started = set(get_type_hints(p.PassStarted))
    finished = set(get_type_hints(p.PassFinished))
    assert started < finished and "leaf" in finished


def test_run_failed_names_the_pass_under_its_wire_key():
    assert p.run_failed(pass_name=None, message="m", code="interrupted") == {
        "pass": None, "message": "m", "code": "interrupted"}


def test_numerics_has_an_error_only_when_it_failed():
    assert p.numerics(max_abs_err=0.0, ok=True) == {"max_abs_err": 0.0, "ok": True}
    assert checks.problems(p.Numerics, {"max_abs_err": 1.5, "ok": False, "error": "x"}) == []


def test_checks_name_missing_unknown_and_mistyped_fields():
    data = dict(SAMPLES[p.PASS_FINISHED])
    del data["leaf"]
    data["isContainer"] = True
    data["changed"] = 1
    data["stats"] = {"nodes": "3", "nodes_delta": 0}
    assert checks.event_problems(p.PASS_FINISHED, data) == [
        "pass_finished.leaf: missing",
        "pass_finished.isContainer: not a field of PassFinished",
        "pass_finished.changed: expected bool, got 1",
        "pass_finished.stats.nodes: expected int, got '3'",
    ]
    assert checks.event_problems("pass_skipped", {}) == ["unknown event type 'pass_skipped'"]


def test_checks_follow_lists_literals_and_unions():
    summary = dict(_sample_summary(), status="paused")
    assert checks.problems(p.RunSummary, summary, "run") == [
        "run.status: 'paused' is not one of ('running', 'finished', 'failed', 'cancelled', "
        "'interrupted')"]
    started = dict(SAMPLES[p.RUN_STARTED], plan=[{"name": "A", "depth": 0}])
    assert checks.event_problems(p.RUN_STARTED, started) == [
        "run_started.plan[0].opt_level: missing"]
    assert checks.problems(p.TimingNode, {"pass_index": 0, "name": "a", "elapsed_ms": 1,
                                          "changed": False, "children": []}) == []


def test_data_as_reads_an_event_as_its_declared_payload():
    event = p.RunEvent(run_id="r", session_id="s", index=3, type=p.PASS_FINISHED,
                       data=dict(SAMPLES[p.PASS_FINISHED]))
    assert p.data_as(event, p.PassFinished)["leaf"] is True
    with pytest.raises(TypeError, match="carries PassFinished, not PassStarted"):
        p.data_as(event, p.PassStarted)


def test_error_bodies_are_declared_once():
    err = p.not_found("run", "x")
    assert err.body() == {"error": {"code": "not_found", "message": "no run 'x'",
                                    "detail": {"what": "run"}}}
    assert checks.problems(p.ErrorResponse, err.body()) == []


def test_model_formats_are_the_upload_formats():
    assert tuple(p.UPLOAD_EXTENSIONS) == p.MODEL_FORMATS
    assert p.model_format("onnx") == "onnx"
    with pytest.raises(ValueError, match="unknown model format 'caffe'"):
        p.model_format("caffe")
