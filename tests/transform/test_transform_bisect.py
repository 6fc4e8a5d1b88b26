"""Bisection within a pass: relay.bisect.limit / relay.bisect.pass and `allow_rewrite`,
obeyed by every rewriting pass; `bisect_rewrites` finds the one rewrite that breaks a
pass's output."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.ir.expr import Call, Constant, Function
from engine.ir.span import layer_span
from engine.relay.expr_functor import ExprMutator, post_order_visit
from engine.relay.interpreter import evaluate
from engine.transform import allow_rewrite, bisect_rewrites, run_limited

RNG = np.random.default_rng(3)


def _const(*shape: int, positive: bool = False) -> Any:
    data = RNG.random(shape) + 0.5 if positive else RNG.standard_normal(shape)
    return relay.const(data.astype("float32"))


def _named(expr: Any, name: str) -> Any:
    return replace(expr, span=layer_span(name))


def _conv_bn_relu(x: Any, channels: int, name: str) -> Any:
    conv = _named(relay.nn.conv2d(x, _const(channels, 4, 3, 3), channels=channels,
                                  kernel_size=(3, 3), padding=(1, 1)), name)
    bn = _named(relay.nn.batch_norm(conv, _const(channels, positive=True), _const(channels),
                                    _const(channels), _const(channels, positive=True)).astuple(),
                f"{name}_bn")
    return _named(relay.nn.relu(relay.TupleGetItem(bn, 0)), f"{name}_relu")


def _model() -> tvm.IRModule:
    """Three conv + batch norm + relu blocks, a constant subexpression and a duplicate."""
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = x
    for i in range(3):
        y = _conv_bn_relu(y, 4, f"conv{i}")
    folded = _named(relay.add(_const(1, 4, 1, 1), _const(1, 4, 1, 1)), "bias")
    y = relay.add(y, folded)
    dup = relay.add(relay.nn.relu(y), relay.nn.relu(y))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.reshape(relay.reshape(
        dup, newshape=(1, -1)), newshape=(1, 4, 8, 8))))
    return relay.transform.InferType()(mod)


def _prepared(names: list[str]) -> tvm.IRModule:
    """The model after the passes that normally run before the one under test."""
    mod = _model()
    with tvm.transform.PassContext(opt_level=3):
        for name in names:
            mod = relay.transform.InferType()(tvm.transform.get_pass(name)(mod))
    return mod


CASES: list[tuple[str, list[str], Any]] = [
    ("SimplifyInference", [], relay.transform.SimplifyInference),
    ("FoldConstant", ["SimplifyInference"], relay.transform.FoldConstant),
    ("SimplifyExpr", [], relay.transform.SimplifyExpr),
    ("EliminateCommonSubexpr", [], relay.transform.EliminateCommonSubexpr),
    ("FoldScaleAxis", ["SimplifyInference"], relay.transform.FoldScaleAxis),
    ("AlterOpLayout", ["SimplifyInference", "FoldConstant"],
     lambda: relay.transform.AlterOpLayout("llvm -mattr=+avx2")),
    ("FuseOps", ["SimplifyInference", "FoldConstant"], relay.transform.FuseOps),
]


def _outputs(mod: tvm.IRModule) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype("float32")
    return np.asarray(evaluate(mod, {"x": x}))


def _max_ops_per_function(mod: tvm.IRModule) -> int:
    sizes = [0]

    def visit(node: Any) -> None:
        if isinstance(node, Function) and node.is_primitive():
            count: list[int] = []
            post_order_visit(node.body, lambda e: count.append(1)
                             if isinstance(e, Call) and not isinstance(e.op, Function) else None)
            sizes.append(len(count))

    post_order_visit(mod["main"], visit)
    return max(sizes)


@pytest.mark.parametrize(("name", "before", "make"), CASES, ids=[c[0] for c in CASES])
def test_every_rewriting_pass_obeys_the_limit(name: str, before: list[str], make: Any
                                              ) -> None:
    mod = _prepared(before)
    pass_ = make()
    full, log = run_limited(pass_, mod, -1, opt_level=3)
    assert log, f"{name} asked for no rewrite"
    assert all(r.applied and r.pass_name == name and r.node_id for r in log)
    assert [r.index for r in log] == list(range(1, len(log) + 1))
    none, zero_log = run_limited(pass_, mod, 0, opt_level=3)
    assert zero_log and not any(r.applied for r in zero_log)
    if name == "FuseOps":  # refused groups are made one function per op
        assert _max_ops_per_function(none) == 1 < _max_ops_per_function(full)
    else:
        tvm.ir.assert_structural_equal(relay.transform.InferType()(none), mod)
    some, some_log = run_limited(pass_, mod, 1, opt_level=3)
    assert [r.applied for r in some_log].count(True) == 1
    if name != "EliminateCommonSubexpr":  # structural equality cannot see sharing
        assert not tvm.ir.structural_equal(some, mod)
    np.testing.assert_allclose(_outputs(some), _outputs(mod), rtol=1e-4, atol=1e-4)


def test_without_the_keys_nothing_is_counted() -> None:
    with tvm.transform.PassContext(opt_level=3) as ctx:
        assert ctx.rewrite_counter is None
        assert allow_rewrite(relay.const(1.0))
    with tvm.transform.PassContext(config={"relay.bisect.limit": 2}) as ctx:
        assert ctx.rewrite_counter is not None and ctx.rewrite_counter.pass_name == ""


def test_the_keys_are_typed() -> None:
    with pytest.raises(tvm.ir.errors.ConfigError, match="relay.bisect.limit"):
        tvm.transform.PassContext(config={"relay.bisect.limit": "3"})


def test_only_the_named_pass_is_limited() -> None:
    mod = _prepared(["SimplifyInference"])
    seq = tvm.transform.Sequential([relay.transform.FoldConstant(),
                                    relay.transform.FoldScaleAxis()])
    with tvm.transform.PassContext(opt_level=3, config={
            "relay.bisect.pass": "FoldScaleAxis", "relay.bisect.limit": 0}) as ctx:
        out = seq(mod)
    log = ctx.rewrite_counter.log
    assert log and {r.pass_name for r in log} == {"FoldScaleAxis"}
    assert not any(r.applied for r in log)
    assert not tvm.ir.structural_equal(out, mod)  # FoldConstant outside it still folded


@tvm.transform.module_pass(opt_level=0, name="CopyWeights")
def _copy_weights(mod: tvm.IRModule, ctx: Any) -> tvm.IRModule:
    """A user pass: copies every conv weight into a fresh constant, one rewrite each, and
    gets the one of conv1 wrong."""

    class Copier(ExprMutator):
        def visit_call(self, call: Call) -> Any:
            post = super().visit_call(call)
            op = getattr(post.op, "name", None)
            if op != "nn.conv2d" or not isinstance(post.args[1], Constant) \
                    or not allow_rewrite(call):
                return post
            data = post.args[1].data.numpy().copy()
            if "conv1" in call.span.source_names():
                data[0, 0, 0, 0] += 10.0
            return replace(post, args=(post.args[0], relay.const(data)))

    mod = mod.shallow_copy()
    mod["main"] = Copier().visit(mod["main"])
    return mod


def test_bisection_finds_the_one_bad_rewrite_of_a_user_pass() -> None:
    mod = _model()
    want = _outputs(mod)

    def broken(out: tvm.IRModule) -> bool:
        return not np.allclose(_outputs(out), want, rtol=1e-3, atol=1e-4)

    found = bisect_rewrites(lambda limit: run_limited(_copy_weights, mod, limit), broken)
    assert found.total == 3
    assert found.culprit is not None
    assert (found.culprit.index, found.culprit.op, found.culprit.layers) == \
        (2, "nn.conv2d", ("conv1",))
    assert found.culprit.pass_name == "CopyWeights" and found.runs <= 4


def test_bisection_of_a_sound_pass_finds_nothing() -> None:
    mod = _prepared(["SimplifyInference"])
    want = _outputs(mod)
    found = bisect_rewrites(
        lambda limit: run_limited(relay.transform.FoldConstant(), mod, limit, opt_level=3),
        lambda out: not np.allclose(_outputs(out), want, rtol=1e-3, atol=1e-4))
    assert found.culprit is None and found.total > 0 and found.runs == 1
