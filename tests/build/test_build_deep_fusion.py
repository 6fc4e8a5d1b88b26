"""Fused kernels of long chains and wide concatenations lower at any size."""

from __future__ import annotations

import numpy as np

import engine as tvm
from engine import relay
from engine.relay.backend.build_module import check_numerics
from engine.relay.backend.te_compiler import _step_groups
from engine.relay.strategy.schedules import MAX_INLINE_CHAIN


def build(body: relay.Expr, params: list[relay.Var]) -> tvm.relay.build_module.GraphExecutorFactoryModule:
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    with tvm.transform.PassContext(opt_level=3, config={"te.keep_schedule_record": True}):
        return relay.build(mod, target="llvm")


def test_a_long_elementwise_chain_fuses_and_materializes_every_so_often() -> None:
    x = relay.var("x", shape=(1, 8))
    y: relay.Expr = x
    for k in range(200):  # FuseOps puts up to 256 ops in one kernel
        y = relay.nn.relu(y) if k % 2 else relay.add(y, relay.const(np.float32(0.5)))
    lib = build(y, [x])
    bm = lib.build_module
    name, lowered = max(bm.lowered.items(), key=lambda item: len(item[1].schedule.stages))
    index = next(i for i in range(8) if bm.get_node_info(i)["func_name"] == name)
    num_ops = len(bm.get_node_info(index)["ops"])
    assert num_ops > 2 * MAX_INLINE_CHAIN
    roots = [st for st in lowered.schedule.stages
             if not st.is_placeholder and st.attach_type != "inline"]
    assert len(roots) >= num_ops // MAX_INLINE_CHAIN
    steps = bm.get_node_steps(index)
    assert any(step.primitive.startswith("compute_inline x") for step in steps)
    assert "for (" in steps[-1].loop_nest
    assert check_numerics(lib)[name] == "ok"


def test_concatenating_hundreds_of_tensors_lowers_to_a_shallow_select_tree() -> None:
    x = relay.var("x", shape=(1, 4))
    branches = [relay.multiply(relay.add(x, relay.const(np.float32(k))),
                               relay.const(np.float32(2.0))) for k in range(600)]
    lib = build(relay.concatenate(branches, axis=1), [x])
    results = check_numerics(lib)
    assert results and all(v == "ok" for v in results.values())
    index = next(i for i in range(1, 10) if lib.build_module.get_node_schedule(i) is not None)
    assert lib.build_module.get_node_steps(index)


def test_step_groups_collapse_only_long_runs() -> None:
    assert _step_groups(["vanilla", "compute_inline", "compute_inline", "split"]) == [
        (0, 0), (1, 1), (2, 2), (3, 3)]
    names = ["vanilla"] + ["compute_inline"] * 10 + ["split", "split", "reorder"]
    assert _step_groups(names) == [(0, 0), (1, 10), (11, 11), (12, 12), (13, 13)]
