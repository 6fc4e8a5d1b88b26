"""LambdaLift: move nested functions to the module (TVM's `relay.transform.LambdaLift`).

A nested function without free variables becomes a global `@lifted_nameN` and its
uses that GlobalVar. A closure (free variables) becomes a global taking the
captured variables and returning the inner function marked `Closure=1`; its use
becomes `@lifted_nameN(captured...)`. The captured variables are rebound to fresh
parameters inside the lifted function, so each variable stays bound once. A
recursive `let %f = fn ...` refers to its global inside the lifted body.
Primitive (fused) functions are left where they are. The new GlobalVar / call
carry the lifted function's span.
"""

from __future__ import annotations

from dataclasses import replace

from engine.ir.expr import Call, Expr, Function, GlobalVar, Let, Var
from engine.ir.module import IRModule
from engine.relay.analysis import bind_vars, free_vars
from engine.relay.expr_functor import ExprMutator, post_order_visit
from engine.relay.transform._rewrite import type_of
from engine.transform import Pass, PassContext, module_pass, register_pass

LIFTED_PREFIX = "lifted_name"


def recursive_bindings(expr: Expr) -> dict[Function, Var]:
    """Functions bound by a let that refer to the let's own variable."""
    out: dict[Function, Var] = {}

    def visit(node: Expr) -> None:
        if isinstance(node, Let) and isinstance(node.value, Function) \
                and node.var in free_vars(node.value):
            out[node.value] = node.var

    post_order_visit(expr, visit)
    return out


class LambdaLifter(ExprMutator):
    def __init__(self, mod: IRModule, recursive: dict[Function, Var]) -> None:
        super().__init__()
        self.mod = mod
        self.recursive = recursive
        self.lifted: dict[GlobalVar, Function] = {}

    def fresh_name(self) -> str:
        n = len(self.lifted)
        while f"{LIFTED_PREFIX}{n}" in self.mod:
            n += 1
        return f"{LIFTED_PREFIX}{n}"

    def visit_function(self, fn: Function) -> Expr:
        if fn.is_primitive():
            return fn
        gv = GlobalVar(self.fresh_name(), span=fn.span)
        self.lifted[gv] = fn  # reserve the name while the body is lifted
        rec = self.recursive.get(fn)
        captured = [v for v in free_vars(fn) if v is not rec]
        use: Expr = Call(gv, tuple(captured), span=fn.span) if captured else gv
        saved = self.memo_map.get(rec) if rec is not None else None
        if rec is not None:
            self.memo_map[rec] = use
        lifted_inner = super().visit_function(fn)
        if rec is not None:
            self.memo_map[rec] = saved if saved is not None else rec
        assert isinstance(lifted_inner, Function)
        self.lifted[gv] = _closure(lifted_inner, captured) if captured else lifted_inner
        return use


def _closure(inner: Function, captured: list[Var]) -> Function:
    """`fn (captured') { inner with Closure=1 }`, captured vars rebound to fresh params."""
    params = [Var(v.name_hint, v.type_annotation or type_of(v), span=v.span) for v in captured]
    body = bind_vars(inner.with_attr("Closure", 1), dict(zip(captured, params)))
    return Function(tuple(params), body, span=inner.span)


def lambda_lift(mod: IRModule) -> IRModule:
    """Lift the nested functions of every function of `mod` (changes `mod` in place)."""
    for gv, func in list(mod.items()):
        if not isinstance(func, Function) or func.is_primitive():
            continue
        lifter = LambdaLifter(mod, recursive_bindings(func.body))
        body = lifter.visit(func.body)
        if body is func.body:
            continue
        mod[gv] = replace(func, body=body)
        for name, lifted in lifter.lifted.items():
            mod[name] = lifted
    return mod


def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
    return lambda_lift(mod)


@register_pass
def LambdaLift() -> Pass:  # TVM's name
    """Lift nested functions (and closures) to global functions."""
    return module_pass(_transform, opt_level=0)


__all__ = ["LIFTED_PREFIX", "LambdaLift", "LambdaLifter", "lambda_lift"]
