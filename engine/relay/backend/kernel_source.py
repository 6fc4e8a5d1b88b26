"""A kernel as text, and back: what makes a kernel's schedule steps computable later.

A build keeps each kernel's schedule record, but replaying every snapshot to a loop
nest and the TEDD views costs far more than the build itself (a fused chain of 256
stages: seconds). A tool shows them when a user opens a kernel: `kernel_source` prints
the kernel's primitive function (constants in its metadata section) and `relower`
parses that text, types it and lowers it again to the same schedule, whose `steps()`
are then made (lowering is deterministic: same function, same record).

    text = kernel_source(lowered)            # at build time, cheap
    relower(text, "llvm", lowered.name).steps()   # when the kernel is opened
"""

from __future__ import annotations

from engine.ir.expr import Function
from engine.ir.module import IRModule
from engine.relay.backend.te_compiler import LoweredFunc, LowerError, lower_primitive
from engine.relay.parser import parse
from engine.relay.type_infer import infer_type


def kernel_source(lowered: LoweredFunc) -> str:
    """The kernel's primitive function as a Relay module text (@main), with metadata."""
    return IRModule.from_expr(lowered.func).astext(show_meta_data=True)


def relower(text: str, target: str, name: str) -> LoweredFunc:
    """The kernel `kernel_source` printed, lowered again for `target` as `name`."""
    typed = infer_type(parse(text, source_name=name))
    assert isinstance(typed, IRModule)
    func = typed["main"]
    if not (isinstance(func, Function) and func.is_primitive()):
        raise LowerError(f"{name}: the kernel source's @main is not a primitive function")
    return lower_primitive(func, target, name)


__all__ = ["kernel_source", "relower"]
