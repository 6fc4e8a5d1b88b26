"""DeadCodeElimination: drop let bindings nobody uses (TVM's
`relay.transform.DeadCodeElimination(inline_once=False, ignore_impurity=False)`).

Liveness is a worklist from the function body: a let's value is only visited
once its variable is found used, so chains of dead bindings go in one pass.
With `inline_once`, a binding used exactly once is substituted at its use.
Bindings whose value is impure (calls a stateful op, directly or through a
global function) are kept unless `ignore_impurity`. Graph-form code has no
bindings, so it comes back as the same object.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from engine.ir.expr import Call, Expr, Function, GlobalVar, Let, Var, children
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.relay.expr_functor import ExprMutator, post_order_visit
from engine.relay.transform._rewrite import copy_type
from engine.relay.transform.pass_infra import function_pass
from engine.transform import PassContext, register_pass


class Purity:
    """Whether expressions call stateful ops (memoized per global function)."""

    def __init__(self, mod: IRModule | None) -> None:
        self.mod = mod
        self.globals: dict[str, bool] = {}

    def is_pure(self, expr: Expr) -> bool:
        impure = False

        def visit(node: Expr) -> None:
            nonlocal impure
            if isinstance(node, Call):
                impure = impure or not self._callee_pure(node.op)

        post_order_visit(expr, visit)
        return not impure

    def _callee_pure(self, callee: Expr) -> bool:
        if isinstance(callee, Op):
            return not callee.get_attr("TOpIsStateful")
        if isinstance(callee, GlobalVar) and self.mod is not None and callee in self.mod:
            name = callee.name_hint
            if name not in self.globals:
                self.globals[name] = True  # assume pure while recursing into itself
                self.globals[name] = self.is_pure(self.mod[name])
            return self.globals[name]
        return True


def live_uses(body: Expr, purity: Purity, ignore_impurity: bool) -> Counter[Var]:
    """How many live expressions use each let-bound variable (a let's value is only
    visited once its variable is found used, so dead chains cost nothing)."""
    uses: Counter[Var] = Counter()
    waiting: dict[Var, Let] = {}
    seen: set[int] = set()
    stack: list[Expr] = []

    def use(expr: Expr) -> None:
        if not isinstance(expr, Var):
            stack.append(expr)
            return
        uses[expr] += 1
        if expr in waiting:
            use(waiting.pop(expr).value)

    use(body)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Let):
            use(node.body)
            if uses[node.var] or (not ignore_impurity and not purity.is_pure(node.value)):
                use(node.value)
            else:
                waiting[node.var] = node
        elif isinstance(node, Function):
            use(node.body)
        else:
            for kid in children(node):
                use(kid)
    return uses


class DeadCodeEliminator(ExprMutator):
    def __init__(self, uses: Counter[Var], inline_once: bool, removable: set[Var]) -> None:
        super().__init__()
        self.uses = uses
        self.inline_once = inline_once
        self.removable = removable
        self.removed = 0

    def visit_let(self, let: Let) -> Expr:
        chain: list[tuple[Let, Expr]] = []
        node: Expr = let
        while isinstance(node, Let) and node not in self.memo_map:
            count = self.uses[node.var]
            if count == 0 and node.var in self.removable:
                self.removed += 1
            elif count == 1 and self.inline_once and node.var in self.removable:
                self.memo_map[node.var] = self.visit(node.value)
                self.removed += 1
            else:
                chain.append((node, self.visit(node.value)))
            node = node.body
        body = self.visit(node)
        for old, value in reversed(chain):
            if value is not old.value or body is not old.body:
                body = copy_type(replace(old, value=value, body=body), old)
            else:
                body = old
        return body


def _removable(body: Expr, purity: Purity, ignore_impurity: bool) -> set[Var]:
    out: set[Var] = set()

    def visit(node: Expr) -> None:
        if isinstance(node, Let) and (ignore_impurity or purity.is_pure(node.value)):
            out.add(node.var)

    post_order_visit(body, visit)
    return out


def dead_code_elimination(func: Function, mod: IRModule | None = None, inline_once: bool = False,
                          ignore_impurity: bool = False) -> Function:
    purity = Purity(mod)
    uses = live_uses(func.body, purity, ignore_impurity)
    removable = _removable(func.body, purity, ignore_impurity)
    if not removable:
        return func
    body = DeadCodeEliminator(uses, inline_once, removable).visit(func.body)
    return func if body is func.body else replace(func, body=body)


@register_pass
def DeadCodeElimination(inline_once: bool = False,  # TVM's name
                        ignore_impurity: bool = False) -> object:
    """Remove unused let bindings (and inline single-use ones with `inline_once`)."""

    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return dead_code_elimination(func, mod, inline_once, ignore_impurity)

    return function_pass(transform, opt_level=1)


__all__ = ["DeadCodeElimination", "Purity", "dead_code_elimination", "live_uses"]
