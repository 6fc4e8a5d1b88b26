"""The pass infrastructure (TVM's `tvm.transform`).

    import engine as tvm
    seq = tvm.transform.Sequential([relay.transform.InferType(), ...])
    with tvm.transform.PassContext(opt_level=3, instruments=[...]):
        mod = seq(mod)

Passes: `Pass`, `ModulePass`, `Sequential`, `module_pass`, `PrintIR`; the
context: `PassContext` (thread-local stack, instruments, typed config keys);
the registry: `register_pass`, `get_pass`, `list_passes`; plans (what a
pipeline will run under a context): `plan`, `children_of`, `count_leaves`; config keys:
`register_pass_config`, `PassContext.list_configs()`; bisection within a pass:
`allow_rewrite` (every rewriting pass asks it once per rewrite; relay.bisect.*).
"""

from engine.transform.bisect import BisectResult, Rewrite, RewriteCounter, bisect_rewrites
from engine.transform.config import ConfigOption, register_pass_config
from engine.transform.context import PassContext, TraceFunc
from engine.transform.decorators import make_pass_decorator, module_pass, wrap_pass_class
from engine.transform.frames import PassFrame
from engine.transform.module_diff import (
    ModuleState,
    module_changed,
    module_state,
    module_unchanged,
    same_state,
)
from engine.transform.pass_info import PassInfo
from engine.transform.passes import ModuleMutatedError, ModulePass, Pass
from engine.transform.plan import PlannedPass, children_of, count_leaves, plan
from engine.transform.print_ir import PrintIR
from engine.transform.registry import PassNotFoundError, get_pass, list_passes, register_pass
from engine.transform.rewrites import allow_rewrite, run_limited
from engine.transform.sequential import Sequential

__all__ = [
    "ConfigOption", "ModuleMutatedError", "BisectResult", "Rewrite", "RewriteCounter",
    "allow_rewrite", "bisect_rewrites", "run_limited", "ModulePass", "ModuleState", "Pass", "PassContext",
    "PassFrame", "PassInfo", "PassNotFoundError", "PlannedPass", "PrintIR", "Sequential",
    "TraceFunc", "children_of", "count_leaves", "get_pass", "list_passes", "make_pass_decorator",
    "module_changed", "module_pass", "module_state", "module_unchanged", "plan", "register_pass",
    "register_pass_config", "same_state", "wrap_pass_class",
]
