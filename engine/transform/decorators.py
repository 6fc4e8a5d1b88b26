"""`module_pass`: make a function or a class a ModulePass (TVM's decorator).

Every form works::

    @module_pass                       # opt_level 0, name = function name
    @module_pass(opt_level=2, name="X", required=["InferType"])
    module_pass(fn, opt_level=3)       # a plain call
    @module_pass(opt_level=1)
    class MyPass:                      # the class name is the pass name
        def transform_module(self, mod, ctx): ...

A decorated class becomes a ModulePass subclass: `MyPass(args)` builds the
user's object with those args and a pass that calls its `transform_module`;
the pass forwards unknown attributes to that object.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from engine.transform.pass_info import PassInfo, pass_names
from engine.transform.passes import ModulePass, Pass


def wrap_pass_class(pass_cls: type, info: PassInfo, base: type[Pass], method: str) -> type:
    """A `base` subclass whose instances wrap an instance of `pass_cls` and run its `method`."""
    if not callable(getattr(pass_cls, method, None)):
        raise TypeError(f"{pass_cls.__name__} must define {method}() to be used as a pass")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        inst = pass_cls(*args, **kwargs)
        self.__dict__["_inst"] = inst
        base.__init__(self, getattr(inst, method), info)  # type: ignore[call-arg]

    def __getattr__(self: Any, attr: str) -> Any:
        inst = self.__dict__.get("_inst")
        if inst is None:
            raise AttributeError(attr)
        return getattr(inst, attr)

    functools.update_wrapper(__init__, pass_cls.__init__)  # type: ignore[misc]
    return type(pass_cls.__name__, (base,), {
        "__init__": __init__,
        "__getattr__": __getattr__,
        "__module__": pass_cls.__module__,
        "__qualname__": pass_cls.__qualname__,
        "__doc__": pass_cls.__doc__,
        "pass_class": pass_cls,
    })


def make_pass_decorator(base: type[Pass], method: str, kind: str) -> Callable[..., Any]:
    """The `module_pass` / `function_pass` decorator for passes of type `base`."""

    def decorator(pass_func: Any = None, opt_level: int | None = None, name: str | None = None,
                  required: Iterable[str] | None = None, traceable: bool = False) -> Any:
        level = 0 if opt_level is None else opt_level
        needed = pass_names(required, "required")

        def create(arg: Any) -> Any:
            info = PassInfo(level, name or str(getattr(arg, "__name__", "")), needed, traceable)
            if inspect.isclass(arg):
                return wrap_pass_class(arg, info, base, method)
            if not callable(arg):
                raise TypeError(f"{kind} decorates a function or a class, got {arg!r}")
            return base(arg, info)  # type: ignore[call-arg]

        if pass_func is not None:
            return create(pass_func)
        return create

    decorator.__name__ = kind
    decorator.__doc__ = (f"Make a function or a class with `{method}` a {base.__name__} "
                         f"(see {__name__}).")
    return decorator


module_pass = make_pass_decorator(ModulePass, "transform_module", "module_pass")
