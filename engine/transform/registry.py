"""The pass registry: passes by name (`get_pass("FoldConstant")`).

A registered entry is a factory returning a fresh Pass. The registry holds
static declarations (like the op registry), never session state. It is filled
by those who define passes: each pass module decorates its factory with
`@register_pass`, so importing `engine.relay.transform` (which `import engine`
does) registers Relay's passes. The registry itself imports no dialect.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from engine.ir.errors import EngineError
from engine.transform.passes import Pass

PassFactory = Callable[..., Pass]
"""Makes a fresh Pass; the registry calls it without arguments."""

_FACTORIES: dict[str, PassFactory] = {}
_LOCK = threading.Lock()
_PREFIXES = ("relay._transform.", "relay.transform.", "transform.")


class PassNotFoundError(EngineError, KeyError):
    """No pass is registered under that name."""

    def __str__(self) -> str:
        return str(self.args[0])


def register_pass(name: Any = None, factory: Any = None, *, override: bool = False) -> Any:
    """Register a pass factory by name. Every form:

        @register_pass                                # under the factory's __name__
        def FoldConstant(fold_qnn=False) -> Pass: ...
        @register_pass("FoldConstant")                # under another name
        register_pass("FoldConstant", FoldConstant)   # factory: () -> Pass
        register_pass(some_pass)                      # a Pass instance, under its info.name

    The decorator forms return the factory wrapped so that the pass it makes is
    named as registered: the factory's body need not repeat the name. Registering a
    name twice is an error unless it is the same factory (a re-import) or
    `override=True`.
    """
    if isinstance(name, Pass) and factory is None:
        return _add(name.info.name, functools.partial(_same_instance, name), override)
    if callable(name) and factory is None:
        return _decorate(name.__name__, name, override)
    if factory is not None:
        return _add(_check_name(name), factory, override)
    return lambda fn: _decorate(_check_name(name) if name is not None else fn.__name__, fn,
                                override)


def _decorate(name: str, factory: PassFactory, override: bool) -> PassFactory:
    """Register `factory` under `name`; a function comes back naming its passes `name`
    (a pass class is named after itself already)."""
    is_class = inspect.isclass(factory)
    return _add(name, factory if is_class else _naming(name, factory), override)


def _naming(name: str, factory: PassFactory) -> PassFactory:
    @functools.wraps(factory)
    def make(*args: Any, **kwargs: Any) -> Pass:
        made = factory(*args, **kwargs)
        if not isinstance(made, Pass):
            raise TypeError(f"the factory registered as {name!r} returned {made!r}, not a Pass")
        return made if made.info.name == name else made.renamed(name)

    return make


def _same_instance(instance: Pass) -> Pass:
    return instance


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a pass name must be a non-empty str, got {name!r}")
    return name


def _origin(factory: Callable[..., Any]) -> tuple[Any, ...]:
    factory = inspect.unwrap(factory)
    code = getattr(factory, "__code__", None)
    return (getattr(factory, "__module__", None), getattr(factory, "__qualname__", None),
            getattr(code, "co_filename", None), getattr(code, "co_firstlineno", None))


def _same_factory(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    """The same object, or the same definition loaded again (a module re-import)."""
    return a is b or (_origin(a) == _origin(b) and _origin(a)[1] is not None)


def _add(name: str, factory: PassFactory, override: bool) -> PassFactory:
    if not callable(factory):
        raise TypeError(f"pass {name!r}: the factory must be callable, got {factory!r}")
    with _LOCK:
        old = _FACTORIES.get(name)
        if old is not None and not override and not _same_factory(old, factory):
            raise ValueError(f"a pass named {name!r} is already registered "
                             f"(by {getattr(old, '__module__', '?')}); use override=True")
        _FACTORIES[name] = factory
    return factory


def _canonical(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def get_pass(name: str) -> Pass:
    """A new instance of the pass registered as `name` (TVM prefixes like
    `relay._transform.` are accepted)."""
    key = _canonical(_check_name(name))
    factory = _FACTORIES.get(key)
    if factory is None:
        close = difflib.get_close_matches(key, list(_FACTORIES), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise PassNotFoundError(f"no pass is registered as {name!r}{hint}")
    made = factory()
    if not isinstance(made, Pass):
        raise TypeError(f"the factory registered as {key!r} returned {made!r}, not a Pass")
    return made


def list_passes() -> list[str]:
    """Names of every registered pass, sorted."""
    with _LOCK:
        return sorted(_FACTORIES)
