"""Structural equality and hashing of IR: alpha-equivalence, iterative at any depth.

Two expressions are structurally equal when they have the same shape of
nodes, the same ops, attrs, constants and types, and their bound variables
correspond (function parameters and let variables are matched by position).
Free variables must be the same object unless `map_free_vars`. Spans are
ignored unless `compare_spans`: they are metadata, as in TVM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.dtype import is_inexact
from engine.ir.errors import StructuralMismatchError
from engine.ir.expr import (
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
    children,
)
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.ir.type import Type


@dataclass(frozen=True, slots=True)
class _Path:
    parent: _Path | None
    step: str

    def render(self) -> str:
        steps: list[str] = []
        node: _Path | None = self
        while node is not None:
            steps.append(node.step)
            node = node.parent
        out = ""
        for step in reversed(steps):
            out += step if step.startswith("[") or not out else "." + step
        return out


@dataclass
class Mismatch:
    path: str
    lhs: Any
    rhs: Any
    reason: str


_DEF = 1  # the pair is a variable definition (function param, let var)
_USE = 0

_Stack = list[tuple[int, Any, Any, _Path]]
"""Pairs still to compare: (mode, lhs, rhs, path)."""


class _EqualChecker:
    def __init__(self, map_free_vars: bool, compare_spans: bool) -> None:
        self.map_free_vars = map_free_vars
        self.compare_spans = compare_spans
        self.var_map: dict[Var, Var] = {}
        self.rev_map: dict[Var, Var] = {}
        self.done: set[tuple[int, int]] = set()
        self.mismatch: Mismatch | None = None

    def fail(self, path: _Path, lhs: Any, rhs: Any, reason: str) -> bool:
        self.mismatch = Mismatch(path.render(), lhs, rhs, reason)
        return False

    def run(self, lhs: Any, rhs: Any, root: str) -> bool:
        stack: list[tuple[int, Any, Any, _Path]] = [(_USE, lhs, rhs, _Path(None, root))]
        while stack:
            mode, a, b, path = stack.pop()
            if not self.step(mode, a, b, path, stack):
                return False
        return True

    def step(self, mode: int, a: Any, b: Any, path: _Path, stack: _Stack) -> bool:
        if isinstance(a, IRModule) or isinstance(b, IRModule):
            return self.modules(a, b, path, stack)
        if not isinstance(a, Expr) or not isinstance(b, Expr):
            return self.values(a, b, path)
        if type(a) is not type(b):
            return self.fail(path, a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if mode == _DEF:
            assert isinstance(a, Var) and isinstance(b, Var)
            return self.define(a, b, path)
        key = (id(a), id(b))
        if key in self.done:
            return True
        if self.compare_spans and a.span != b.span:
            return self.fail(path, a, b, f"span {_span_text(a.span)} vs {_span_text(b.span)}")
        handler = _EXPR_EQUAL[type(a)]
        if not handler(self, a, b, path, stack):
            return False
        self.done.add(key)
        return True

    def define(self, a: Var, b: Var, path: _Path) -> bool:
        if not _type_equal(a.type_annotation, b.type_annotation):
            return self.fail(_Path(path, "type_annotation"), a.type_annotation,
                             b.type_annotation, "variable types differ")
        if self.compare_spans and a.span != b.span:
            return self.fail(path, a, b, f"span {_span_text(a.span)} vs {_span_text(b.span)}")
        self.var_map[a] = b
        self.rev_map[b] = a
        return True

    def values(self, a: Any, b: Any, path: _Path) -> bool:
        if isinstance(a, Type) or isinstance(b, Type) or a is None or b is None:
            if not _type_equal(a, b):
                return self.fail(path, a, b, f"type {a} vs {b}")
            return True
        if isinstance(a, Attrs) and isinstance(b, Attrs):
            if a != b:
                return self.fail(path, a, b, _attrs_diff(a, b))
            return True
        if a != b:
            return self.fail(path, a, b, f"{a!r} vs {b!r}")
        return True

    def modules(self, a: Any, b: Any, path: _Path, stack: _Stack) -> bool:
        if not (isinstance(a, IRModule) and isinstance(b, IRModule)):
            return self.fail(path, a, b, "module vs non-module")
        names_a = [gv.name_hint for gv in a]
        names_b = [gv.name_hint for gv in b]
        if sorted(names_a) != sorted(names_b):
            return self.fail(path, names_a, names_b, f"functions {names_a} vs {names_b}")
        for name in sorted(names_a, reverse=True):
            stack.append((_USE, a[name], b[name], _Path(path, f"@{name}")))
        return True

    # --- per kind -------------------------------------------------------------
    def var(self, a: Var, b: Var, path: _Path, stack: _Stack) -> bool:
        mapped = self.var_map.get(a)
        if mapped is not None:
            return mapped is b or self.fail(path, a, b, "variables bound at different places")
        if b in self.rev_map:
            return self.fail(path, a, b, "variables bound at different places")
        if a is b:
            return True
        if self.map_free_vars:
            return self.define(a, b, path)
        return self.fail(path, a, b, f"free variables %{a.name_hint} and %{b.name_hint} "
                         "are different objects (use map_free_vars=True to match them)")


def _eq_var(c: _EqualChecker, a: Var, b: Var, path: _Path, stack: _Stack) -> bool:
    return c.var(a, b, path, stack)


def _eq_global_var(c: _EqualChecker, a: GlobalVar, b: GlobalVar, path: _Path, stack: _Stack) -> bool:
    return a.name_hint == b.name_hint or c.fail(path, a, b, f"@{a.name_hint} vs @{b.name_hint}")


def _eq_op(c: _EqualChecker, a: Op, b: Op, path: _Path, stack: _Stack) -> bool:
    return a.name == b.name or c.fail(path, a, b, f"op {a.name} vs {b.name}")


def _eq_constant(c: _EqualChecker, a: Constant, b: Constant, path: _Path, stack: _Stack) -> bool:
    p, q = a.data, b.data
    if p.dtype != q.dtype or p.shape != q.shape:
        return c.fail(path, a, b, f"constant {p.shape}/{p.dtype} vs {q.shape}/{q.dtype}")
    if p.lazy is not None or q.lazy is not None:  # by source, unread (engine/runtime/lazy.py)
        return p.content_key() == q.content_key() or c.fail(path, a, b,
                                                            "constant sources differ")
    x, y = p.numpy(), q.numpy()
    if x is y or np.array_equal(x, y, equal_nan=is_inexact(x.dtype)):
        return True
    return c.fail(path, a, b, "constant values differ")


def _eq_call(c: _EqualChecker, a: Call, b: Call, path: _Path, stack: _Stack) -> bool:
    if len(a.args) != len(b.args):
        return c.fail(path, a, b, f"{len(a.args)} vs {len(b.args)} arguments")
    if a.attrs != b.attrs:
        return c.fail(_Path(path, "attrs"), a.attrs, b.attrs, _attrs_diff(a.attrs, b.attrs))
    if len(a.type_args) != len(b.type_args) or not all(
            _type_equal(x, y) for x, y in zip(a.type_args, b.type_args)):
        return c.fail(_Path(path, "type_args"), a.type_args, b.type_args, "type args differ")
    for i in range(len(a.args) - 1, -1, -1):
        stack.append((_USE, a.args[i], b.args[i], _Path(path, f"args[{i}]")))
    stack.append((_USE, a.op, b.op, _Path(path, "op")))
    return True


def _eq_tuple(c: _EqualChecker, a: Tuple, b: Tuple, path: _Path, stack: _Stack) -> bool:
    if len(a.fields) != len(b.fields):
        return c.fail(path, a, b, f"tuple of {len(a.fields)} vs {len(b.fields)} fields")
    for i in range(len(a.fields) - 1, -1, -1):
        stack.append((_USE, a.fields[i], b.fields[i], _Path(path, f"fields[{i}]")))
    return True


def _eq_getitem(c: _EqualChecker, a: TupleGetItem, b: TupleGetItem, path: _Path,
                stack: _Stack) -> bool:
    if a.index != b.index:
        return c.fail(path, a, b, f"tuple index {a.index} vs {b.index}")
    stack.append((_USE, a.tuple_value, b.tuple_value, _Path(path, "tuple_value")))
    return True


def _eq_let(c: _EqualChecker, a: Let, b: Let, path: _Path, stack: _Stack) -> bool:
    stack.append((_USE, a.body, b.body, _Path(path, "body")))
    stack.append((_USE, a.value, b.value, _Path(path, "value")))
    stack.append((_DEF, a.var, b.var, _Path(path, "var")))
    return True


def _eq_if(c: _EqualChecker, a: If, b: If, path: _Path, stack: _Stack) -> bool:
    stack.append((_USE, a.false_branch, b.false_branch, _Path(path, "false_branch")))
    stack.append((_USE, a.true_branch, b.true_branch, _Path(path, "true_branch")))
    stack.append((_USE, a.cond, b.cond, _Path(path, "cond")))
    return True


def _eq_function(c: _EqualChecker, a: Function, b: Function, path: _Path, stack: _Stack) -> bool:
    if len(a.params) != len(b.params):
        return c.fail(path, a, b, f"{len(a.params)} vs {len(b.params)} parameters")
    if not _type_equal(a.ret_type, b.ret_type):
        return c.fail(_Path(path, "ret_type"), a.ret_type, b.ret_type, "return types differ")
    if a.attrs != b.attrs:
        return c.fail(_Path(path, "attrs"), a.attrs, b.attrs, _attrs_diff(a.attrs, b.attrs))
    stack.append((_USE, a.body, b.body, _Path(path, "body")))
    for i in range(len(a.params) - 1, -1, -1):
        stack.append((_DEF, a.params[i], b.params[i], _Path(path, f"params[{i}]")))
    return True


# Equality pairs the fields of two nodes (each with its path, for the error message), so
# each handler names its node's fields; hashing below walks `children` like everything else.
_EXPR_EQUAL: dict[type, Any] = {
    Var: _eq_var, GlobalVar: _eq_global_var, Op: _eq_op, Constant: _eq_constant,
    Call: _eq_call, Tuple: _eq_tuple, TupleGetItem: _eq_getitem, Let: _eq_let, If: _eq_if,
    Function: _eq_function,
}


def _type_equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(a == b)


def _attrs_diff(a: Attrs, b: Attrs) -> str:
    keys = list(dict.fromkeys([*a.keys(), *b.keys()]))
    for key in keys:
        if key not in a or key not in b or a.get(key) != b.get(key):
            return f"attribute {key!r}: {a.get(key, '<missing>')!r} vs {b.get(key, '<missing>')!r}"
    return f"attrs {a!r} vs {b!r}"


def _span_text(span: Any) -> str:
    names = span.source_names() if span else ()
    return "[" + ", ".join(names) + "]" if names else "<unknown>"


def _check(lhs: Any, rhs: Any, map_free_vars: bool, compare_spans: bool) -> _EqualChecker:
    checker = _EqualChecker(map_free_vars, compare_spans)
    checker.run(lhs, rhs, "root")
    return checker


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False,
                     compare_spans: bool = False) -> bool:
    """True when lhs and rhs are structurally equal (see the module docstring)."""
    return _check(lhs, rhs, map_free_vars, compare_spans).mismatch is None


def get_first_structural_mismatch(lhs: Any, rhs: Any, map_free_vars: bool = False,
                                  compare_spans: bool = False) -> Mismatch | None:
    return _check(lhs, rhs, map_free_vars, compare_spans).mismatch


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False,
                            compare_spans: bool = False) -> None:
    """Raise StructuralMismatchError naming the first difference: its path, and both sides."""
    mismatch = get_first_structural_mismatch(lhs, rhs, map_free_vars, compare_spans)
    if mismatch is None:
        return
    raise StructuralMismatchError(
        f"structural mismatch at {mismatch.path}: {mismatch.reason}\n"
        f"  lhs: {_short(mismatch.lhs)}\n  rhs: {_short(mismatch.rhs)}"
    )


def _short(value: Any, limit: int = 400) -> str:
    try:
        text = str(value)
    except Exception:  # printing is best effort in an error message
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- hashing --------------------------------------------------------------------


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with structural_equal (equal nodes hash the same)."""
    if isinstance(node, IRModule):
        return hash(tuple(sorted((gv.name_hint, structural_hash(f, map_free_vars))
                                 for gv, f in node.items())))
    if not isinstance(node, Expr):
        return hash(node)
    return _Hasher(map_free_vars).run(node)


class _Hasher:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.var_index: dict[Var, int] = {}
        self.memo: dict[int, int] = {}

    def bind(self, var: Var) -> None:
        if var not in self.var_index:
            self.var_index[var] = len(self.var_index)

    def run(self, root: Expr) -> int:
        memo = self.memo
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                memo[id(node)] = self.leaf_hash(node)
                continue
            if id(node) in memo:
                continue
            if isinstance(node, Function):
                for p in node.params:
                    self.bind(p)
            elif isinstance(node, Let):
                self.bind(node.var)
            stack.append((node, True))
            for kid in reversed(children(node)):
                if id(kid) not in memo:
                    stack.append((kid, False))
        return memo[id(root)]

    def leaf_hash(self, node: Expr) -> int:
        kids = tuple(self.memo[id(k)] for k in children(node))
        if isinstance(node, Var):
            index = self.var_index.get(node)
            if index is None:
                if not self.map_free_vars:
                    return hash(("free", id(node)))
                self.bind(node)
                index = self.var_index[node]
            return hash(("var", index, node.type_annotation))
        return hash((node.kind, _local_hash(node), kids))


def _local_hash(node: Expr) -> Any:
    if isinstance(node, Op):
        return node.name
    if isinstance(node, GlobalVar):
        return node.name_hint
    if isinstance(node, Constant):
        return node.data.content_key()  # a lazy weight hashes by its source, unread
    if isinstance(node, Call):
        return (hash(node.attrs), node.type_args)
    if isinstance(node, TupleGetItem):
        return node.index
    if isinstance(node, Function):
        return (hash(node.attrs), node.ret_type)
    return 0
