"""The standard optimization pipeline, in the order `relay.build` runs it.

`standard_pipeline(opt_level=3, target="llvm")` is TVM's `GetPassPrefix`
(src/relay/backend/utils.cc) followed by what `OptimizeImpl`
(build_module.cc) appends: FuseOps and a final InferType. Each pass keeps its
own opt_level, so the enclosing PassContext decides which run (its
`opt_level`, `required_pass`, `disabled_pass`); passes this engine does not
have (ToBasicBlockNormalForm, Legalize, CombineParallel*, CanonicalizeCast,
FlattenAtrousConv, FastMath, PlanDevices) are left out. The QNN dialect's
`relay.qnn.transform.Legalize` runs where TVM runs it, before the standard
passes: it lowers every qnn op to integer Relay (at every opt_level).

`optimize(mod, target, params)` binds `params` into `main` by name and runs
the pipeline under the current PassContext, returning `(mod, params)` as
TVM's `relay.optimize` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

import numpy as np

from engine.ir.expr import Call, Constant, Expr, Function
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.runtime.ndarray import NDArray
from engine.transform import Pass, PassContext, Sequential


def skip_int32_cast(expr: Expr) -> bool:
    """The CSE skip of relay.build: casts to int32 are not merged (index arithmetic)."""
    return (isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "cast"
            and str(expr.attrs.get("dtype", "")) == "int32")


@dataclass(frozen=True)
class Step:
    """One pass of the pipeline: its name in its namespace (`relay.transform`, or
    `relay.qnn.transform` for the QNN dialect's) and constructor arguments."""

    name: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    namespace: str = "engine.relay.transform"

    def make(self) -> Pass | None:
        transform = import_module(self.namespace)
        factory: Callable[..., Pass] | None = getattr(transform, self.name, None)
        return None if factory is None else factory(**self.kwargs)


def pipeline_steps(target: str = "llvm") -> list[Step]:
    """The passes of the standard pipeline, in order (before gating by opt_level)."""
    return [
        Step("RemoveUnusedFunctions"),
        Step("ToBasicBlockNormalForm"),
        Step("Legalize", namespace="engine.relay.qnn.transform"),
        Step("Legalize"),
        Step("SimplifyInference"),
        Step("DynamicToStatic"),
        Step("EliminateCommonSubexpr", {"fskip": skip_int32_cast}),
        Step("SimplifyExpr"),
        Step("CombineParallelConv2D", {"min_num_branches": 3}),
        Step("CombineParallelDense", {"min_num_branches": 3}),
        Step("CombineParallelBatchMatmul", {"min_num_branches": 3}),
        Step("FoldConstant"),
        Step("FoldScaleAxis"),
        Step("SimplifyExpr"),
        Step("CanonicalizeCast"),
        Step("CanonicalizeOps"),
        Step("FlattenAtrousConv"),
        Step("InferType"),
        Step("AlterOpLayout", {"target": target}),
        Step("SimplifyExpr"),
        Step("FastMath"),
        Step("FoldConstant"),
        Step("PlanDevices"),
        Step("FuseOps"),
        Step("InferType"),
    ]


def standard_pipeline(opt_level: int = 3, target: str = "llvm") -> Sequential:
    """relay.build's optimization passes as one Sequential (each pass gated by its level).

    `opt_level` is the Sequential's own level (it matters when it is nested in
    another Sequential); the context's opt_level gates the passes inside.
    """
    passes = [p for p in (step.make() for step in pipeline_steps(target)) if p is not None]
    return Sequential(passes, opt_level=min(opt_level, 0), name="StandardPipeline")


# --- params ----------------------------------------------------------------------------------

def bind_params_by_name(func: Function, params: Mapping[str, Any]) -> Function:
    """`func` with each parameter named in `params` replaced by a constant (TVM's
    `relay.build_module.bind_params_by_name`). The constant keeps the parameter's span."""
    from engine.relay.analysis import bind_vars

    if not params:
        return func
    by_name: dict[str, list[Any]] = {}
    for param in func.params:
        by_name.setdefault(param.name_hint, []).append(param)
    binds: dict[Any, Expr] = {}
    for name, value in params.items():
        found = by_name.get(name, [])
        if len(found) > 1:
            raise ValueError(f"multiple parameters of @main are named {name!r}")
        if found:
            binds[found[0]] = Constant(NDArray(_as_array(value)), span=found[0].span)
    result = bind_vars(func, binds)
    assert isinstance(result, Function)
    return result


def bind_params(mod: IRModule, params: Mapping[str, Any] | None) -> IRModule:
    """`mod` with `params` bound into @main by name (the same module when there are none)."""
    if not params:
        return mod
    mod = mod.shallow_copy()
    mod["main"] = bind_params_by_name(mod["main"], params)
    return mod


def _as_array(value: Any) -> np.ndarray:
    numpy = getattr(value, "numpy", None)
    return np.asarray(numpy() if callable(numpy) else value)


def optimize(mod: IRModule, target: Any = "llvm", params: Mapping[str, Any] | None = None,
             ) -> tuple[IRModule, dict[str, Any]]:
    """Bind `params` into @main and run the standard pipeline under the current context."""
    mod = bind_params(mod, params)
    ctx = PassContext.current()
    mod = standard_pipeline(ctx.opt_level, str(target or "llvm"))(mod)
    return mod, dict(params or {})


__all__ = ["Step", "bind_params", "bind_params_by_name", "optimize", "pipeline_steps", "skip_int32_cast",
           "standard_pipeline"]
