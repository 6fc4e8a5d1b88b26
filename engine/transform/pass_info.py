"""PassInfo: the metadata of a pass (TVM's `tvm.transform.PassInfo`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, init=False)
class PassInfo:
    """Name, optimization level and the names of the passes it requires.

    A value: two infos with the same fields are equal. The pass manager runs
    each `required` pass (resolved by name through the pass registry) before
    the pass itself when it runs inside a `Sequential`.
    """

    opt_level: int
    name: str
    required: tuple[str, ...]
    traceable: bool

    def __init__(self, opt_level: int, name: str, required: Iterable[str] | None = None,
                 traceable: bool = False) -> None:
        object.__setattr__(self, "opt_level", check_opt_level(opt_level))
        object.__setattr__(self, "name", _check_name(name))
        object.__setattr__(self, "required", pass_names(required, "required"))
        object.__setattr__(self, "traceable", bool(traceable))

    def __str__(self) -> str:
        required = ", ".join(self.required)
        return (f"The meta data of the pass - pass name: {self.name}, "
                f"opt_level: {self.opt_level}, required passes: [{required}]")


def check_opt_level(opt_level: object) -> int:
    if isinstance(opt_level, bool) or not isinstance(opt_level, int):
        raise TypeError(f"opt_level must be an int, got {opt_level!r}")
    return opt_level


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a pass name must be a non-empty str, got {name!r}")
    return name


def pass_names(names: Iterable[str] | None, what: str) -> tuple[str, ...]:
    """Validate a list of pass names (a lone string is a mistake, not a list of letters)."""
    if names is None:
        return ()
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise TypeError(f"{what} must be a list, tuple or set of pass names, got {names!r}")
    out = tuple(names)
    for name in out:
        if not isinstance(name, str):
            raise TypeError(f"{what} must hold pass names (str), got {name!r}")
    return out
