"""explorer.runs.schedules: the schedules artifact of a build, one entry per kernel with its
call sites; the steps are made from the kernel's source when it is opened."""

from __future__ import annotations

import engine as tvm
from engine import relay
from explorer.compiler import pass_context
from explorer.runs.schedules import TEDD_VIEWS, find_kernel, schedules_of, steps_json


def _conv_pool_conv() -> tvm.IRModule:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(3, 3, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    y = relay.nn.relu(relay.nn.conv2d(y, w, padding=(1, 1)))
    y = relay.nn.max_pool2d(y, (2, 2), (2, 2))
    return tvm.IRModule.from_expr(relay.Function([x, w], y))


def test_build_schedules_list_each_kernel_once_with_its_calls_and_make_steps_on_demand(
        ) -> None:
    with pass_context(3, [], [], []):  # the explorer's: it keeps schedule records
        kernels = schedules_of(relay.build(_conv_pool_conv(), target="llvm"))
    assert [k["ops"] for k in kernels] == [["nn.conv2d", "nn.relu"], ["nn.max_pool2d"]]
    conv, pool = kernels
    assert conv["num_calls"] == 2 and [c["index"] for c in conv["calls"]] == [2, 3]
    assert conv["index"] == 2 and pool["calls"] == [{"index": 4, "spans": []}]
    assert find_kernel(kernels, 3) is conv and find_kernel(kernels, 0) is None
    assert all("steps" not in k and k["source"].startswith("#[version") for k in kernels)
    for kernel in kernels:
        steps = steps_json(kernel)
        assert kernel["num_steps"] == len(steps) > 2
        assert steps[0]["primitive"] == "vanilla"
        assert steps[0]["python"].startswith("s = te.create_schedule")
        assert all(s["primitive"] and s["loop_nest"].startswith("primfn") for s in steps)
        assert all(s["tedd"][v].startswith("digraph") for s in steps for v in TEDD_VIEWS)
        assert steps[1]["loop_nest"] != steps[-1]["loop_nest"]


def test_steps_made_from_the_source_are_the_builds_own() -> None:
    with pass_context(3, [], [], []):
        lib = relay.build(_conv_pool_conv(), target="llvm")
    for kernel in schedules_of(lib):
        built = lib.build_module.get_node_steps(kernel["index"])
        remade = steps_json(kernel)
        assert [s["loop_nest"] for s in remade] == [s.loop_nest for s in built]
        assert [s["tedd"]["dataflow"] for s in remade] == [s.tedd["dataflow"] for s in built]


def test_schedules_are_not_recorded_outside_the_explorers_context() -> None:
    """TVM's default: `te.keep_schedule_record` is off, so a plain build keeps no steps."""
    x = relay.var("x", shape=(1, 4))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    nodes = schedules_of(relay.build(mod, target="llvm"))
    assert nodes and all(node["num_steps"] == 0 for node in nodes)
