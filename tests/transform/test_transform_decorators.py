"""module_pass / function_pass on functions and classes, with and without arguments."""

from __future__ import annotations

import pytest
from transform_testlib import call, make_module

from engine import relay
from engine.ir import IRModule
from engine.relay.transform import FunctionPass, function_pass
from engine.transform import ModulePass, PassContext, module_pass


def test_module_pass_bare_decorator() -> None:
    @module_pass
    def my_pass(mod: IRModule, ctx: PassContext) -> IRModule:
        return mod

    assert isinstance(my_pass, ModulePass)
    assert (my_pass.info.name, my_pass.info.opt_level) == ("my_pass", 0)


def test_module_pass_decorator_with_arguments_and_plain_call() -> None:
    @module_pass(opt_level=2, name="Renamed", required=["InferType"])
    def my_pass(mod: IRModule, ctx: PassContext) -> IRModule:
        return mod

    assert (my_pass.info.name, my_pass.info.opt_level, my_pass.info.required) == \
        ("Renamed", 2, ("InferType",))

    def fn(mod: IRModule, ctx: PassContext) -> IRModule:
        return mod

    plain = module_pass(fn, opt_level=3)
    assert (plain.info.name, plain.info.opt_level) == ("fn", 3)
    mod = make_module()
    assert plain(mod) is mod


def test_module_pass_rejects_non_callables_and_bad_required() -> None:
    with pytest.raises(TypeError):
        module_pass(opt_level=1)(42)
    with pytest.raises(TypeError):
        module_pass(opt_level=1, required="InferType")


def test_module_pass_on_class() -> None:
    @module_pass(opt_level=1)
    class AddAttr:
        """Sets a module attribute."""

        def __init__(self, value: int) -> None:
            self.value = value

        def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
            return mod.with_attr("marker", self.value)

    p = AddAttr(7)
    assert isinstance(p, ModulePass)
    assert (p.info.name, p.info.opt_level, AddAttr.__name__) == ("AddAttr", 1, "AddAttr")
    assert p.value == 7  # attributes of the wrapped object are reachable
    assert AddAttr.__doc__ == "Sets a module attribute."
    assert p(make_module()).attrs["marker"] == 7

    @module_pass
    class Bare:
        def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
            return mod

    assert Bare().info.name == "Bare"
    with pytest.raises(TypeError, match="transform_module"):
        module_pass(opt_level=0)(type("NoMethod", (), {}))


def _neg_main(func: relay.Function, mod: IRModule, ctx: PassContext) -> relay.Function:
    return relay.Function(func.params, call("neg", func.body), attrs=func.attrs)


def test_function_pass_forms() -> None:
    bare = function_pass(_neg_main)
    assert isinstance(bare, FunctionPass) and bare.info.name == "_neg_main"

    @function_pass(opt_level=2, name="Neg")
    def with_args(func, mod, ctx):
        return _neg_main(func, mod, ctx)

    assert (with_args.info.name, with_args.info.opt_level) == ("Neg", 2)

    @function_pass(opt_level=1)
    class NegClass:
        def transform_function(self, func, mod, ctx):
            return _neg_main(func, mod, ctx)

    out = NegClass()(make_module())
    assert out["main"].body.op.name == "tinfra.neg"
    assert str(NegClass()).startswith("Run Function pass: NegClass")


def test_function_pass_skips_skip_optimization_and_reuses_functions() -> None:
    mod = make_module()
    x = relay.var("z")
    mod["skipped"] = relay.Function([x], call("relu", x)).with_attr("SkipOptimization", 1)
    mod["extern"] = relay.Function([x], call("relu", x)).with_attr("Compiler", "ext")
    mod["prim"] = relay.Function([x], call("relu", x)).with_attr("Primitive", 1)
    visited: list[str] = []

    @function_pass(opt_level=0)
    def touch_prim(func, mod, ctx):
        visited.append(func.body.op.name)
        if func.attrs.get("Primitive"):
            return _neg_main(func, mod, ctx)
        return func

    out = touch_prim(mod)
    assert sorted(visited) == ["tinfra.relu", "tinfra.relu"]  # main and prim only
    assert out["main"] is mod["main"] and out["skipped"] is mod["skipped"]
    assert out["extern"] is mod["extern"] and out["prim"] is not mod["prim"]
    assert mod["prim"].body.op.name == "tinfra.relu"  # input untouched


def test_function_pass_identity_returns_the_same_module() -> None:
    mod = make_module()
    assert function_pass(lambda f, m, c: f, name="Id")(mod) is mod


def test_function_pass_must_return_a_function() -> None:
    from engine.ir import PassError

    with pytest.raises(PassError, match="BadFn") as err:
        function_pass(lambda f, m, c: None, name="BadFn")(make_module())
    assert isinstance(err.value.__cause__, TypeError)
