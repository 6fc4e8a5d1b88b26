"""FoldScaleAxis: forward and backward folding, TVM-style Before / Expected, the cases that
must not fold, spans of the folded weights, numerics and stats."""

from __future__ import annotations

from typing import Any

import numpy as np
from passes_helpers import named, names, ops_in, run_opt_pass

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument
from engine.ir.expr import Call, Constant, Function
from engine.relay.interpreter import evaluate

RNG = np.random.default_rng(7)


def _positive(shape: tuple[int, ...]) -> np.ndarray:
    return (RNG.random(shape) + 0.5).astype("float32")


def _same_outputs(before: Function, after: Function, shape: tuple[int, ...]) -> None:
    """Both functions give the same result on random inputs (x of `shape`, other params
    by their annotated shape)."""
    inputs = {p.name_hint: RNG.standard_normal(
        shape if p.name_hint == "x" else p.type_annotation.shape).astype("float32")
        for p in before.params}
    want = evaluate(tvm.IRModule.from_expr(before), inputs)
    got = evaluate(tvm.IRModule.from_expr(after), inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _conv(x: Any, w: Any, channels: int, **kw: Any) -> Any:
    return relay.nn.conv2d(x, w, channels=channels, kernel_size=(3, 3), padding=(1, 1), **kw)


def test_fold_fwd_simple() -> None:
    """x * s -> relu -> + b -> conv: the scale moves into the conv weight (TVM's test)."""
    scale = _positive((4, 1, 1))
    bias = RNG.random((4, 1, 1)).astype("float32")

    def before() -> Function:
        x = relay.var("x", shape=(2, 4, 10, 10))
        w = relay.var("w")
        y = relay.add(relay.nn.relu(relay.multiply(x, relay.const(scale))), relay.const(bias))
        return relay.Function([x, w], _conv(x=y, w=w, channels=2))

    def expected() -> Function:
        x = relay.var("x", shape=(2, 4, 10, 10))
        w = relay.var("w")
        s = relay.squeeze(relay.const(scale), axis=[1, 2])
        y = relay.add(relay.nn.relu(x),
                      relay.divide(relay.const(bias), relay.expand_dims(s, 1, 2)))
        w2 = relay.multiply(w, relay.expand_dims(s, 1, 2))
        return relay.Function([x, w], _conv(x=y, w=w2, channels=2))

    after = run_opt_pass(_retype_w(before()), relay.transform.ForwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(after, run_opt_pass(_retype_w(expected()),
                                                       relay.transform.InferType()))


def _retype_w(f: Function) -> Function:
    """Give the free weight parameter `w` its shape (the Before/Expected above leave it out
    for brevity)."""
    w_old = f.params[1]
    w_new = relay.var("w", shape=(2, 4, 3, 3))
    from engine.relay.analysis import bind_vars

    body = bind_vars(f.body, {w_old: w_new})
    return relay.Function([f.params[0], w_new], body)


def test_fold_fwd_negative_scale_through_relu_is_not_folded() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    scale = -_positive((4, 1, 1))
    y = relay.nn.relu(relay.multiply(x, relay.const(scale)))
    func = relay.Function([x, w], _conv(y, w, 4))
    after = run_opt_pass(func, relay.transform.ForwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(after, run_opt_pass(func, relay.transform.InferType()))


def test_fold_fwd_value_with_another_consumer_is_not_folded() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = relay.multiply(x, relay.const(_positive((4, 1, 1))))
    func = relay.Function([x, w], relay.Tuple([_conv(y, w, 4), relay.exp(y)]))
    after = run_opt_pass(func, relay.transform.ForwardFoldScaleAxis())
    assert ops_in(after).count("multiply") == 1
    assert tvm.ir.structural_equal(after, run_opt_pass(func, relay.transform.InferType()))


def test_fold_bwd_simple() -> None:
    """conv -> * s: the scale moves into the conv weight's output channels."""
    scale = _positive((8, 1, 1))

    def before() -> Function:
        x = relay.var("x", shape=(1, 4, 6, 6))
        w = relay.var("w", shape=(8, 4, 3, 3))
        return relay.Function([x, w], relay.multiply(_conv(x, w, 8), relay.const(scale)))

    def expected() -> Function:
        x = relay.var("x", shape=(1, 4, 6, 6))
        w = relay.var("w", shape=(8, 4, 3, 3))
        s = relay.squeeze(relay.const(scale), axis=[1, 2])
        w2 = relay.multiply(w, relay.expand_dims(s, 1, 3))
        return relay.Function([x, w], _conv(x, w2, 8))

    after = run_opt_pass(before(), relay.transform.BackwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(after, run_opt_pass(expected(), relay.transform.InferType()))
    _same_outputs(before(), after, (1, 4, 6, 6))


def test_fold_bwd_through_add_of_two_convs() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w1 = relay.const(RNG.standard_normal((8, 4, 3, 3)).astype("float32"))
    w2 = relay.const(RNG.standard_normal((8, 4, 3, 3)).astype("float32"))
    y = relay.add(_conv(x, w1, 8), _conv(x, w2, 8))
    func = relay.Function([x], relay.multiply(y, relay.const(_positive((8, 1, 1)) - 1.0)))
    after = run_opt_pass(func, relay.transform.BackwardFoldScaleAxis())
    assert isinstance(after.body, Call) and after.body.op.name == "add"
    assert ops_in(after).count("multiply") == 2  # one per weight
    _same_outputs(func, after, (1, 4, 6, 6))


def test_fold_bwd_conv_with_two_consumers_is_not_folded() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(8, 4, 3, 3))
    y = _conv(x, w, 8)
    func = relay.Function([x, w], relay.Tuple([relay.multiply(y, relay.const(
        _positive((8, 1, 1)))), relay.exp(y)]))
    after = run_opt_pass(func, relay.transform.BackwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(after, run_opt_pass(func, relay.transform.InferType()))


def test_fold_bwd_dense() -> None:
    x = relay.var("x", shape=(3, 5))
    w = relay.const(RNG.standard_normal((4, 5)).astype("float32"))
    func = relay.Function([x], relay.multiply(relay.nn.dense(x, w),
                                              relay.const(_positive((4,)))))
    after = run_opt_pass(func, relay.transform.BackwardFoldScaleAxis())
    assert after.body.op.name == "nn.dense"
    _same_outputs(func, after, (3, 5))


def test_fold_scale_axis_makes_one_constant_naming_conv_and_bn() -> None:
    """After SimplifyInference's batch-norm arithmetic, FoldScaleAxis (with its
    FoldConstant) leaves the conv with one weight constant carrying both layers."""
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = named(relay.const(RNG.standard_normal((6, 3, 3, 3)).astype("float32")), "conv1.w")
    conv = named(_conv(x, w, 6), "conv1")
    bn = relay.nn.batch_norm(conv, *(named(relay.const(v), "bn1.param") for v in (
        _positive((6,)), RNG.random(6).astype("float32"), RNG.random(6).astype("float32"),
        _positive((6,)))))
    out = named(relay.nn.relu(named(bn[0], "bn1")), "relu1")
    func = relay.Function([x], out)
    after = run_opt_pass(func, [relay.transform.SimplifyInference(),
                                relay.transform.FoldConstant(),
                                relay.transform.FoldScaleAxis()])
    assert "multiply" not in ops_in(after) and "nn.batch_norm" not in ops_in(after)
    conv_after = after.body.args[0].args[0]
    assert conv_after.op.name == "nn.conv2d"
    weight = conv_after.args[1]
    assert isinstance(weight, Constant)
    assert {"conv1", "bn1"} <= set(names(weight))
    assert {"conv1", "bn1"} <= set(names(conv_after))
    _same_outputs(func, after, (1, 3, 8, 8))


class _Stats(PassInstrument):
    def __init__(self) -> None:
        self.folded: dict[str, float] = {}

    def run_after_pass(self, mod: Any, info: Any) -> None:
        frame = tvm.transform.PassContext.current().current_frame
        if frame is not None and "folded" in frame.stats:
            self.folded[info.name] = frame.stats["folded"]


def test_fold_scale_axis_is_a_sequential_with_stats() -> None:
    seq = relay.transform.FoldScaleAxis()
    assert [p.info.name for p in seq.passes] == ["BackwardFoldScaleAxis",
                                                 "ForwardFoldScaleAxis", "FoldConstant"]
    assert seq.info.opt_level == 3
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.const(RNG.standard_normal((8, 4, 3, 3)).astype("float32"))
    w2 = relay.const(RNG.standard_normal((8, 8, 3, 3)).astype("float32"))
    y = relay.multiply(_conv(x, w, 8), relay.const(_positive((8, 1, 1))))
    y = _conv(relay.nn.relu(relay.multiply(relay.exp(y), relay.const(_positive((8, 1, 1))))),
              w2, 8)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    stats = _Stats()
    with tvm.transform.PassContext(opt_level=3, instruments=[stats]):
        out = tvm.transform.Sequential([relay.transform.InferType(), seq])(mod)
    assert stats.folded == {"BackwardFoldScaleAxis": 1, "ForwardFoldScaleAxis": 1}
    assert ops_in(out["main"]).count("multiply") == 0
    with tvm.transform.PassContext(opt_level=2):
        assert tvm.transform.Sequential([seq])(mod) is mod  # gated by opt_level 3


def test_fold_bwd_leaves_an_integer_rescale_alone() -> None:
    """An int64 conv's per-channel fixed-point significand (a quantized model's rescale)
    is not a scale: folding it into the weights would overflow them (and mix dtypes)."""
    x = relay.var("x", shape=(1, 4, 6, 6), dtype="int32")
    w = relay.const(RNG.integers(-127, 128, size=(2, 4, 3, 3)).astype("int32"))
    significand = relay.const(np.asarray([1 << 30, 3 << 28], dtype="int64").reshape(2, 1, 1))
    func = relay.Function([x], relay.multiply(_conv(x, w, 2, out_dtype="int64"), significand))
    after = run_opt_pass(func, relay.transform.BackwardFoldScaleAxis())
    assert ops_in(after).count("multiply") == 1 and "nn.conv2d" in ops_in(after)
    inputs = {"x": RNG.integers(-128, 128, size=(1, 4, 6, 6)).astype("int32")}
    np.testing.assert_array_equal(evaluate(tvm.IRModule.from_expr(after), inputs),
                                  evaluate(tvm.IRModule.from_expr(func), inputs))
