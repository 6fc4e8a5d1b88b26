"""ExprFunctor, ExprVisitor, ExprMutator: table dispatch, memoized, iterative on dataflow.

`visit` resolves `visit_<kind>` once per node class into a cached table.
Visitor and mutator first walk dataflow nodes (Call, Tuple, TupleGetItem) in
an explicit post-order, so a chain of 100,000 calls never recurses deeply (as
TVM's MixedModeVisitor does); chains of `let` are walked in a loop too. The
mutator rebuilds a node with `dataclasses.replace` (span and attrs carry over)
and returns the node itself when no child changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.ir.expr import (
    DATAFLOW_KINDS,
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    operands,
)
from engine.ir.op import Op
from engine.ir.traversal import post_order, post_order_visit

__all__ = ["NODE_KINDS", "ExprFunctor", "ExprMutator", "ExprVisitor", "post_order",
           "post_order_visit"]

NODE_KINDS: tuple[type[Expr], ...] = (
    Var, GlobalVar, Constant, Op, Call, Tuple, TupleGetItem, Let, If, Function,
)


def _handler_table(cls: type) -> dict[type, str]:
    table = cls.__dict__.get("_dispatch_table")
    if table is None:
        table = {}
        for node_cls in NODE_KINDS:
            name = f"visit_{node_cls.kind}"
            if not callable(getattr(cls, name, None)):
                raise TypeError(f"{cls.__name__} has no handler {name} for {node_cls.__name__}")
            table[node_cls] = name
        cls._dispatch_table = table  # type: ignore[attr-defined]
    return table


def _dataflow_post_order(root: Expr, done: Callable[[Expr], bool]) -> list[Expr]:
    """Dataflow nodes reachable from `root` through dataflow edges, children first,
    skipping those `done` says are finished. Non-dataflow children are left to the
    handler (they are visited recursively there, which is shallow)."""
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(root, False)]
    seen: set[int] = set()
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen or done(node):
            continue
        seen.add(id(node))
        stack.append((node, True))
        for kid in reversed(operands(node)):
            if isinstance(kid, DATAFLOW_KINDS) and id(kid) not in seen and not done(kid):
                stack.append((kid, False))
    return order


class ExprFunctor:
    """Dispatches `visit(expr)` to `visit_<kind>(expr)`; memoizes results by node."""

    def __init__(self) -> None:
        self.memo_map: dict[Expr, Any] = {}

    def visit(self, expr: Expr) -> Any:
        found = self.memo_map.get(expr, _MISSING)
        if found is not _MISSING:
            return found
        result = self._dispatch(expr)
        self.memo_map[expr] = result
        return result

    def _dispatch(self, expr: Expr) -> Any:
        table = _handler_table(type(self))
        name = table.get(type(expr)) or next(
            (n for c, n in table.items() if isinstance(expr, c)), None)
        if name is None:
            raise TypeError(f"{type(self).__name__} cannot visit {type(expr).__name__}")
        return getattr(self, name)(expr)

    def visit_var(self, var: Var) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_var")

    def visit_global_var(self, gv: GlobalVar) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_global_var")

    def visit_constant(self, const: Constant) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_constant")

    def visit_op(self, op: Op) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_op")

    def visit_call(self, call: Call) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_call")

    def visit_tuple(self, tup: Tuple) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_tuple")

    def visit_tuple_getitem(self, item: TupleGetItem) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_tuple_getitem")

    def visit_let(self, let: Let) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_let")

    def visit_if(self, ite: If) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_if")

    def visit_function(self, fn: Function) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.visit_function")


_MISSING = object()


class ExprVisitor(ExprFunctor):
    """Visits every node once (memoized), children before parents on dataflow."""

    def visit(self, expr: Expr) -> Any:
        memo = self.memo_map
        if expr in memo:
            return None
        if isinstance(expr, DATAFLOW_KINDS):
            for node in _dataflow_post_order(expr, memo.__contains__):
                self._dispatch(node)
                memo[node] = None
            return None
        self._dispatch(expr)
        memo[expr] = None
        return None

    def visit_var(self, var: Var) -> None:
        pass

    def visit_global_var(self, gv: GlobalVar) -> None:
        pass

    def visit_constant(self, const: Constant) -> None:
        pass

    def visit_op(self, op: Op) -> None:
        pass

    def visit_call(self, call: Call) -> None:
        self.visit(call.op)
        for arg in call.args:
            self.visit(arg)

    def visit_tuple(self, tup: Tuple) -> None:
        for field in tup.fields:
            self.visit(field)

    def visit_tuple_getitem(self, item: TupleGetItem) -> None:
        self.visit(item.tuple_value)

    def visit_let(self, let: Let) -> None:
        # A let chain is walked in a loop, not recursion.
        node: Expr = let
        while isinstance(node, Let):
            self.visit(node.var)
            self.visit(node.value)
            self.memo_map[node] = None
            node = node.body
            if node in self.memo_map:
                return
            if isinstance(node, Let) and type(self).visit_let is not ExprVisitor.visit_let:
                break
        self.visit(node)

    def visit_if(self, ite: If) -> None:
        self.visit(ite.cond)
        self.visit(ite.true_branch)
        self.visit(ite.false_branch)

    def visit_function(self, fn: Function) -> None:
        for param in fn.params:
            self.visit(param)
        self.visit(fn.body)


class ExprMutator(ExprFunctor):
    """Rebuilds what changed, keeps what did not (same object), memoized."""

    def visit(self, expr: Expr) -> Any:
        memo = self.memo_map
        found = memo.get(expr, _MISSING)
        if found is not _MISSING:
            return found
        if isinstance(expr, DATAFLOW_KINDS):
            for node in _dataflow_post_order(expr, memo.__contains__):
                memo[node] = self._dispatch(node)
            return memo[expr]
        result = self._dispatch(expr)
        memo[expr] = result
        return result

    def visit_var(self, var: Var) -> Expr:
        return var

    def visit_global_var(self, gv: GlobalVar) -> Expr:
        return gv

    def visit_constant(self, const: Constant) -> Expr:
        return const

    def visit_op(self, op: Op) -> Expr:
        return op

    def visit_call(self, call: Call) -> Expr:
        new_op = self.visit(call.op)
        new_args = tuple(self.visit(arg) for arg in call.args)
        if new_op is call.op and all(a is b for a, b in zip(new_args, call.args)):
            return call
        return replace(call, op=new_op, args=new_args)

    def visit_tuple(self, tup: Tuple) -> Expr:
        fields = tuple(self.visit(f) for f in tup.fields)
        if all(a is b for a, b in zip(fields, tup.fields)):
            return tup
        return replace(tup, fields=fields)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        if value is item.tuple_value:
            return item
        return replace(item, tuple_value=value)

    def visit_let(self, let: Let) -> Expr:
        # Walk the chain in a loop, then rebuild it from the inside out.
        chain: list[tuple[Let, Expr, Expr]] = []
        node: Expr = let
        custom = type(self).visit_let is not ExprMutator.visit_let
        while isinstance(node, Let) and (not chain or not custom) and node not in self.memo_map:
            chain.append((node, self.visit(node.var), self.visit(node.value)))
            node = node.body
        body = self.visit(node)
        for old, var, value in reversed(chain):
            if var is old.var and value is old.value and body is old.body:
                new: Expr = old
            else:
                new = replace(old, var=var, value=value, body=body)  # type: ignore[arg-type]
            self.memo_map[old] = new
            body = new
        return body

    def visit_if(self, ite: If) -> Expr:
        cond = self.visit(ite.cond)
        then = self.visit(ite.true_branch)
        other = self.visit(ite.false_branch)
        if cond is ite.cond and then is ite.true_branch and other is ite.false_branch:
            return ite
        return replace(ite, cond=cond, true_branch=then, false_branch=other)

    def visit_function(self, fn: Function) -> Expr:
        params = tuple(self.visit(p) for p in fn.params)
        body = self.visit(fn.body)
        if body is fn.body and all(a is b for a, b in zip(params, fn.params)):
            return fn
        return replace(fn, params=params, body=body)
