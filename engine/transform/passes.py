"""Pass and ModulePass (TVM's `tvm.transform.Pass`, `ModulePass`).

`pass_(mod)` runs the pass under `PassContext.current()`:

1. every instrument's `should_run` (skipped for the context's required
   passes); if any says no, `mod` itself is returned;
2. a frame is pushed (so hooks see the nesting), `run_before_pass` hooks,
   `trace(mod, info, True)`;
3. the pass body; a module pass gets a shallow copy of `mod`, so the module it
   was given is never changed; if the body left every function alone, `mod`
   itself is returned, so "changed" is `new is not mod`;
4. `trace(new, info, False)`, `run_after_pass` hooks, frame popped.

If the body raises, `run_after_pass_failed(mod, info, exc)` hooks run and the
error is re-raised as `PassError` (the pass name and the passes that finished
before it; the original chained as `__cause__`). A PassError of an inner pass
and errors of instrument hooks pass through unchanged; so do exceptions that
are not `Exception`s (KeyboardInterrupt, SystemExit...).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar

from engine.ir.errors import EngineError, PassError
from engine.ir.module import IRModule
from engine.transform.context import PassContext
from engine.transform.frames import PassFrame
from engine.transform.module_diff import module_unchanged
from engine.transform.pass_info import PassInfo

ModulePassFunc = Callable[[IRModule, PassContext], IRModule]


class ModuleMutatedError(EngineError):
    """A pass changed the module it was given (checked with `testing.immutable_module`)."""


class Pass:
    """A transformation IRModule -> IRModule with a PassInfo. Subclasses define `apply`."""

    traced: ClassVar[bool] = True
    """Whether the context's `trace` callback sees this pass (not for Sequentials)."""

    def __init__(self, info: PassInfo) -> None:
        if not isinstance(info, PassInfo):
            raise TypeError(f"a pass needs a PassInfo, got {info!r}")
        self._info = info

    @property
    def info(self) -> PassInfo:
        return self._info

    def renamed(self, name: str) -> Pass:
        """A copy of this pass under another name (its info otherwise the same)."""
        new = copy.copy(self)
        new._info = PassInfo(self._info.opt_level, name, self._info.required,
                             self._info.traceable)
        return new

    def apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """The transformation itself, without instruments (subclasses override)."""
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise TypeError(f"pass {self._info.name!r} expects an IRModule, got "
                            f"{type(mod).__name__}")
        ctx = PassContext.current()
        info = self._info
        if not ctx.instrument_should_run(mod, info):
            return mod
        frame = ctx.push_frame(info)
        try:
            ctx.instrument_before_pass(mod, info)
            result = self._run_body(mod, ctx, frame)
            ctx.instrument_after_pass(result, info)
        finally:
            ctx.pop_frame(frame)
        return result

    def _run_body(self, mod: IRModule, ctx: PassContext, frame: PassFrame) -> IRModule:
        info = self._info
        if self.traced:
            ctx.call_trace(mod, info, True)
        guard = _ImmutableGuard(mod) if ctx.get_config("testing.immutable_module") else None
        try:
            result = self.apply(mod, ctx)
            _check_result(result, info)
            if guard is not None:
                guard.check(info)
        except BaseException as exc:
            ctx.instrument_after_pass_failed(mod, info, exc)
            if ctx.is_propagating(exc) or not isinstance(exc, Exception):
                raise
            raise PassError(info.name, ctx.passes_run, exc) from exc
        frame.finished = True
        if self.traced:
            ctx.call_trace(result, info, False)
        return result

    def __str__(self) -> str:
        return (f"Run {self.kind} pass: {self._info.name} at the optimization level "
                f"{self._info.opt_level}")

    __repr__ = __str__

    kind: ClassVar[str] = "Module"


def _check_result(result: Any, info: PassInfo) -> None:
    if not isinstance(result, IRModule):
        raise TypeError(f"pass {info.name!r} returned {type(result).__name__}, "
                        f"not an IRModule")


class _ImmutableGuard:
    """Remembers what a module held, to prove a pass did not change it in place."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.snapshot = mod.shallow_copy()

    def check(self, info: PassInfo) -> None:
        if not module_unchanged(self.snapshot, self.mod):
            raise ModuleMutatedError(f"pass {info.name!r} mutated the module it was given "
                                     f"(testing.immutable_module is set)")


class ModulePass(Pass):
    """A pass given by a function `pass_func(mod, ctx) -> IRModule`.

    The function gets a shallow copy of the module and may update it and return
    it; when it returns that copy unchanged, the pass returns the original.
    """

    def __init__(self, pass_func: ModulePassFunc, pass_info: PassInfo) -> None:
        if not callable(pass_func):
            raise TypeError(f"pass_func must be callable(mod, ctx), got {pass_func!r}")
        super().__init__(pass_info)
        self.pass_func = pass_func

    def apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        scratch = mod.shallow_copy()
        result = self.pass_func(scratch, ctx)
        if result is scratch and module_unchanged(mod, scratch):
            return mod
        return result
