"""EliminateCommonSubexpr: duplicates merged, fskip, attrs, survivor spans."""

from __future__ import annotations

import numpy as np
from passes_helpers import all_nodes, check_golden, named, names, run_opt_pass

import engine as tvm
from engine import relay
from engine.ir import assert_structural_equal


def cse(expr, fskip=None):
    return run_opt_pass(expr, relay.transform.EliminateCommonSubexpr(fskip))


def test_duplicate_calls_are_merged():
    x = relay.var("x", shape=(1, 16))

    def before():
        y1 = relay.add(x, relay.const(1.0))
        y2 = relay.add(x, relay.const(1.0))
        return relay.Function([x], relay.add(relay.nn.relu(y1), relay.nn.relu(y2)))

    def expected():
        y = relay.nn.relu(relay.add(x, relay.const(1.0)))
        return relay.Function([x], relay.add(y, y))

    assert_structural_equal(cse(before()), run_opt_pass(expected(), []))


def test_calls_on_equal_tuples_are_merged():
    x, y = relay.var("x", shape=(1, 4)), relay.var("y", shape=(1, 4))

    def before():
        a = relay.concatenate([x, y], axis=1)
        b = relay.concatenate([x, y], axis=1)
        c = relay.concatenate([y, x], axis=1)
        return relay.Function([x, y], relay.Tuple([a, b, c]))

    def expected():
        a = relay.concatenate([x, y], axis=1)
        return relay.Function([x, y], relay.Tuple([a, a, relay.concatenate([y, x], axis=1)]))

    assert_structural_equal(cse(before()), run_opt_pass(expected(), []))


def test_different_attrs_are_not_merged():
    x = relay.var("x", shape=(1, 16))
    f = relay.Function([x], relay.Tuple([relay.sum(x, axis=[0]), relay.sum(x, axis=[1])]))
    out = cse(f)
    assert out.body.fields[0] is not out.body.fields[1]


def test_tensor_constants_are_compared_by_identity():
    x = relay.var("x", shape=(2,))
    c1, c2 = relay.const(np.ones(2, "float32")), relay.const(np.zeros(2, "float32"))
    out = cse(relay.Function([x], relay.Tuple([relay.add(x, c1), relay.add(x, c2)])))
    assert out.body.fields[0] is not out.body.fields[1]


def test_fskip_exempts_calls():
    x = relay.var("x", shape=(1, 16))
    f = relay.Function([x], relay.Tuple([relay.nn.relu(x), relay.nn.relu(x)]))

    def skip_relu(call):
        return isinstance(call, relay.Call) and call.op.name == "nn.relu"

    out = cse(f, skip_relu)
    assert out.body.fields[0] is not out.body.fields[1]
    merged = cse(f)
    assert merged.body.fields[0] is merged.body.fields[1]


def test_tuple_getitem_duplicates_are_merged():
    x = relay.var("x", shape=(4,))
    parts = relay.split(x, 2).astuple()
    f = relay.Function([x], relay.add(relay.TupleGetItem(parts, 0),
                                      relay.TupleGetItem(parts, 0)))
    out = cse(f)
    assert out.body.args[0] is out.body.args[1]


def test_survivor_carries_both_spans():
    x = relay.var("x", shape=(2,))
    a = named(relay.nn.relu(x), "relu_a")
    b = named(relay.nn.relu(x), "relu_b")
    out = cse(relay.Function([x], named(relay.add(a, b), "sum")))
    survivor = out.body.args[0]
    assert survivor is out.body.args[1]
    assert names(survivor) == ("relu_a", "relu_b")


def test_chain_of_duplicates_collapses():
    x = relay.var("x", shape=(2,))
    a, b = x, x
    for _ in range(50):
        a, b = relay.exp(a), relay.exp(b)
    out = cse(relay.Function([x], relay.add(a, b)))
    assert out.body.args[0] is out.body.args[1]
    assert len([n for n in all_nodes(out) if isinstance(n, relay.Call)]) == 51


def test_nothing_to_merge_returns_same_module():
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.exp(relay.nn.relu(x)))))
    assert relay.transform.EliminateCommonSubexpr()(mod) is mod


def test_golden():
    x = relay.var("x", shape=(1, 4))
    a = named(relay.nn.relu(x), "act1")
    b = named(relay.nn.relu(x), "act2")
    f = relay.Function([x], named(relay.multiply(a, b), "mul"))
    mod = relay.transform.EliminateCommonSubexpr()(
        relay.transform.InferType()(tvm.IRModule.from_expr(f)))
    check_golden("eliminate_common_subexpr", mod.astext(show_meta_data=False))


def test_pass_info():
    info = relay.transform.EliminateCommonSubexpr().info
    assert (info.name, info.opt_level, info.required) == ("EliminateCommonSubexpr", 3,
                                                          ("InferType",))
