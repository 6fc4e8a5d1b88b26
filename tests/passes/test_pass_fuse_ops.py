"""FuseOps: TVM-style Before / Expected cases, the fusion rules by TOpPattern, max_depth,
fuse_opt_level, spans of the fused functions, stats and a 100k chain."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from passes_helpers import all_nodes, named, names, run_opt_pass

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument
from engine.ir.expr import Call, Function
from engine.relay.transform.fuse_ops import fused_function_name


def _primitive(params: list[Any], body: Any) -> Function:
    return relay.Function(params, body).with_attr("Primitive", 1)


class StatsRecorder(PassInstrument):
    def __init__(self) -> None:
        self.stats: dict[str, dict[str, float]] = {}

    def run_after_pass(self, mod: Any, info: Any) -> None:
        frame = tvm.transform.PassContext.current().current_frame
        if frame is not None:
            self.stats[info.name] = dict(frame.stats)


def _fused_functions(func: Function) -> list[Function]:
    return [n.op for n in all_nodes(func.body) if isinstance(n, Call)
            and isinstance(n.op, Function)]


def test_fuse_simple() -> None:
    def before() -> Function:
        x = relay.var("x", shape=(10, 20))
        y = relay.add(x, relay.const(1, "float32"))
        return relay.Function([x], relay.squeeze(relay.exp(y)))

    def expected() -> Function:
        p = relay.var("p", shape=(10, 20))
        body = relay.squeeze(relay.exp(relay.add(p, relay.const(1, "float32"))))
        f1 = _primitive([p], body)
        x = relay.var("x", shape=(10, 20))
        return relay.Function([x], relay.Call(f1, [x]))

    after = run_opt_pass(before(), relay.transform.FuseOps())
    tvm.ir.assert_structural_equal(after, run_opt_pass(expected(), relay.transform.InferType()))


def test_conv2d_takes_its_elementwise_consumers() -> None:
    def before() -> Function:
        x = relay.var("x", shape=(1, 16, 8, 8))
        w = relay.var("w", shape=(16, 16, 3, 3))
        b = relay.var("b", shape=(16, 1, 1))
        y = relay.nn.conv2d(x, w, padding=(1, 1), channels=16, kernel_size=(3, 3))
        return relay.Function([x, w, b], relay.nn.relu(relay.add(y, b)))

    def expected() -> Function:
        p0 = relay.var("p0", shape=(1, 16, 8, 8))
        p1 = relay.var("p1", shape=(16, 16, 3, 3))
        p2 = relay.var("p2", shape=(16, 1, 1))
        y = relay.nn.conv2d(p0, p1, padding=(1, 1), channels=16, kernel_size=(3, 3))
        f = _primitive([p0, p1, p2], relay.nn.relu(relay.add(y, p2)))
        x = relay.var("x", shape=(1, 16, 8, 8))
        w = relay.var("w", shape=(16, 16, 3, 3))
        b = relay.var("b", shape=(16, 1, 1))
        return relay.Function([x, w, b], relay.Call(f, [x, w, b]))

    after = run_opt_pass(before(), relay.transform.FuseOps())
    tvm.ir.assert_structural_equal(after, run_opt_pass(expected(), relay.transform.InferType()))


def test_conv2d_output_used_twice_is_not_fused_into_either_user() -> None:
    x = relay.var("x", shape=(1, 8, 4, 4))
    w = relay.var("w", shape=(8, 8, 1, 1))
    y = relay.nn.conv2d(x, w, channels=8, kernel_size=(1, 1))
    out = relay.Tuple([relay.exp(y), relay.log(y)])
    after = run_opt_pass(relay.Function([x, w], out), relay.transform.FuseOps())
    fused = _fused_functions(after)
    groups = sorted(tuple(sorted(relay_ops(f))) for f in fused)
    assert groups == [("exp",), ("log",), ("nn.conv2d",)]


def relay_ops(func: Function) -> list[str]:
    return [n.op.name for n in all_nodes(func.body) if isinstance(n, Call)
            and isinstance(n.op, tvm.ir.Op)]


def test_concatenate_fuses_injective_inputs_but_not_the_pool() -> None:
    x = relay.var("x", shape=(1, 16, 64, 64))
    pooled = relay.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    up = relay.nn.upsampling(pooled, scale_h=2, scale_w=2)
    out = relay.add(relay.concatenate((up, x), axis=1), relay.const(1, "float32"))
    after = run_opt_pass(relay.Function([x], out), relay.transform.FuseOps(fuse_opt_level=2))
    groups = sorted(tuple(relay_ops(f)) for f in _fused_functions(after))
    assert groups == [("nn.max_pool2d",), ("nn.upsampling", "concatenate", "add")]


def test_reduction_takes_its_injective_inputs() -> None:
    x = relay.var("x", shape=(4, 8))
    out = relay.nn.relu(relay.sum(relay.exp(relay.transpose(x)), axis=[1]))
    after = run_opt_pass(relay.Function([x], out), relay.transform.FuseOps())
    groups = [relay_ops(f) for f in _fused_functions(after)]
    # as in TVM: exp joins the reduction in phase 0, so the transpose (injective, phase 1)
    # finds a reduction group on its path and stays alone
    assert sorted(map(tuple, groups)) == [("exp", "sum"), ("nn.relu",), ("transpose",)]


def test_opaque_ops_stay_alone() -> None:
    x = relay.var("x", shape=(1, 4, 2, 2))
    out = relay.exp(relay.nn.lrn(relay.exp(x), size=1))
    after = run_opt_pass(relay.Function([x], out), relay.transform.FuseOps())
    assert sorted(tuple(relay_ops(f)) for f in _fused_functions(after)) == \
        [("exp",), ("exp",), ("nn.lrn",)]


def test_fuse_opt_level_zero_gives_each_op_its_own_function() -> None:
    x = relay.var("x", shape=(2, 3))
    out = relay.nn.relu(relay.exp(relay.add(x, relay.const(1.0))))
    after = run_opt_pass(relay.Function([x], out), relay.transform.FuseOps(fuse_opt_level=0))
    assert sorted(tuple(relay_ops(f)) for f in _fused_functions(after)) == \
        [("add",), ("exp",), ("nn.relu",)]


def test_max_depth_bounds_the_ops_per_function() -> None:
    x = relay.var("x", shape=(4,))
    y: Any = x
    for _ in range(10):
        y = relay.exp(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3, config={"relay.FuseOps.max_depth": 3}):
        mod = tvm.transform.Sequential([relay.transform.InferType(),
                                        relay.transform.FuseOps()])(mod)
    sizes = sorted(len(relay_ops(f)) for f in _fused_functions(mod["main"]))
    assert sum(sizes) == 10 and max(sizes) <= 3 and len(sizes) == 4


def test_fused_function_and_call_carry_the_spans_of_the_ops_inside() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = named(relay.nn.conv2d(x, w, padding=(1, 1)), "conv1")
    y = named(relay.add(y, named(relay.const(np.ones((4, 1, 1), "float32")), "bn1")), "bn1")
    y = named(relay.nn.relu(y), "relu1")
    after = run_opt_pass(relay.Function([x, w], y), relay.transform.FuseOps())
    call = after.body
    assert isinstance(call, Call) and isinstance(call.op, Function)
    assert call.op.is_primitive()
    assert set(names(call.op)) == {"conv1", "bn1", "relu1"}
    assert names(call) == names(call.op)
    assert fused_function_name(call.op) == "fused_nn_conv2d_add_nn_relu"


def test_fused_groups_statistic() -> None:
    x = relay.var("x", shape=(1, 8))
    y = relay.nn.dense(relay.exp(x), relay.var("w", shape=(8, 8)))
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    recorder = StatsRecorder()
    with tvm.transform.PassContext(opt_level=3, instruments=[recorder]):
        tvm.transform.Sequential([relay.transform.InferType(), relay.transform.FuseOps()])(mod)
    assert recorder.stats["FuseOps"]["fused_groups"] == 2


def test_fusing_twice_changes_nothing() -> None:
    x = relay.var("x", shape=(3,))
    once = run_opt_pass(relay.Function([x], relay.exp(relay.exp(x))), relay.transform.FuseOps())
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(once))
    with tvm.transform.PassContext(opt_level=3):
        again = relay.transform.FuseOps()(mod)
    assert again is mod


def test_fused_module_computes_the_same(rng: np.random.Generator | None = None) -> None:
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(rng.standard_normal((4, 3, 3, 3)).astype("float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)) * relay.const(2.0))
    y = relay.mean(relay.nn.max_pool2d(y, pool_size=(2, 2)), axis=[2, 3])
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    fused = tvm.IRModule.from_expr(run_opt_pass(mod["main"], relay.transform.FuseOps()))
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    from engine.relay.interpreter import evaluate

    np.testing.assert_allclose(evaluate(fused, {"x": data}), evaluate(mod, {"x": data}),
                               rtol=1e-5)


@pytest.mark.parametrize("length", [100_000])
def test_long_chain_fuses_without_recursion(length: int) -> None:
    x = relay.var("x", shape=(4,))
    y: Any = x
    for _ in range(length):
        y = relay.nn.relu(y)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
    with tvm.transform.PassContext(opt_level=3):
        fused = relay.transform.FuseOps()(mod)
    sizes = [len(relay_ops(f)) for f in _fused_functions(fused["main"])]
    assert sum(sizes) == length and max(sizes) == 256
