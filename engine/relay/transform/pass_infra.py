"""Function-level passes (TVM's `relay.transform.FunctionPass`, `function_pass`).

A FunctionPass runs `pass_func(func, mod, ctx) -> Function` on every
optimizable function of the module: Relay functions without the attribute
`SkipOptimization` (non-zero), `Extern` (non-zero) or `Compiler` (TVM's
`AsOptimizableFunctionNode`; `Primitive` functions are not skipped). `mod` is a
shallow copy of the input module; the result reuses every function object the
pass returned unchanged, and is the input module itself when nothing changed.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.ir.expr import Function, GlobalVar
from engine.ir.module import IRModule
from engine.transform import (
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PrintIR,
    Sequential,
    make_pass_decorator,
    module_pass,
    module_unchanged,
)

FunctionPassFunc = Callable[[Function, IRModule, PassContext], Function]


def is_optimizable(func: object) -> bool:
    """Whether a FunctionPass transforms this module entry."""
    if not isinstance(func, Function):
        return False
    attrs = func.attrs
    return ("Compiler" not in attrs and not attrs.get("Extern")
            and not attrs.get("SkipOptimization"))


class FunctionPass(Pass):
    """A pass given by `pass_func(func, mod, ctx) -> Function`, applied per function."""

    kind = "Function"

    def __init__(self, pass_func: FunctionPassFunc, pass_info: PassInfo) -> None:
        if not callable(pass_func):
            raise TypeError(f"pass_func must be callable(func, mod, ctx), got {pass_func!r}")
        super().__init__(pass_info)
        self.pass_func = pass_func

    def apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        scratch = mod.shallow_copy()
        updates: dict[GlobalVar, Function] = {}
        for gv, func in mod.items():
            if not is_optimizable(func):
                continue
            new = self.pass_func(func, scratch, ctx)
            if not isinstance(new, Function):
                raise TypeError(f"function pass {self.info.name!r} returned "
                                f"{type(new).__name__} for @{gv.name_hint}, not a Function")
            if new is not func:
                updates[gv] = new
        if not updates and module_unchanged(mod, scratch):
            return mod
        for gv, new in updates.items():
            scratch[gv] = new
        return scratch


function_pass = make_pass_decorator(FunctionPass, "transform_function", "function_pass")

__all__ = [
    "FunctionPass", "ModulePass", "Pass", "PassContext", "PassInfo", "PrintIR", "Sequential",
    "function_pass", "is_optimizable", "module_pass",
]
