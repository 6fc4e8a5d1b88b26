"""RemoveUnusedFunctions: drop global functions no entry function reaches (TVM's
`relay.transform.RemoveUnusedFunctions(entry_functions=None)`, entries default
to `["main"]`). References are GlobalVars anywhere in a reachable function."""

from __future__ import annotations

from collections.abc import Iterable

from engine.ir.expr import Expr, GlobalVar
from engine.ir.module import IRModule
from engine.relay.expr_functor import post_order_visit
from engine.transform import PassContext, module_pass, register_pass


def _referenced(expr: Expr) -> set[str]:
    names: set[str] = set()

    def visit(node: Expr) -> None:
        if isinstance(node, GlobalVar):
            names.add(node.name_hint)

    post_order_visit(expr, visit)
    return names


def reachable_functions(mod: IRModule, entries: Iterable[str]) -> set[str]:
    """Names of the functions reachable from `entries` (those present in `mod`)."""
    todo = [name for name in entries if name in mod]
    seen = set(todo)
    while todo:
        for name in _referenced(mod[todo.pop()]):
            if name in mod and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def remove_unused_functions(mod: IRModule, entry_functions: Iterable[str] | None = None
                            ) -> IRModule:
    """Delete unreachable functions from `mod` (in place) and return it."""
    keep = reachable_functions(mod, entry_functions or ["main"])
    for gv in list(mod.get_global_vars()):
        if gv.name_hint not in keep:
            del mod[gv]
    return mod


@register_pass
def RemoveUnusedFunctions(entry_functions: Iterable[str] | None = None
                          ) -> object:
    """Remove functions that no entry function (default: main) calls, even indirectly."""
    entries = list(entry_functions) if entry_functions is not None else None

    def transform(mod: IRModule, ctx: PassContext) -> IRModule:
        return remove_unused_functions(mod, entries)

    return module_pass(transform, opt_level=1)


__all__ = ["RemoveUnusedFunctions", "reachable_functions", "remove_unused_functions"]
