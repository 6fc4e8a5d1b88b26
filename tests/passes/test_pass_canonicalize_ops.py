"""CanonicalizeOps: bias_add -> add(expand_dims(bias))."""

from __future__ import annotations

import numpy as np
from passes_helpers import named, names, ops_in, run_opt_pass

import engine as tvm
from engine import relay
from engine.ir import assert_structural_equal, layer_span
from engine.relay.interpreter import evaluate


def canon(expr):
    return run_opt_pass(expr, relay.transform.CanonicalizeOps())


def test_bias_add_nchw():
    x, b = relay.var("x", shape=(1, 4, 3, 3)), relay.var("b", shape=(4,))
    before = relay.Function([x, b], relay.nn.bias_add(x, b))
    expected = relay.Function([x, b], relay.add(x, relay.expand_dims(b, 1, 2)))
    assert_structural_equal(canon(before), run_opt_pass(expected, []))


def test_bias_add_last_axis_needs_no_expand():
    x, b = relay.var("x", shape=(2, 8)), relay.var("b", shape=(8,))
    before = relay.Function([x, b], relay.nn.bias_add(x, b, axis=-1))
    expected = relay.Function([x, b], relay.add(x, b))
    assert_structural_equal(canon(before), run_opt_pass(expected, []))


def test_new_calls_carry_the_bias_add_span_and_numerics_hold():
    x = relay.var("x", shape=(1, 3, 2, 2))
    bias = relay.const(np.arange(3, dtype="float32"), span=layer_span("conv.bias"))
    f = relay.Function([x], named(relay.nn.bias_add(x, bias), "conv"))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = relay.transform.CanonicalizeOps()(mod)
    body = out["main"].body
    assert ops_in(out["main"]) == ["expand_dims", "add"]
    assert names(body) == ("conv",) and names(body.args[1]) == ("conv",)
    assert names(body.args[1].args[0]) == ("conv.bias",)
    data = np.random.default_rng(0).random((1, 3, 2, 2), dtype="float32")
    np.testing.assert_allclose(evaluate(out, {"x": data}), evaluate(mod, {"x": data}))


def test_no_bias_add_returns_same_module():
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x],
                                                                          relay.exp(x))))
    assert relay.transform.CanonicalizeOps()(mod) is mod


def test_pass_info():
    info = relay.transform.CanonicalizeOps().info
    assert (info.name, info.opt_level) == ("CanonicalizeOps", 3)
