"""PassInstrument and the `pass_instrument` decorator: the hooks a PassContext calls.

They live with the pass infrastructure that calls them; `engine.instrument`
(TVM's `tvm.instrument`) re-exports them next to the built-in instruments.

The PassContext calls an instrument's hooks in this order (TVM's semantics):

- `enter_pass_ctx()` for each instrument, in order, when the context is
  entered (`with ctx:` or `override_instruments`). If one raises, the
  instruments entered before it get `exit_pass_ctx()`, the later ones are never
  entered, the context's instruments are cleared and the error propagates.
- per pass: `should_run(mod, info)` of every instrument (not asked when the
  pass is in the context's `required_pass`); if all say yes,
  `run_before_pass(mod, info)` of each, the pass, then `run_after_pass(new_mod,
  info)` of each. If the pass itself raises, `run_after_pass_failed(mod, info,
  exc)` (ours, as MLIR's `runAfterPassFailed`) runs instead, with the module the
  pass was given, so the IR of a failing pass can be kept.
- `exit_pass_ctx()` for each instrument, in order, when the scope exits (also
  on error). If one raises, the later ones are not called, the instruments are
  cleared and the error propagates.

An exception in any hook propagates unchanged (never wrapped as PassError).
Inside the pass hooks, `PassContext.current().pass_depth` is the nesting depth
of the pass inside Sequentials and `.current_frame` its index and parent.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from engine.ir.module import IRModule
    from engine.transform.pass_info import PassInfo

T = TypeVar("T", bound=type)


class _ClassName:
    """`instrument.name`: the class name, unless the instance sets its own `name`."""

    def __get__(self, obj: object, owner: type | None = None) -> str:
        return (owner or type(obj)).__name__


class PassInstrument:
    """Base of every instrument: each hook is a no-op; override any subset."""

    name: Any = _ClassName()

    def enter_pass_ctx(self) -> None:
        """Called when a PassContext holding this instrument is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when that PassContext is exited (or its instruments overridden)."""

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        """Return False to skip the pass (every instrument is asked)."""
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called before the pass runs, with the module it is given."""

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called after the pass ran, with the module it returned."""

    def run_after_pass_failed(self, mod: IRModule, info: PassInfo,
                              exc: BaseException) -> None:
        """Called instead of run_after_pass when the pass raised `exc`."""

    def run_progress(self, info: PassInfo, done: int, total: int, item: str) -> None:
        """Called by a long pass as it goes (LowerTE: `done` of its `total` fused calls
        lowered, `item` the kernel of the last one; 0 before the first). An exception
        raised here stops the pass there, as one raised by its body would."""

    def __repr__(self) -> str:
        return f"<{self.name} instrument>"


def pass_instrument(pi_cls: T | None = None) -> Any:
    """Make a plain class (with any subset of the hooks) a PassInstrument.

    Usable as `@pass_instrument` or `@pass_instrument()`; the decorated class
    keeps its name, docstring and constructor.
    """
    def wrap(cls: T) -> T:
        if not inspect.isclass(cls):
            raise TypeError(f"pass_instrument decorates a class, got {cls!r}")
        if issubclass(cls, PassInstrument):
            return cls
        wrapped = type(cls.__name__, (cls, PassInstrument), {
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        })
        return wrapped  # type: ignore[return-value]

    if pi_cls is not None:
        return wrap(pi_cls)
    return wrap
