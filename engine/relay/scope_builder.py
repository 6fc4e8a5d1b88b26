"""ScopeBuilder: build nested let/if code imperatively (TVM's `relay.ScopeBuilder`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from engine.ir.expr import Expr, If, Let, Var
from engine.ir.type import Type


class _Scope:
    def __init__(self) -> None:
        self.bindings: list[tuple[Var, Expr]] = []
        self.ret: Expr | None = None


class ScopeBuilder:
    """
    sb = ScopeBuilder()
    x = sb.let("x", relay.const(1))
    with sb.if_scope(cond): sb.ret(a)
    with sb.else_scope(): sb.ret(b)
    sb.ret(...); body = sb.get()
    """

    def __init__(self) -> None:
        self._scopes: list[_Scope] = [_Scope()]
        self._pending_if: list[Expr] = []
        self._if_branches: list[tuple[Expr, Expr | None, Expr | None]] = []

    def let(self, var: Var | str | tuple[str, Type], value: Expr) -> Var:
        if isinstance(var, str):
            var = Var(var)
        elif isinstance(var, tuple):
            var = Var(var[0], var[1])
        self._scopes[-1].bindings.append((var, value))
        return var

    def ret(self, value: Expr) -> None:
        scope = self._scopes[-1]
        if scope.ret is not None:
            raise ValueError("ret was already called in this scope")
        scope.ret = value

    @contextmanager
    def if_scope(self, cond: Expr) -> Iterator[None]:
        self._scopes.append(_Scope())
        yield
        then = self._close()
        self._if_branches.append((cond, then, None))

    @contextmanager
    def else_scope(self) -> Iterator[None]:
        if not self._if_branches or self._if_branches[-1][2] is not None:
            raise ValueError("else_scope must follow an if_scope")
        self._scopes.append(_Scope())
        yield
        otherwise = self._close()
        cond, then, _ = self._if_branches.pop()
        assert then is not None
        self._scopes[-1].ret = If(cond, then, otherwise)

    def _close(self) -> Expr:
        scope = self._scopes.pop()
        if scope.ret is None:
            raise ValueError("a scope must end with ret()")
        return _wrap(scope.bindings, scope.ret)

    def get(self) -> Expr:
        if len(self._scopes) != 1:
            raise ValueError("an if/else scope is still open")
        scope = self._scopes[0]
        if scope.ret is None:
            raise ValueError("call ret() before get()")
        return _wrap(scope.bindings, scope.ret)


def _wrap(bindings: list[tuple[Var, Expr]], body: Expr) -> Expr:
    for var, value in reversed(bindings):
        body = Let(var, value, body)
    return body
