"""LambdaLift: nested functions and closures become global functions."""

from __future__ import annotations

import numpy as np
from passes_helpers import named, names

import engine as tvm
from engine import relay
from engine.relay.analysis import free_vars
from engine.relay.interpreter import evaluate


def lift(mod):
    return relay.transform.LambdaLift()(mod)


def test_function_without_free_vars_becomes_global():
    y = relay.var("y", shape=(2,))
    inner = named(relay.Function([y], relay.exp(y)), "inner")
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Call(inner, (x,))))
    out = lift(mod)
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == ["lifted_name0", "main"]
    call = out["main"].body
    assert isinstance(call.op, relay.GlobalVar) and call.op.name_hint == "lifted_name0"
    assert names(call.op) == ("inner",)
    assert out["lifted_name0"].body.op.name == "exp"


def test_closure_captures_free_vars_and_is_marked():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    inner = relay.Function([y], relay.add(x, y))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Call(inner, (x,))))
    out = lift(mod)
    lifted = out["lifted_name0"]
    assert len(lifted.params) == 1 and lifted.params[0] is not x
    assert int(lifted.body.attrs["Closure"]) == 1
    assert free_vars(lifted) == []
    make_closure = out["main"].body.op
    assert isinstance(make_closure, relay.Call) and make_closure.args == (x,)
    data = np.arange(2, dtype="float32")
    np.testing.assert_array_equal(evaluate(out, {"x": data}), data * 2)


def test_nested_functions_lift_innermost_first():
    a = relay.var("a", shape=(2,))
    b = relay.var("b", shape=(2,))
    innermost = relay.Function([b], relay.negative(b))
    middle = relay.Function([a], relay.Call(innermost, (a,)))
    x = relay.var("x", shape=(2,))
    out = lift(tvm.IRModule.from_expr(relay.Function([x], relay.Call(middle, (x,)))))
    assert len(out.get_global_vars()) == 3
    for gv in out.get_global_vars():
        assert not [n for n in [out[gv].body] if isinstance(n, relay.Function)]


def test_primitive_function_stays():
    p = relay.var("p", shape=(2,))
    prim = relay.Function([p], relay.exp(p)).with_attr("Primitive", 1)
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Call(prim, (x,))))
    assert lift(mod) is mod


def test_pass_info():
    info = relay.transform.LambdaLift().info
    assert (info.name, info.opt_level) == ("LambdaLift", 0)
