"""ToGraphNormalForm: inline let bindings back into a dataflow graph (TVM's
`relay.transform.ToGraphNormalForm`), the inverse of ToANormalForm.

Every `let %v = value; body` becomes `body` with `%v` replaced by the (converted)
value, so a value used twice is one shared node. A recursive binding (a function
that refers to its own variable) stays as `let %f = fn ... ; %f`. Let chains are
walked in a loop: 100,000 bindings convert without deep recursion. The values keep
their own spans; a let's span joins its value's when the value has none.
"""

from __future__ import annotations

from dataclasses import replace

from engine.ir.expr import Expr, Function, Let, Var
from engine.ir.module import IRModule
from engine.relay.analysis import free_vars
from engine.relay.expr_functor import ExprMutator
from engine.relay.transform._rewrite import with_span
from engine.transform import Pass, PassContext, module_pass, register_pass


class GraphNormalizer(ExprMutator):
    """Substitutes let-bound variables by their values."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[Var, Expr] = {}

    def visit_var(self, var: Var) -> Expr:
        return self.values.get(var, var)

    def visit_let(self, let: Let) -> Expr:
        node: Expr = let
        while isinstance(node, Let) and node not in self.memo_map:
            value = self.visit(node.value)
            if not value.span and node.span:
                value = with_span(value, node.span)
            if isinstance(node.value, Function) and node.var in free_vars(node.value):
                value = Let(node.var, value, node.var, span=node.span)  # recursive binding
            self.values[node.var] = value
            self.memo_map.pop(node.var, None)  # a recursive value saw the variable itself
            node = node.body
        return self.visit(node)

    def visit_function(self, fn: Function) -> Expr:
        if fn.is_primitive():
            return fn
        return super().visit_function(fn)


def to_graph_normal_form(expr: Expr) -> Expr:
    if isinstance(expr, Function):
        if expr.is_primitive():
            return expr
        body = GraphNormalizer().visit(expr.body)
        return expr if body is expr.body else replace(expr, body=body)
    return GraphNormalizer().visit(expr)


def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
    for gv, func in mod.items():
        if isinstance(func, Function):
            new = to_graph_normal_form(func)
            if new is not func:
                mod[gv] = new  # type: ignore[assignment]
    return mod


@register_pass
def ToGraphNormalForm() -> Pass:  # TVM's name
    """Remove let bindings: every variable is replaced by its value."""
    return module_pass(_transform, opt_level=1)


__all__ = ["GraphNormalizer", "ToGraphNormalForm", "to_graph_normal_form"]
