"""IRModule: the unit passes transform, a map from GlobalVar to function."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from engine.ir.attrs import EMPTY_ATTRS, Attrs, make_attrs
from engine.ir.expr import Expr, Function, GlobalVar
from engine.ir.span import UNKNOWN_SPAN
from engine.ir.text import node_text
from engine.ir.vars import free_vars


class IRModule:
    """Functions by global name, in insertion order.

    Passes never change the module they are given: they build a new one
    (`shallow_copy` + updates), so a recorded snapshot stays as it was.
    """

    __slots__ = ("_functions", "_by_name", "type_definitions", "attrs", "__weakref__")

    def __init__(self, functions: Mapping[GlobalVar | str, Function] | None = None,
                 type_definitions: Mapping[Any, Any] | None = None,
                 attrs: Attrs | Mapping[str, Any] | None = None) -> None:
        self._functions: dict[GlobalVar, Function] = {}
        self._by_name: dict[str, GlobalVar] = {}
        self.type_definitions = dict(type_definitions or {})
        self.attrs = make_attrs(attrs) if attrs is not None else EMPTY_ATTRS
        for key, func in (functions or {}).items():
            self[key] = func

    @staticmethod
    def from_expr(expr: Expr, functions: Mapping[GlobalVar | str, Function] | None = None,
                  type_defs: Mapping[Any, Any] | None = None) -> IRModule:
        """A module whose `main` is `expr` (wrapped in a Function over its free vars)."""
        mod = IRModule(functions, type_defs)
        if not isinstance(expr, Function):
            expr = Function(tuple(free_vars(expr)), expr, span=UNKNOWN_SPAN)
        mod["main"] = expr
        return mod

    # --- mapping API (TVM's names) ---------------------------------------------
    def _gvar(self, key: GlobalVar | str, create: bool = False) -> GlobalVar:
        if isinstance(key, GlobalVar):
            existing = self._by_name.get(key.name_hint)
            if existing is not None and existing is not key and not create:
                return existing
            return key
        gv = self._by_name.get(key)
        if gv is not None:
            return gv
        if create:
            return GlobalVar(key)
        raise KeyError(f"no function named @{key} in the module "
                       f"(it has: {', '.join('@' + n for n in self._by_name) or 'none'})")

    def __getitem__(self, key: GlobalVar | str) -> Function:
        gv = self._gvar(key)
        try:
            return self._functions[gv]
        except KeyError:
            raise KeyError(f"no function @{gv.name_hint} in the module") from None

    def __setitem__(self, key: GlobalVar | str, func: Function) -> None:
        gv = self._gvar(key, create=True)
        old = self._by_name.get(gv.name_hint)
        if old is not None and old is not gv:
            # same name, new GlobalVar object: keep the module's own GlobalVar
            gv = old
        self._functions[gv] = func
        self._by_name[gv.name_hint] = gv

    def __delitem__(self, key: GlobalVar | str) -> None:
        gv = self._gvar(key)
        del self._functions[gv]
        del self._by_name[gv.name_hint]

    remove = __delitem__

    def __contains__(self, key: object) -> bool:
        if isinstance(key, GlobalVar):
            return key.name_hint in self._by_name
        return key in self._by_name

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    @property
    def functions(self) -> dict[GlobalVar, Function]:
        return dict(self._functions)

    def items(self) -> list[tuple[GlobalVar, Function]]:
        return list(self._functions.items())

    def get_global_var(self, name: str) -> GlobalVar:
        return self._gvar(name)

    def get_global_vars(self) -> list[GlobalVar]:
        return list(self._functions)

    @property
    def global_var_map_(self) -> dict[str, GlobalVar]:
        return dict(self._by_name)

    def update(self, other: IRModule | Mapping[GlobalVar | str, Function]) -> None:
        items = other.items() if isinstance(other, IRModule) else list(other.items())
        for gv, func in items:
            self[gv] = func

    def update_func(self, gv: GlobalVar, func: Function) -> None:
        self[gv] = func

    def shallow_copy(self) -> IRModule:
        new = IRModule(type_definitions=self.type_definitions, attrs=self.attrs)
        new._functions = dict(self._functions)
        new._by_name = dict(self._by_name)
        return new

    def with_attr(self, key: str, value: Any) -> IRModule:
        new = self.shallow_copy()
        new.attrs = self.attrs.replace(**{key: value})
        return new

    def with_functions(self, functions: Mapping[GlobalVar, Function]) -> IRModule:
        """A copy with some functions replaced; the same module if none changed."""
        if all(self._functions.get(gv) is f for gv, f in functions.items()):
            return self
        new = self.shallow_copy()
        for gv, f in functions.items():
            new[gv] = f
        return new

    # --- text -------------------------------------------------------------------
    def astext(self, show_meta_data: bool = True) -> str:
        return node_text(self, show_meta_data)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)

    def __repr__(self) -> str:
        names = ", ".join("@" + gv.name_hint for gv in self._functions)
        return f"IRModule({names})"
