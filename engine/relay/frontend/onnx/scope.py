"""Name scopes of an ONNX import: the main graph, and each sub-graph (an If branch, a Loop
or Scan body, a SequenceMap body) nested in the scope of the node that owns it.

A sub-graph sees every name of the scopes around it. A branch reads an outer value as
it is (an `if` in Relay captures what its scope computed). A function scope (a loop
body, which becomes a Relay function called once per iteration) must not compute an
outer value again on every trip: the first time it reads a computed outer value, the
scope binds it to a fresh variable, a *capture*, which the loop passes in unchanged.
Inputs and constants need no capture (a closure keeps the variables it reads).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from engine.ir.expr import Constant, Expr, Var
from engine.ir.type import Type


class EmptyOptional:
    """What a converter returns for an output that is an optional known to be empty. The
    scope binds the name to None, so a node reads it as an omitted input (which ONNX
    treats alike)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "EMPTY_OPTIONAL"


EMPTY_OPTIONAL = EmptyOptional()


@dataclass
class Scope:
    """The tensors one graph defines, and how it reaches those of the scopes around it."""

    parent: Scope | None = None
    function: bool = False
    tensors: dict[str, Expr | None] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    captures: list[tuple[Var, Expr]] = field(default_factory=list)

    def chain(self) -> Iterator[Scope]:
        """This scope, then each one around it."""
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def names(self) -> set[str]:
        return {name for scope in self.chain() for name in scope.tensors}

    def owner(self, name: str) -> Scope | None:
        """The scope that defines `name` (or says it is unavailable)."""
        return next((s for s in self.chain() if name in s.tensors or name in s.unavailable),
                    None)

    def read(self, name: str, type_of: Callable[[Expr], Type]) -> Expr | None:
        """The value `name` has here: an outer computed value read from inside a function
        scope is captured (bound to a variable of that scope) on the way in."""
        owner = self.owner(name)
        assert owner is not None and name in owner.tensors
        value = owner.tensors[name]
        if value is None or isinstance(value, (Var, Constant)):
            return value
        inner = []
        for scope in self.chain():
            if scope is owner:
                break
            inner.append(scope)
        for scope in reversed(inner):  # outermost function scope first
            if scope.function and not isinstance(value, Var):
                var = Var(name, type_of(value), span=value.span)
                scope.captures.append((var, value))
                scope.tensors[name] = value = var
        return value


__all__ = ["EMPTY_OPTIONAL", "EmptyOptional", "Scope"]
