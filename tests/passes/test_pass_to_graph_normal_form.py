"""ToGraphNormalForm: lets inlined into a shared dataflow graph."""

from __future__ import annotations

from passes_helpers import names, run_opt_pass

import engine as tvm
from engine import relay
from engine.ir import assert_structural_equal, layer_span


def gnf(mod):
    return relay.transform.ToGraphNormalForm()(mod)


def test_lets_are_inlined_and_sharing_kept():
    x = relay.var("x", shape=(2,))
    a, b = relay.var("a"), relay.var("b")
    before = relay.Function([x], relay.Let(a, relay.exp(x),
                                           relay.Let(b, relay.add(a, a), relay.nn.relu(b))))
    out = gnf(tvm.IRModule.from_expr(before))["main"]
    e = relay.exp(x)
    expected = relay.Function([x], relay.nn.relu(relay.add(e, e)))
    assert_structural_equal(out, expected)
    assert out.body.args[0].args[0] is out.body.args[0].args[1]


def test_recursive_binding_is_kept():
    x = relay.var("x", shape=(), dtype="int32")
    f = relay.var("f")
    n = relay.var("n", shape=(), dtype="int32")
    body = relay.If(relay.equal(n, relay.const(0)), n,
                    relay.Call(f, (relay.subtract(n, relay.const(1)),)))
    rec = relay.Function([n], body)
    before = relay.Function([x], relay.Let(f, rec, relay.Call(f, (x,))))
    out = gnf(tvm.IRModule.from_expr(before))["main"]
    call = out.body
    assert isinstance(call.op, relay.Let) and call.op.var is f


def test_let_span_joins_a_spanless_value():
    x = relay.var("x", shape=(2,))
    a = relay.var("a")
    before = relay.Function([x], relay.Let(a, relay.exp(x), a, span=layer_span("exp1")))
    out = gnf(tvm.IRModule.from_expr(before))["main"]
    assert names(out.body) == ("exp1",)


def test_graph_form_is_unchanged():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(x)))
    assert gnf(mod) is mod


def test_let_chain_20k_without_recursion():
    x = relay.var("x", shape=(2,))
    bindings = []
    cur = x
    for i in range(20_000):
        v = relay.var(f"v{i}")
        bindings.append((v, relay.nn.relu(cur)))
        cur = v
    body = cur
    for v, value in reversed(bindings):
        body = relay.Let(v, value, body)
    out = gnf(tvm.IRModule.from_expr(relay.Function([x], body)))["main"]
    assert isinstance(out.body, relay.Call) and out.body.op.name == "nn.relu"


def test_pass_info():
    info = relay.transform.ToGraphNormalForm().info
    assert (info.name, info.opt_level) == ("ToGraphNormalForm", 1)
    assert run_opt_pass(relay.Function([], relay.const(1.0)), []) is not None
