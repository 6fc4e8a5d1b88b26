"""Pass plans: the leaf passes a pipeline runs under a context, from a dry walk."""

from __future__ import annotations

import pytest
from transform_testlib import logging_pass, make_module

from engine.instrument import PassInstrument
from engine.ir import IRModule
from engine.transform import (
    Pass,
    PassContext,
    PassInfo,
    PassNotFoundError,
    PlannedPass,
    Sequential,
    children_of,
    count_leaves,
    plan,
    register_pass,
    registry,
)


@pytest.fixture(autouse=True)
def _private_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_FACTORIES", dict(registry._FACTORIES))


def _names(planned: list[PlannedPass]) -> list[tuple[str, int, int]]:
    return [(p.name, p.opt_level, p.depth) for p in planned]


class _Leaves(PassInstrument):
    """Records (name, opt_level, depth) of every pass that runs."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int]] = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self.seen.append((info.name, info.opt_level, PassContext.current().pass_depth))


def test_plan_lists_enabled_leaves_in_run_order_with_depth() -> None:
    log: list[str] = []
    inner = Sequential([logging_pass("A", log), logging_pass("B", log, opt_level=3)],
                       name="inner")
    outer = Sequential([inner, logging_pass("C", log, opt_level=1)], name="outer")
    with PassContext(opt_level=2) as ctx:
        assert _names(plan(outer, ctx)) == [("A", 0, 2), ("C", 1, 1)]
        assert count_leaves(outer, ctx) == 2


def test_plan_matches_what_the_sequential_runs() -> None:
    log: list[str] = []
    register_pass("PlanDep", lambda: logging_pass("PlanDep", log, opt_level=3), override=True)
    seq = Sequential([
        logging_pass("First", log),
        Sequential([logging_pass("Deep", log, required=["PlanDep"])], name="mid"),
        logging_pass("Off", log),
        logging_pass("High", log, opt_level=3),
    ])
    leaves = _Leaves()
    with PassContext(opt_level=1, disabled_pass=["Off"], required_pass=["High"],
                     instruments=[leaves]) as ctx:
        planned = _names(plan(seq, ctx))
        seq(make_module())
    assert [name for name, _, _ in planned] == ["First", "PlanDep", "Deep", "High"]
    assert [entry.split()[1] for entry in log] == ["First", "PlanDep", "Deep", "High"]
    assert [p for p in leaves.seen if p[0] not in ("sequential", "mid")] == planned


def test_required_passes_resolve_at_the_child_depth() -> None:
    log: list[str] = []
    register_pass("PlanReq", lambda: logging_pass("PlanReq", log), override=True)
    seq = Sequential([logging_pass("Main", log, required=["PlanReq"])])
    with PassContext() as ctx:
        assert _names(plan(seq, ctx)) == [("PlanReq", 0, 1), ("Main", 0, 1)]


def test_a_sequential_that_runs_nothing_is_a_leaf() -> None:
    log: list[str] = []
    empty = Sequential([logging_pass("Skipped", log, opt_level=3)], name="empty")
    with PassContext(opt_level=0) as ctx:
        assert children_of(empty, ctx) == []
        assert _names(plan(empty, ctx)) == [("empty", 0, 0)]


def test_children_of_a_plain_pass_is_none() -> None:
    single: Pass = logging_pass("Single", [])
    with PassContext() as ctx:
        assert children_of(single, ctx) is None
        assert _names(plan(single, ctx)) == [("Single", 0, 0)]


def test_deep_nesting_is_walked_iteratively() -> None:
    node: Pass = logging_pass("Leaf", [])
    for i in range(5000):
        node = Sequential([node], name=f"s{i}")
    with PassContext() as ctx:
        assert _names(plan(node, ctx)) == [("Leaf", 0, 5000)]


def test_a_missing_required_pass_is_a_clear_error() -> None:
    seq = Sequential([logging_pass("Needs", [], required=["NoSuchPlannedPass"])])
    with PassContext() as ctx, pytest.raises(PassNotFoundError, match="NoSuchPlannedPass"):
        plan(seq, ctx)
