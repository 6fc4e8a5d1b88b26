"""RemoveUnusedFunctions: keep what the entry functions reach."""

from __future__ import annotations

import engine as tvm
from engine import relay


def _module():
    mod = tvm.IRModule()
    y = relay.var("y", shape=(2,))
    mod["leaf"] = relay.Function([y], relay.exp(y))
    z = relay.var("z", shape=(2,))
    mod["helper"] = relay.Function([z], relay.Call(mod.get_global_var("leaf"), (z,)))
    w = relay.var("w", shape=(2,))
    mod["unused"] = relay.Function([w], relay.negative(w))
    x = relay.var("x", shape=(2,))
    mod["main"] = relay.Function([x], relay.Call(mod.get_global_var("helper"), (x,)))
    return mod


def _names(mod):
    return sorted(gv.name_hint for gv in mod.get_global_vars())


def test_unreachable_function_is_removed_transitively_reachable_kept():
    mod = _module()
    out = relay.transform.RemoveUnusedFunctions()(mod)
    assert _names(out) == ["helper", "leaf", "main"]
    assert _names(mod) == ["helper", "leaf", "main", "unused"], "input module untouched"


def test_custom_entry_functions():
    out = relay.transform.RemoveUnusedFunctions(["unused"])(_module())
    assert _names(out) == ["unused"]


def test_nothing_unused_returns_same_module():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(x)))
    assert relay.transform.RemoveUnusedFunctions()(mod) is mod


def test_pass_info():
    info = relay.transform.RemoveUnusedFunctions().info
    assert (info.name, info.opt_level) == ("RemoveUnusedFunctions", 1)
