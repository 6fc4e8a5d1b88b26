"""DeadCodeElimination: unused bindings, inline_once, impurity, deep chains."""

from __future__ import annotations

from passes_helpers import run_opt_pass

import engine as tvm
from engine import relay
from engine.ir import assert_structural_equal, register_op
from engine.ir.op import register_op_attr


def dce(expr, **kwargs):
    return run_opt_pass(expr, relay.transform.DeadCodeElimination(**kwargs))


def _stateful_op() -> tvm.ir.Op:
    register_op("test.dce_stateful", num_inputs=1, arg_names=("data",))
    register_op_attr("test.dce_stateful", "TOpIsStateful", True)
    register_op_attr("test.dce_stateful", "FTVMTypeRelation", lambda types, attrs: types[0])
    return tvm.ir.Op.get("test.dce_stateful")


def test_unused_binding_is_removed():
    x = relay.var("x", shape=(2,))
    a, b = relay.var("a"), relay.var("b")
    before = relay.Function([x], relay.Let(a, relay.nn.relu(x),
                                           relay.Let(b, relay.negative(x), relay.add(a, a))))
    expected = relay.Function([x], relay.Let(a, relay.nn.relu(x), relay.add(a, a)))
    assert_structural_equal(dce(before), run_opt_pass(expected, []))


def test_chain_of_dead_bindings_goes_in_one_pass():
    x = relay.var("x", shape=(2,))
    a, b, c = relay.var("a"), relay.var("b"), relay.var("c")
    before = relay.Function([x], relay.Let(a, relay.nn.relu(x), relay.Let(
        b, relay.negative(a), relay.Let(c, relay.exp(b), x))))
    assert_structural_equal(dce(before), run_opt_pass(relay.Function([x], x), []))


def test_inline_once_substitutes_single_use():
    x = relay.var("x", shape=(2,))
    a, b = relay.var("a"), relay.var("b")
    before = relay.Function([x], relay.Let(a, relay.nn.relu(x),
                                           relay.Let(b, relay.negative(x), relay.add(a, b))))
    expected = relay.Function([x], relay.add(relay.nn.relu(x), relay.negative(x)))
    assert_structural_equal(dce(before, inline_once=True), run_opt_pass(expected, []))


def test_inline_once_keeps_multi_use():
    x = relay.var("x", shape=(2,))
    a = relay.var("a")
    before = relay.Function([x], relay.Let(a, relay.nn.relu(x), relay.add(a, a)))
    assert isinstance(dce(before, inline_once=True).body, relay.Let)


def test_impure_binding_is_kept_unless_ignored():
    op = _stateful_op()
    x = relay.var("x", shape=(2,))
    a = relay.var("a")
    before = relay.Function([x], relay.Let(a, relay.Call(op, (x,)), x))
    assert isinstance(dce(before).body, relay.Let)
    assert_structural_equal(dce(before, ignore_impurity=True), run_opt_pass(
        relay.Function([x], x), []))


def test_graph_form_is_unchanged_object():
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.nn.relu(relay.add(x, x)))))
    assert relay.transform.DeadCodeElimination()(mod) is mod


def test_deep_let_chain_without_recursion():
    x = relay.var("x", shape=(2,))
    body = x
    n = 20_000
    for i in range(n):
        body = relay.Let(relay.var(f"v{i}"), relay.const(float(i)), body)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    out = relay.transform.DeadCodeElimination()(mod)
    assert out["main"].body is x


def test_pass_info():
    info = relay.transform.DeadCodeElimination(inline_once=True, ignore_impurity=True).info
    assert (info.name, info.opt_level) == ("DeadCodeElimination", 1)


def test_variable_returned_by_the_chain_is_live():
    x = relay.var("x", shape=(2,))
    a, b = relay.var("a"), relay.var("b")
    before = relay.Function([x], relay.Let(a, relay.nn.relu(x), relay.Let(b, a, b)))
    out = dce(before, inline_once=True)
    assert_structural_equal(out, run_opt_pass(relay.Function([x], relay.nn.relu(x)), []))
