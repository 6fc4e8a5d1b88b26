"""explorer.runs.schedules: the schedules artifact of a build, one entry per kernel node."""

from __future__ import annotations

import engine as tvm
from engine import relay
from explorer.compiler import pass_context
from explorer.runs.schedules import TEDD_VIEWS, schedules_of


def test_build_schedules_gives_every_step_of_every_node() -> None:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    y = relay.nn.max_pool2d(y, (2, 2), (2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    with pass_context(3, [], [], []):  # the explorer's: it keeps schedule records
        nodes = schedules_of(relay.build(mod, target="llvm"))
    assert [n["ops"] for n in nodes] == [["nn.conv2d", "nn.relu"], ["nn.max_pool2d"]]
    for node in nodes:
        steps = node["steps"]
        assert node["num_steps"] == len(steps) > 2
        assert steps[0]["primitive"] == "vanilla"
        assert steps[0]["python"].startswith("s = te.create_schedule")
        assert all(s["primitive"] and s["loop_nest"].startswith("primfn") for s in steps)
        assert all(s["tedd"][v].startswith("digraph") for s in steps for v in TEDD_VIEWS)
        assert steps[1]["loop_nest"] != steps[-1]["loop_nest"]


def test_schedules_are_not_recorded_outside_the_explorers_context() -> None:
    """TVM's default: `te.keep_schedule_record` is off, so a plain build keeps no steps."""
    x = relay.var("x", shape=(1, 4))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    nodes = schedules_of(relay.build(mod, target="llvm"))
    assert nodes and all(node["num_steps"] == 0 for node in nodes)
