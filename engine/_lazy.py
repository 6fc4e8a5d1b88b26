"""Names of a package that load their module on first use (PEP 562 `__getattr__`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, tuple[str, str | None]],
                 namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module `__getattr__` resolving `name` -> (module, attribute or None for the module
    itself) from `table`, and caching the value in the package's `namespace`."""

    def __getattr__(name: str) -> Any:
        try:
            module_name, attr = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module = import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        namespace[name] = value
        return value

    return __getattr__
