"""The InferType pass (TVM's `relay.transform.InferType`)."""

from __future__ import annotations

from engine.ir.module import IRModule
from engine.relay.type_infer import infer_type
from engine.transform import Pass, PassContext, module_pass, register_pass


def _infer_type(mod: IRModule, ctx: PassContext) -> IRModule:
    result = infer_type(mod)
    assert isinstance(result, IRModule)
    return result


@register_pass
def InferType() -> Pass:  # TVM's name
    """Fill `checked_type` on every expression; never changes the module's structure."""
    return module_pass(_infer_type, opt_level=0)


__all__ = ["InferType"]
