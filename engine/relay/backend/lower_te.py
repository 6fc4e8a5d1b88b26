"""LowerTE (TVM's `relay.backend.te_compiler.LowerTE`): fused functions become kernels.

Every call of a Primitive function in @main is lowered through its ops'
strategies to one TE schedule (with its record) and replaced by a call of a
global kernel, `@fused_nn_conv2d_add_nn_relu(%x, ...)`, whose definition (the
fused function, `global_symbol` set) stays in the module so the printed IR
shows what each kernel computes. The lowered kernels ride on the module as
its `lowered_funcs` attribute (name -> LoweredFunc), which graph codegen reads:
what the timeline shows after LowerTE is exactly what the build emits.

Structurally equal functions (names and spans aside, same parameter types) share one
kernel, lowered once (TECompiler's cache): every call of them calls the same global,
and the kernel's `calls` keeps the span of each call site, so provenance survives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.ir.expr import Call, Expr, Function, GlobalVar
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.traversal import post_order_visit
from engine.ir.type import AnyDim, TensorType, TupleType, Type
from engine.ir.vars import free_vars
from engine.relay.backend.te_compiler import LoweredFunc, LowerError, TECompiler
from engine.relay.expr_functor import ExprMutator
from engine.relay.transform.fuse_ops import fused_function_name
from engine.relay.type_infer import infer_type
from engine.transform import Pass, PassContext, module_pass

Progress = Callable[[int, str], None]
"""Told after each fused call is lowered: calls done so far, the kernel's name."""

LOWERED_FUNCS = "lowered_funcs"
"""The module attribute holding the kernels of a lowered module (name -> LoweredFunc)."""


def lowered_funcs(mod: IRModule) -> dict[str, LoweredFunc]:
    """The kernels LowerTE attached to `mod` (empty for a module not lowered)."""
    return dict(mod.attrs.get(LOWERED_FUNCS) or {})


def _op_calls(func: Function) -> list[Call]:
    found: list[Call] = []
    post_order_visit(func.body, lambda e: found.append(e) if isinstance(e, Call) and isinstance(
        e.op, Op) else None)
    return found


def _dyn_calls(func: Function) -> list[Call]:
    return [c for c in _op_calls(func) if isinstance(c.op, Op) and c.op.name.startswith("dyn.")]


def check_no_dyn(call: Call, func: Function) -> None:
    """A dyn op left for the build reads a value only known at run time: name the inputs
    that value comes from (the user can bind them), never the fused function's params."""
    dyn = _dyn_calls(func)
    if not dyn:
        return
    op = dyn[0].op
    assert isinstance(op, Op)
    outer = dict(zip(func.params, call.args))
    for index, operand in enumerate(dyn[0].args[1:], start=1):
        sources = [v.name_hint for p in free_vars(operand) if p in outer
                   for v in free_vars(outer[p])]
        if sources:
            what = op.arguments[index] if index < len(op.arguments) else f"operand {index}"
            inputs = ", ".join(f"%{n}" for n in dict.fromkeys(sources))
            raise LowerError(f"{op.name}: its {what!r} is computed at run time from input "
                             f"{inputs}; the build needs static shapes: bind {inputs} to a "
                             "constant (params) so DynamicToStatic makes it a static op")
    raise LowerError(f"{op.name} is left for the build, which needs static shapes (run "
                     "DynamicToStatic once its operands are constants)")


def check_static_inputs(mod: IRModule) -> None:
    """The build needs every input of @main at a static shape: name the ones that are not
    (a model's symbolic batch dimension, say), and how to fix them."""
    dynamic = [(p.name_hint, ty) for p in mod["main"].params
               if isinstance(ty := p.type_annotation, TensorType)
               and any(isinstance(d, AnyDim) for d in ty.shape)]
    if dynamic:
        listed = ", ".join(f"%{name}: {ty}" for name, ty in dynamic)
        names = ", ".join(repr(name) for name, _ in dynamic)
        raise LowerError(f"the build needs static input shapes; {listed} "
                         f"{'has' if len(dynamic) == 1 else 'have'} a dimension known only at "
                         f"run time: pin {names} (the frontend's shape={{name: [dims]}})")


def _is_static(ty: Type) -> bool:
    if isinstance(ty, TupleType):
        return all(_is_static(f) for f in ty.fields)
    return not isinstance(ty, TensorType) or ty.is_static


def check_data_dependent(func: Function) -> None:
    """An op whose output shape has `?` dims though its operands' shapes are static sizes
    its output by the values it reads (argwhere, unique, NMS...): name it and say why."""
    for call in _op_calls(func):
        if _is_static(call.checked_type) or not all(_is_static(a.checked_type)
                                                    for a in call.args):
            continue
        assert isinstance(call.op, Op)
        raise LowerError(f"{call.op.name}: its output shape {call.checked_type} depends on "
                         "the values of its inputs (a data-dependent shape); the graph build "
                         "needs static shapes: evaluate the module with the interpreter, or "
                         "bind the inputs to constants (params) so FoldConstant computes it")


def check_static(main: Function) -> int:
    """Refuse, before any kernel is lowered, the first fused call (in dataflow order) whose
    shapes are only known at run time, naming the op and why; the number of fused calls."""
    calls: list[Call] = []
    post_order_visit(main.body, lambda e: calls.append(e) if isinstance(e, Call) and isinstance(
        e.op, Function) and e.op.is_primitive() else None)
    for call in calls:
        assert isinstance(call.op, Function)
        check_no_dyn(call, call.op)
        check_data_dependent(call.op)
    return len(calls)


class _Lowerer(ExprMutator):
    """Replaces each call of a Primitive function by a call of its global kernel; equal
    functions share one kernel (TECompiler), each call recorded as one of its calls."""

    def __init__(self, target: str, taken: set[str], progress: Progress) -> None:
        super().__init__()
        self.compiler = TECompiler(target)
        self.progress = progress
        self.done = 0
        self.taken = taken
        self.kernels: dict[str, LoweredFunc] = {}
        self.globals: dict[GlobalVar, Function] = {}
        self._by_name: dict[str, GlobalVar] = {}

    def visit_call(self, call: Call) -> Expr:
        func = call.op
        if not (isinstance(func, Function) and func.is_primitive()):
            return super().visit_call(call)
        args = tuple(self.visit(arg) for arg in call.args)
        return replace(call, op=self._kernel(func, call), args=args)

    def visit_function(self, func: Function) -> Expr:
        return func if func.is_primitive() else super().visit_function(func)

    def _kernel(self, func: Function, call: Call) -> GlobalVar:
        lowered, new = self.compiler.lower(func, lambda: self._unique(fused_function_name(func)))
        lowered.calls.append(call.span)
        self.done += 1
        self.progress(self.done, lowered.name)
        if not new:
            return self._by_name[lowered.name]
        self.kernels[lowered.name] = lowered
        gv = GlobalVar(lowered.name, span=func.span)
        self.globals[gv] = func.with_attr("global_symbol", lowered.name)
        self._by_name[lowered.name] = gv
        return gv

    def _unique(self, base: str) -> str:
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


def lower_te(mod: IRModule, target: str, ctx: PassContext | None = None) -> IRModule:
    """@main with every fused call lowered (see module docstring); typed. Under a running
    pass of `ctx`, its instruments hear of each call lowered (`run_progress`: calls done
    of all, the kernel), and may stop the lowering there by raising."""
    check_static_inputs(mod)
    total = check_static(mod["main"])
    context = ctx or PassContext.current()

    def progress(done: int, kernel: str) -> None:
        context.report_progress(done, total, kernel)

    progress(0, "")
    lowerer = _Lowerer(target, {gv.name_hint for gv in mod.get_global_vars()}, progress)
    main = lowerer.visit(mod["main"])
    if not lowerer.kernels:
        return mod.with_attr(LOWERED_FUNCS, {}) if LOWERED_FUNCS not in mod.attrs else mod
    new = mod.shallow_copy()
    new["main"] = main
    for gv, func in lowerer.globals.items():
        new[gv] = func
    new = new.with_attr(LOWERED_FUNCS, {**lowered_funcs(mod), **lowerer.kernels})
    result = infer_type(new)
    assert isinstance(result, IRModule)
    return result


def LowerTE(target: Any = "llvm") -> Pass:
    """The module pass of relay.build that lowers each fused function to a TE kernel."""
    kind = str(target)

    def transform(mod: IRModule, ctx: PassContext) -> IRModule:
        return lower_te(mod, kind, ctx)

    return module_pass(transform, opt_level=0, name="LowerTE")


__all__ = ["LOWERED_FUNCS", "LowerTE", "check_static_inputs", "lower_te", "lowered_funcs"]
