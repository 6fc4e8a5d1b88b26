"""PassContext: the scope a pipeline runs in (TVM's `tvm.transform.PassContext`).

It carries the optimization level, the required and disabled pass names, the
instruments and the config; `with ctx:` makes it current for this thread.
Contexts live on a thread-local stack, so two threads compiling at once never
see each other's context, instruments or running passes. See
`engine.transform.hooks` for the exact order in which instrument hooks run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from engine.ir.errors import PassError
from engine.ir.module import IRModule
from engine.transform.bisect import RewriteCounter
from engine.transform.config import get_option, legalize_config, list_configs
from engine.transform.frames import PassFrame, RunState
from engine.transform.hooks import PassInstrument
from engine.transform.pass_info import PassInfo, check_opt_level, pass_names

if TYPE_CHECKING:
    from engine.ir.expr import Expr

TraceFunc = Callable[[IRModule, PassInfo, bool], None]
_UNSET: Any = object()


class _ContextStack(threading.local):
    def __init__(self) -> None:
        self.contexts: list[PassContext] = []
        self.default: PassContext | None = None


_STACK = _ContextStack()


def _check_instruments(instruments: Iterable[PassInstrument] | None) -> tuple[PassInstrument, ...]:
    if instruments is None:
        return ()
    if isinstance(instruments, PassInstrument) or not isinstance(instruments, Iterable):
        raise TypeError(f"instruments must be a list of PassInstrument, got {instruments!r}")
    out = tuple(instruments)
    for inst in out:
        if not isinstance(inst, PassInstrument):
            raise TypeError(f"{inst!r} is not a PassInstrument (decorate its class with "
                            f"@pass_instrument or subclass PassInstrument)")
    return out


class PassContext:
    """The context passes run in: opt_level, required/disabled passes, instruments, config.

    `trace`, if given, is called as `trace(mod, info, is_before)` around every
    pass that is not a Sequential (TVM's former trace callback).
    """

    __slots__ = ("opt_level", "required_pass", "disabled_pass", "trace", "_instruments",
                 "_config", "_run", "rewrite_counter")

    def __init__(self, opt_level: int = 2, required_pass: Iterable[str] | None = None,
                 disabled_pass: Iterable[str] | None = None,
                 instruments: Iterable[PassInstrument] | None = None,
                 config: Mapping[str, Any] | None = None,
                 trace: TraceFunc | None = None) -> None:
        self.opt_level = check_opt_level(opt_level)
        self.required_pass = pass_names(required_pass, "required_pass")
        self.disabled_pass = pass_names(disabled_pass, "disabled_pass")
        if trace is not None and not callable(trace):
            raise TypeError(f"trace must be callable(mod, info, is_before), got {trace!r}")
        self.trace = trace
        self._instruments = _check_instruments(instruments)
        self._config = legalize_config(config)
        self._run = RunState()
        self.rewrite_counter = RewriteCounter.from_config(self._config)

    # --- scope ------------------------------------------------------------------------
    def __enter__(self) -> PassContext:
        self._enter_instruments()
        _STACK.contexts.append(self)
        self._run.reset()
        return self

    def __exit__(self, *exc_info: object) -> None:
        stack = _STACK.contexts
        if not stack or stack[-1] is not self:
            raise RuntimeError("PassContext scopes must be exited in the reverse order "
                               "of entering them")
        stack.pop()
        self._exit_instruments()

    @staticmethod
    def current() -> PassContext:
        """The innermost context entered in this thread, else this thread's default one."""
        if _STACK.contexts:
            return _STACK.contexts[-1]
        if _STACK.default is None:
            _STACK.default = PassContext()
        return _STACK.default

    @staticmethod
    def list_configs() -> dict[str, dict[str, Any]]:
        """Every registered config key with its type, default and description."""
        return list_configs()

    # --- instruments --------------------------------------------------------------------
    @property
    def instruments(self) -> tuple[PassInstrument, ...]:
        return self._instruments

    def override_instruments(self, instruments: Iterable[PassInstrument] | None) -> None:
        """Exit the current instruments, then enter `instruments` (None: no instruments)."""
        new = _check_instruments(instruments)
        self._exit_instruments()
        self._instruments = new
        self._enter_instruments()

    def _enter_instruments(self) -> None:
        entered: list[PassInstrument] = []
        try:
            for inst in self._instruments:
                inst.enter_pass_ctx()
                entered.append(inst)
        except BaseException:
            self._instruments = ()
            for inst in entered:
                inst.exit_pass_ctx()
            raise

    def _exit_instruments(self) -> None:
        try:
            for inst in self._instruments:
                inst.exit_pass_ctx()
        except BaseException:
            self._instruments = ()
            raise

    # --- config -------------------------------------------------------------------------
    @property
    def config(self) -> Mapping[str, Any]:
        """The config values set on this context (read-only)."""
        return MappingProxyType(self._config)

    def get_config(self, key: str, default: Any = _UNSET) -> Any:
        """The value of registered key `key`: set here, else `default`, else the
        registered default. An unregistered key is a ConfigError."""
        option = get_option(key)
        if key in self._config:
            return self._config[key]
        return option.default if default is _UNSET else default

    # --- which passes run -----------------------------------------------------------------
    def pass_enabled(self, info: PassInfo) -> bool:
        """Not disabled, and explicitly required or within opt_level (TVM's PassEnabled)."""
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return self.opt_level >= info.opt_level

    # --- running passes (what instruments and passes can ask) ---------------------------
    @property
    def current_frame(self) -> PassFrame | None:
        """The innermost running pass in this thread, or None."""
        frames = self._run.frames
        return frames[-1] if frames else None

    @property
    def pass_stack(self) -> tuple[PassInfo, ...]:
        """Infos of the running passes, outermost first (the current pass last)."""
        return tuple(f.info for f in self._run.frames)

    @property
    def pass_depth(self) -> int:
        """Nesting depth of the current pass (0: top level; -1: no pass running)."""
        return len(self._run.frames) - 1

    @property
    def passes_run(self) -> list[str]:
        """Names of the passes that finished in this scope, in order (the last 256)."""
        return list(self._run.history)

    def add_stat(self, key: str, value: float = 1) -> None:
        """Add `value` to statistic `key` of the running pass (no-op outside a pass)."""
        frame = self.current_frame
        if frame is not None:
            frame.stats[key] = frame.stats.get(key, 0) + value

    def allow_rewrite(self, node: Expr) -> bool:
        """Whether the running pass may make its next rewrite, at `node` (see
        engine.transform.bisect: True unless relay.bisect.* is set)."""
        counter = self.rewrite_counter
        return True if counter is None else counter.allow(self._run.frames, node)

    # --- the protocol Pass.__call__ follows (TVM's Instrument*Pass) ------------------------
    def instrument_should_run(self, mod: IRModule, info: PassInfo) -> bool:
        if not self._instruments or info.name in self.required_pass:
            return True
        should_run = True
        for inst in self._instruments:
            should_run &= bool(self._hook(inst.should_run, mod, info))
        return should_run

    def instrument_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        for inst in self._instruments:
            self._hook(inst.run_before_pass, mod, info)

    def instrument_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        for inst in self._instruments:
            self._hook(inst.run_after_pass, mod, info)

    def instrument_after_pass_failed(self, mod: IRModule, info: PassInfo,
                                     exc: BaseException) -> None:
        for inst in self._instruments:
            self._hook(inst.run_after_pass_failed, mod, info, exc)

    def report_progress(self, done: int, total: int, item: str = "") -> None:
        """Tell every instrument how far the running pass is (`run_progress`); a pass calls
        this between units of its work. No-op outside a pass."""
        frame = self.current_frame
        if frame is None:
            return
        for inst in self._instruments:
            self._hook(inst.run_progress, frame.info, done, total, item)

    def call_trace(self, mod: IRModule, info: PassInfo, is_before: bool) -> None:
        if self.trace is not None:
            self._hook(self.trace, mod, info, is_before)

    def push_frame(self, info: PassInfo) -> PassFrame:
        return self._run.push(info)

    def pop_frame(self, frame: PassFrame) -> None:
        self._run.pop(frame)

    def is_propagating(self, exc: BaseException) -> bool:
        """True if `exc` already carries its origin: a PassError of an inner pass, or an
        error raised by an instrument hook (those propagate unchanged)."""
        return isinstance(exc, PassError) or exc is self._run.hook_error

    def _hook(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException as exc:
            self._run.hook_error = exc
            raise

    def __repr__(self) -> str:
        names = ", ".join(i.name for i in self._instruments)
        return (f"PassContext(opt_level={self.opt_level}, required_pass={list(self.required_pass)}, "
                f"disabled_pass={list(self.disabled_pass)}, instruments=[{names}], "
                f"config={self._config})")
