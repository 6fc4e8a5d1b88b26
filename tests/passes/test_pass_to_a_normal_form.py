"""ToANormalForm: lets in the right scope, round trip with ToGraphNormalForm, deep chains."""

from __future__ import annotations

import numpy as np
from passes_helpers import all_nodes, check_golden, named, names

import engine as tvm
from engine import relay
from engine.ir import assert_structural_equal
from engine.relay.analysis import span_coverage
from engine.relay.interpreter import evaluate


def anf(mod):
    return relay.transform.ToANormalForm()(mod)


def gnf(mod):
    return relay.transform.ToGraphNormalForm()(mod)


def _let_values(expr):
    out = []
    node = expr
    while isinstance(node, relay.Let):
        out.append(node.value)
        node = node.body
    return out, node


def test_every_computation_is_let_bound_in_order():
    x = relay.var("x", shape=(2,))
    y = relay.nn.relu(relay.add(x, relay.const(1.0)))
    mod = anf(tvm.IRModule.from_expr(relay.Function([x], y)))
    values, result = _let_values(mod["main"].body)
    kinds = [v.op.name if isinstance(v, relay.Call) else type(v).__name__ for v in values]
    assert kinds == ["Constant", "add", "nn.relu"]
    assert isinstance(result, relay.Var)
    assert values[1].args[1] is not values[0]  # arguments are the bound variables


def test_shared_value_is_bound_once():
    x = relay.var("x", shape=(2,))
    a = relay.exp(x)
    mod = anf(tvm.IRModule.from_expr(relay.Function([x], relay.add(a, a))))
    values, _ = _let_values(mod["main"].body)
    assert [v.op.name for v in values] == ["exp", "add"]


def test_value_used_in_both_branches_is_bound_before_the_if():
    x, c = relay.var("x", shape=(2,)), relay.var("c", shape=(), dtype="bool")
    shared = relay.exp(x)
    only_then = relay.nn.relu(x)
    ite = relay.If(c, relay.add(shared, only_then), relay.negative(shared))
    mod = anf(tvm.IRModule.from_expr(relay.Function([x, c], ite)))
    values, _ = _let_values(mod["main"].body)
    assert values[0].op.name == "exp"
    branch_if = values[1]
    assert isinstance(branch_if, relay.If)
    then_values, _ = _let_values(branch_if.true_branch)
    assert [v.op.name for v in then_values] == ["nn.relu", "add"]


def test_round_trip_is_structurally_equal():
    x, c = relay.var("x", shape=(2,)), relay.var("c", shape=(), dtype="bool")
    a = relay.multiply(relay.add(x, x), relay.const(2.0))
    f = relay.Function([x, c], relay.Tuple([relay.If(c, a, relay.exp(a)),
                                            relay.TupleGetItem(relay.Tuple([a, x]), 0)]))
    mod = tvm.IRModule.from_expr(f)
    back = gnf(anf(mod))
    assert_structural_equal(back["main"], mod["main"])


def test_spans_and_numerics_survive():
    x = relay.var("x", shape=(3,))
    y = named(relay.nn.relu(named(relay.add(x, relay.const(np.ones(3, "float32"),
                                                            span=named(x, "b").span)),
                                  "add")), "relu")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
    out = anf(mod)
    assert span_coverage(out).ratio == 1.0
    lets = [n for n in all_nodes(out["main"]) if isinstance(n, relay.Let)]
    assert sorted(names(let)[0] for let in lets) == ["add", "b", "relu"]
    data = np.arange(3, dtype="float32") - 1
    np.testing.assert_array_equal(evaluate(out, {"x": data}), evaluate(mod, {"x": data}))


def test_nested_function_body_is_converted_primitive_is_not():
    p = relay.var("p", shape=(2,))
    prim = relay.Function([p], relay.exp(relay.nn.relu(p))).with_attr("Primitive", 1)
    q = relay.var("q", shape=(2,))
    closure = relay.Function([q], relay.exp(relay.nn.relu(q)))
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.add(relay.Call(prim, (x,)), relay.Call(closure, (x,))))
    out = anf(tvm.IRModule.from_expr(f))["main"]
    values, _ = _let_values(out.body)
    funcs = [v for v in values if isinstance(v, relay.Function)]
    assert funcs[0] is prim
    assert isinstance(funcs[1].body, relay.Let)


def test_100k_chain_without_recursion():
    x = relay.var("x", shape=(4,))
    y = x
    for _ in range(100_000):
        y = relay.nn.relu(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    out = anf(mod)
    values, _ = _let_values(out["main"].body)
    assert len(values) == 100_000
    back = gnf(out)
    assert len([n for n in all_nodes(back["main"]) if isinstance(n, relay.Call)]) == 100_000


def test_golden():
    x = relay.var("x", shape=(1, 2))
    y = named(relay.nn.relu(named(relay.add(x, x), "add1")), "relu1")
    mod = anf(tvm.IRModule.from_expr(relay.Function([x], named(relay.exp(y), "exp1"))))
    check_golden("to_a_normal_form", mod.astext(show_meta_data=False))


def test_pass_info():
    info = relay.transform.ToANormalForm().info
    assert (info.name, info.opt_level) == ("ToANormalForm", 1)


def test_already_normal_form_is_unchanged():
    x = relay.var("x", shape=(2,))
    mod = anf(tvm.IRModule.from_expr(relay.Function([x], relay.exp(relay.nn.relu(x)))))
    assert anf(mod) is mod
