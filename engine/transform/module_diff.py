"""Did a pass change the module? Answered by identity, in O(number of functions).

Nodes are immutable and a pass that leaves a function alone keeps the same
object, so two modules hold the same IR when they map the same GlobalVars to
the same function objects (in the same order) with equal attributes.
"""

from __future__ import annotations

from engine.ir.expr import Function, GlobalVar
from engine.ir.module import IRModule

ModuleState = tuple[tuple[GlobalVar, Function, bool], ...]


def module_unchanged(before: IRModule, after: IRModule) -> bool:
    """True if `after` holds exactly the functions (same objects) and attrs of `before`."""
    if before is after:
        return True
    if len(before) != len(after) or before.attrs != after.attrs:
        return False
    if before.type_definitions != after.type_definitions:
        return False
    return all(gv_a is gv_b and fn_a is fn_b
               for (gv_a, fn_a), (gv_b, fn_b) in zip(before.items(), after.items()))


def module_changed(before: IRModule, after: IRModule) -> bool:
    return not module_unchanged(before, after)


def module_state(mod: IRModule) -> ModuleState:
    """What a module holds now: each function object and whether it is typed yet.

    InferType records types on the nodes it is given, which changes the printed
    text without changing identity; comparing states taken before and after a
    pass catches that too. The state holds the functions, so their ids stay valid.
    """
    return tuple((gv, func, func.has_type) for gv, func in mod.items())


def same_state(a: ModuleState, b: ModuleState) -> bool:
    return len(a) == len(b) and all(
        ga is gb and fa is fb and ta == tb for (ga, fa, ta), (gb, fb, tb) in zip(a, b))
