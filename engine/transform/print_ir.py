"""PrintIR: a pass that prints the module to stderr and returns it unchanged."""

from __future__ import annotations

import sys

from engine.ir.module import IRModule
from engine.transform.context import PassContext
from engine.transform.pass_info import PassInfo
from engine.transform.passes import ModulePass


def PrintIR(header: str = "", show_meta_data: bool = False) -> ModulePass:
    """A pass (opt_level 0) writing `PrintIR(header):` and the module text to stderr."""

    def print_ir(mod: IRModule, ctx: PassContext) -> IRModule:
        text = mod.astext(show_meta_data=show_meta_data)
        sys.stderr.write(f"PrintIR({header}):\n{text}\n")
        sys.stderr.flush()
        return mod

    return ModulePass(print_ir, PassInfo(0, "PrintIR"))
