"""ConvertLayout: TVM-style Before / Expected, propagation through elementwise, broadcast,
pooling, concatenate and reductions, boundaries, spans, numerics and stats."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from passes_helpers import all_nodes, named, names, ops_in, run_opt_pass

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument
from engine.ir.expr import Call, Function
from engine.relay.analysis import span_coverage
from engine.relay.interpreter import evaluate

RNG = np.random.default_rng(3)
NHWC = {"nn.conv2d": ["NHWC", "default"]}


def _same_outputs(before: Function, after: Function) -> None:
    inputs = {p.name_hint: RNG.standard_normal(p.type_annotation.shape).astype("float32")
              for p in before.params}
    np.testing.assert_allclose(evaluate(tvm.IRModule.from_expr(after), inputs),
                               evaluate(tvm.IRModule.from_expr(before), inputs),
                               rtol=1e-4, atol=1e-5)


def test_conv_convert_layout_nhwc_to_nchw() -> None:
    def before() -> Function:
        x = relay.var("x", shape=(1, 8, 8, 16))
        weight = relay.var("weight", shape=(3, 3, 16, 16))
        y = relay.nn.conv2d(x, weight, channels=16, kernel_size=(3, 3), padding=(1, 1),
                            data_layout="NHWC", kernel_layout="HWIO")
        return relay.Function([x, weight], relay.nn.relu(y))

    def expected() -> Function:
        x = relay.var("x", shape=(1, 8, 8, 16))
        weight = relay.var("weight", shape=(3, 3, 16, 16))
        y = relay.nn.conv2d(relay.layout_transform(x, "NHWC", "NCHW"),
                            relay.layout_transform(weight, "HWIO", "OIHW"),
                            channels=16, kernel_size=(3, 3), padding=(1, 1))
        y = relay.layout_transform(relay.nn.relu(y), "NCHW", "NHWC")
        return relay.Function([x, weight], y)

    after = run_opt_pass(before(), relay.transform.ConvertLayout(
        {"nn.conv2d": ["NCHW", "default"]}))
    tvm.ir.assert_structural_equal(after, run_opt_pass(expected(), relay.transform.InferType()))
    _same_outputs(before(), after)


def test_conv_bias_relu_pool_convert_to_nhwc() -> None:
    def before() -> Function:
        x = relay.var("x", shape=(1, 4, 8, 8))
        w = relay.var("w", shape=(8, 4, 3, 3))
        b = relay.var("b", shape=(8, 1, 1))
        y = relay.nn.conv2d(x, w, channels=8, kernel_size=(3, 3), padding=(1, 1))
        y = relay.nn.max_pool2d(relay.nn.relu(relay.add(y, b)), pool_size=(2, 2))
        return relay.Function([x, w, b], y)

    def expected() -> Function:
        x = relay.var("x", shape=(1, 4, 8, 8))
        w = relay.var("w", shape=(8, 4, 3, 3))
        b = relay.var("b", shape=(8, 1, 1))
        y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NHWC"),
                            relay.layout_transform(w, "OIHW", "HWIO"), channels=8,
                            kernel_size=(3, 3), padding=(1, 1), data_layout="NHWC",
                            kernel_layout="HWIO")
        bias = relay.layout_transform(relay.expand_dims(b, 0, 1), "NCHW", "NHWC")
        y = relay.nn.max_pool2d(relay.nn.relu(relay.add(y, bias)), pool_size=(2, 2),
                                layout="NHWC")
        return relay.Function([x, w, b], relay.layout_transform(y, "NHWC", "NCHW"))

    after = run_opt_pass(before(), relay.transform.ConvertLayout(NHWC))
    tvm.ir.assert_structural_equal(after, run_opt_pass(expected(), relay.transform.InferType()))
    _same_outputs(before(), after)


def test_concatenate_and_mean_follow_with_their_axes() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 1, 1))
    y = relay.nn.conv2d(x, w, channels=4, kernel_size=(1, 1))
    y = relay.concatenate([y, relay.nn.relu(y)], axis=1)
    y = relay.mean(y, axis=[2, 3], keepdims=False)
    func = relay.Function([x, w], y)
    after = run_opt_pass(func, relay.transform.ConvertLayout(NHWC))
    calls = {n.op.name: n for n in all_nodes(after) if isinstance(n, Call)
             and isinstance(n.op, tvm.ir.Op)}
    assert calls["concatenate"].attrs.axis == 3
    assert tuple(calls["mean"].attrs.axis) == (1, 2)
    # the reduced result is (N, C) in both layouts: no transform back is needed
    assert ops_in(after).count("layout_transform") == 2
    _same_outputs(func, after)


def test_unsupported_consumer_gets_the_original_layout_back() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1))
    y = relay.nn.batch_flatten(relay.nn.relu(y))
    func = relay.Function([x, w], y)
    after = run_opt_pass(func, relay.transform.ConvertLayout(NHWC))
    flatten = after.body
    assert flatten.op.name == "nn.batch_flatten"
    back = flatten.args[0]
    assert back.op.name == "layout_transform" and back.attrs.dst_layout == "NCHW"
    _same_outputs(func, after)


def test_depthwise_conv_gets_hwoi_kernel() -> None:
    x = relay.var("x", shape=(1, 6, 5, 5))
    w = relay.var("w", shape=(6, 1, 3, 3))
    func = relay.Function([x, w], relay.nn.conv2d(x, w, groups=6, channels=6,
                                                  kernel_size=(3, 3), padding=(1, 1)))
    after = run_opt_pass(func, relay.transform.ConvertLayout(NHWC))
    conv = after.body.args[0]
    assert (conv.attrs.data_layout, conv.attrs.kernel_layout) == ("NHWC", "HWOI")
    _same_outputs(func, after)


def test_already_in_desired_layout_is_unchanged() -> None:
    x = relay.var("x", shape=(1, 6, 6, 4))
    w = relay.var("w", shape=(3, 3, 4, 4))
    func = relay.Function([x, w], relay.nn.relu(relay.nn.conv2d(
        x, w, channels=4, kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWIO")))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    with tvm.transform.PassContext(opt_level=3):
        assert relay.transform.ConvertLayout(NHWC)(mod) is mod


def test_spans_of_converted_ops_and_inserted_transforms() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = named(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3)), "conv1")
    y = named(relay.add(y, named(relay.const(np.ones((4, 1, 1), "float32")), "b1")), "add1")
    func = relay.Function([x, w], named(relay.nn.relu(y), "relu1"))
    after = run_opt_pass(func, relay.transform.ConvertLayout(NHWC))
    assert span_coverage(after).ratio == 1.0
    transforms = [n for n in all_nodes(after) if isinstance(n, Call)
                  and getattr(n.op, "name", "") == "layout_transform"]
    assert {names(t)[0] for t in transforms} == {"conv1", "add1", "relu1"}
    conv = next(n for n in all_nodes(after) if getattr(n, "op", None) is not None
                and getattr(n.op, "name", "") == "nn.conv2d")
    assert names(conv) == ("conv1",)


class _Stats(PassInstrument):
    def __init__(self) -> None:
        self.stats: dict[str, float] = {}

    def run_after_pass(self, mod: Any, info: Any) -> None:
        frame = tvm.transform.PassContext.current().current_frame
        if frame is not None and info.name == "ConvertLayout":
            self.stats = dict(frame.stats)


def test_stats_and_bad_desired_layouts() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = relay.nn.conv2d(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1)),
                        w, channels=4, kernel_size=(3, 3), padding=(1, 1))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    stats = _Stats()
    with tvm.transform.PassContext(opt_level=3, instruments=[stats]):
        tvm.transform.Sequential([relay.transform.InferType(),
                                  relay.transform.ConvertLayout(NHWC)])(mod)
    # the shared weight is transformed once; the data once in, once out
    assert stats.stats == {"converted": 2, "layout_transforms": 3}
    with pytest.raises(ValueError, match="nn.conv2d"):
        relay.transform.ConvertLayout({"nn.conv2d": "NHWC"})
