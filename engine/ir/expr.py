"""Relay expression nodes.

Nodes are frozen dataclasses hashed by identity (`eq=False`): a node that a
pass does not touch is the same object in the next module, and each node gets
a stable integer `node_id` when it is built. Children live in tuples, every
node has a span (unknown is a value), and `checked_type` is the one slot that
InferType fills in after construction. Structural comparison is
`engine.ir.structural_equal`, never `==`.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from engine.ir.attrs import EMPTY_ATTRS, Attrs, make_attrs
from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.ir.text import node_text
from engine.ir.type import Type
from engine.runtime.ndarray import NDArray

_node_ids = itertools.count(1)


def reserve_node_ids(upto: int) -> None:
    """Every node built from now on gets an id above `upto` (for a process that gives its
    nodes ids assigned in another process, so that new nodes cannot collide with them)."""
    global _node_ids
    _node_ids = itertools.count(max(next(_node_ids), upto + 1))


IMPORT_ID_BASE = 1 << 30
"""Where `numbered_from` starts a model's ids by default: above every id a fresh process
hands out before it imports a model (its op registry, module-level constants)."""


@contextlib.contextmanager
def numbered_from(base: int = IMPORT_ID_BASE) -> Iterator[bool]:
    """Number the nodes built inside from `base`, so building the same module gives it the
    same ids in every process that has handed out fewer than `base` ids (a fresh worker
    process: an upload imported in one child and again in another gets equal ids).
    Yields whether that holds here; in a process past `base` the ids just continue.
    Afterwards ids continue above every id given out."""
    global _node_ids
    start = next(_node_ids)
    fresh = start <= base
    _node_ids = itertools.count(base if fresh else start)
    yield fresh


class TypeNotInferredError(ValueError):
    pass


@dataclass(frozen=True, eq=False, slots=True, repr=False, weakref_slot=True)
class Expr:
    """Base of every expression node."""

    span: SpanLike = field(default=UNKNOWN_SPAN, kw_only=True)
    node_id: int = field(init=False, default=0)
    _checked_type: Type | None = field(init=False, default=None)

    kind: ClassVar[str] = "expr"

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_id", next(_node_ids))

    @property
    def checked_type(self) -> Type:
        if self._checked_type is None:
            raise TypeNotInferredError(
                f"the type checker has not populated checked_type for {self!r}: run InferType"
            )
        return self._checked_type

    @property
    def has_type(self) -> bool:
        return self._checked_type is not None

    def set_checked_type(self, ty: Type) -> None:
        """Record the inferred type (the one in-place update a node allows)."""
        object.__setattr__(self, "_checked_type", ty)

    def clear_checked_type(self) -> None:
        """Forget the inferred type, as if InferType had never reached this node."""
        object.__setattr__(self, "_checked_type", None)

    def same_as(self, other: object) -> bool:
        return self is other

    def astext(self, show_meta_data: bool = True) -> str:
        return node_text(self, show_meta_data)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}#{self.node_id}"

    # Arithmetic sugar, as relay.ExprWithOp offers it.
    def __add__(self, other: Any) -> Call:
        return _binary("add", self, other)

    def __radd__(self, other: Any) -> Call:
        return _binary("add", other, self)

    def __sub__(self, other: Any) -> Call:
        return _binary("subtract", self, other)

    def __rsub__(self, other: Any) -> Call:
        return _binary("subtract", other, self)

    def __mul__(self, other: Any) -> Call:
        return _binary("multiply", self, other)

    def __rmul__(self, other: Any) -> Call:
        return _binary("multiply", other, self)

    def __truediv__(self, other: Any) -> Call:
        return _binary("divide", self, other)

    def __rtruediv__(self, other: Any) -> Call:
        return _binary("divide", other, self)

    def __neg__(self) -> Call:
        return Call(_op("negative"), (self,))

    def __getitem__(self, index: int) -> TupleGetItem:
        return TupleGetItem(self, index)

    def astype(self, dtype: str) -> Call:
        return Call(_op("cast"), (self,), Attrs({"dtype": dtype}, type_key="CastAttrs"))


_op_lookup: list[Callable[[str], Expr]] = []


def register_op_lookup(lookup: Callable[[str], Expr]) -> None:
    """How the arithmetic sugar finds an operator by name (`engine.ir.op` registers
    `Op.get` when it is imported, which importing `engine.ir` does)."""
    _op_lookup[:] = [lookup]


def _op(name: str) -> Expr:
    if not _op_lookup:
        raise RuntimeError("no operator registry: import engine.ir (it registers Op.get)")
    return _op_lookup[0](name)


def _binary(name: str, lhs: Any, rhs: Any) -> Call:
    return Call(_op(name), (_as_expr(lhs), _as_expr(rhs)))


def _as_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    return Constant(NDArray(np.array(value, dtype="float32" if isinstance(value, float) else None)))


BaseExpr = RelayExpr = Expr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class GlobalVar(Expr):
    """The name of a function in an IRModule."""

    name_hint: str
    kind: ClassVar[str] = "global_var"

    def __repr__(self) -> str:
        return f"GlobalVar(@{self.name_hint})"


class Id:
    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str) -> None:
        self.name_hint = name_hint


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Var(Expr):
    """A local variable: function parameter or let-bound. Identity is the object."""

    name_hint: str
    type_annotation: Type | None = None
    kind: ClassVar[str] = "var"

    @property
    def vid(self) -> Id:
        return Id(self.name_hint)

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint}#{self.node_id})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Constant(Expr):
    """A constant tensor. `data` is a read-only NDArray (`.numpy()` reads it)."""

    data: NDArray
    kind: ClassVar[str] = "constant"

    def __post_init__(self) -> None:
        Expr.__post_init__(self)
        if not isinstance(self.data, NDArray):
            object.__setattr__(self, "data", NDArray(self.data))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Call(Expr):
    """`op(args..., attrs)`: op is an Op, a Function, a GlobalVar or any callable expr."""

    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs = EMPTY_ATTRS
    type_args: tuple[Type, ...] = ()
    kind: ClassVar[str] = "call"

    def __post_init__(self) -> None:
        Expr.__post_init__(self)
        if not isinstance(self.args, tuple):
            object.__setattr__(self, "args", tuple(self.args))
        if not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", make_attrs(self.attrs))
        if not isinstance(self.type_args, tuple):
            object.__setattr__(self, "type_args", tuple(self.type_args or ()))

    def __repr__(self) -> str:
        name = getattr(self.op, "name", None) or type(self.op).__name__
        return f"Call({name}#{self.node_id})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Tuple(Expr):
    fields: tuple[Expr, ...]
    kind: ClassVar[str] = "tuple"

    def __post_init__(self) -> None:
        Expr.__post_init__(self)
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))

    def __len__(self) -> int:
        return len(self.fields)

    # A tuple's item is its field itself, not Expr's `TupleGetItem` sugar (TVM's choice).
    def __getitem__(self, index: int) -> Expr:  # type: ignore[override]
        return self.fields[index]

    def __iter__(self) -> Iterator[Expr]:
        return iter(self.fields)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int
    kind: ClassVar[str] = "tuple_getitem"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Let(Expr):
    var: Var
    value: Expr
    body: Expr
    kind: ClassVar[str] = "let"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr
    kind: ClassVar[str] = "if"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Function(Expr):
    """`fn (params) -> ret_type { body }` with attributes (`Primitive`, `SkipOptimization`...)."""

    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    type_params: tuple[Type, ...] = ()
    attrs: Attrs = EMPTY_ATTRS
    kind: ClassVar[str] = "function"

    def __post_init__(self) -> None:
        Expr.__post_init__(self)
        if not isinstance(self.params, tuple):
            object.__setattr__(self, "params", tuple(self.params))
        if not isinstance(self.type_params, tuple):
            object.__setattr__(self, "type_params", tuple(self.type_params or ()))
        if not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", make_attrs(self.attrs))

    def with_attr(self, key: str, value: Any) -> Function:
        from dataclasses import replace

        return replace(self, attrs=self.attrs.replace(**{key: value}))

    def with_attrs(self, attrs: dict[str, Any]) -> Function:
        from dataclasses import replace

        return replace(self, attrs=self.attrs.replace(**attrs))

    def without_attr(self, key: str) -> Function:
        from dataclasses import replace

        return replace(self, attrs=self.attrs.without(key))

    def is_primitive(self) -> bool:
        return int(self.attrs.get("Primitive", 0) or 0) == 1

    @property
    def func_type_annotation(self) -> Type:
        from engine.ir.type import FuncType, IncompleteType

        return FuncType([p.type_annotation or IncompleteType() for p in self.params],
                        self.ret_type or IncompleteType(), self.type_params)


BaseFunc = Function

DATAFLOW_KINDS = (Call, Tuple, TupleGetItem)
"""Node kinds whose children are traversed iteratively (chains of these can be 100k deep)."""

COMPUTING_KINDS: tuple[type[Expr], ...] = (Call, Tuple, TupleGetItem, Let, If, Constant)
"""Expressions that compute a value, the ones span coverage counts. Not variables, ops
or global names (they name things; parameters come from the model's inputs), nor
functions (a function is its body, whose expressions are counted)."""


def children(expr: Expr) -> Sequence[Expr]:
    """The direct sub-expressions of a node, in evaluation order."""
    return _CHILDREN[type(expr)](expr)


_CHILDREN: dict[type, Callable[[Any], Sequence[Expr]]] = {
    Var: lambda e: (),
    GlobalVar: lambda e: (),
    Constant: lambda e: (),
    Call: lambda e: (e.op, *e.args),
    Tuple: lambda e: e.fields,
    TupleGetItem: lambda e: (e.tuple_value,),
    Let: lambda e: (e.var, e.value, e.body),
    If: lambda e: (e.cond, e.true_branch, e.false_branch),
    Function: lambda e: (*e.params, e.body),
}


def register_children(cls: type, fn: Callable[[Any], Sequence[Expr]]) -> None:
    _CHILDREN[cls] = fn


def operands(expr: Expr) -> Sequence[Expr]:
    """The children a node consumes as values: `children` without a call's callee (an Op,
    a Function or a GlobalVar is not a value the call waits for)."""
    return expr.args if isinstance(expr, Call) else _CHILDREN[type(expr)](expr)


def as_tuple_of_exprs(values: Iterable[Expr]) -> tuple[Expr, ...]:
    return tuple(values)
