"""Operator registration helpers with TVM's names (`tvm.relay.op.op`).

An op is declared once with `define_op`: its argument names, attrs type key,
type relation (`FTVMTypeRelation`), fusion pattern (`TOpPattern`), statefulness
(`TOpIsStateful`) and numpy reference implementation (`FNumpyCompute`).
Constructors build calls with `make_call`, so every call carries attrs with
TVM's type key, every omitted attribute filled from `attrs_defaults` (the table the
parser fills from too), and the parser can rebuild them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from engine.ir.attrs import EMPTY_ATTRS, Attrs
from engine.ir.errors import TypeInferenceError
from engine.ir.expr import Call, Expr
from engine.ir.op import Op, register_op, register_op_attr
from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.ir.type import Type
from engine.relay.op.attrs_defaults import fill_defaults


class OpPattern:
    """Fusion patterns (TVM's `relay.op.OpPattern`)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_ELEMWISE_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
TUPLE = OpPattern.TUPLE
OPAQUE = OpPattern.OPAQUE

TypeRelation = Callable[[Sequence[Type], Attrs], Type]
NumpyCompute = Callable[[list[np.ndarray], Attrs], Any]
InplaceCompute = NumpyCompute
"""Like `NumpyCompute`, writing into `args[0]`; None when it cannot."""


class TypeRelationError(TypeInferenceError):
    """A type relation rejected its arguments. Carries what InferType needs to locate it."""

    def __init__(self, message: str, *, arg: int | None = None, expected: str = "",
                 actual: str = "") -> None:
        self.detail = message
        self.arg = arg
        self.expected = expected
        self.actual = actual
        self.op_name = ""
        self.arg_name = ""
        super().__init__(message)

    def located(self, op_name: str, arg_names: Sequence[str]) -> TypeRelationError:
        """Name the op and the argument in the message."""
        self.op_name = op_name
        if self.arg is not None:
            self.arg_name = arg_names[self.arg] if self.arg < len(arg_names) else f"arg{self.arg}"
        where = f"{op_name}"
        if self.arg_name:
            where += f", argument {self.arg_name!r}"
        text = f"{where}: {self.detail}"
        if self.expected or self.actual:
            text += f" (expected {self.expected}, got {self.actual})"
        self.args = (text,)
        return self


def _located_relation(name: str, arg_names: tuple[str, ...], rel: TypeRelation) -> TypeRelation:
    def relation(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        try:
            return rel(arg_types, attrs)
        except TypeRelationError as err:
            if err.op_name:
                raise
            raise err.located(name, arg_names) from None

    relation.__name__ = f"{name}_rel"
    relation.__wrapped__ = rel  # type: ignore[attr-defined]
    return relation


def define_op(name: str, arg_names: Sequence[str], type_rel: TypeRelation, pattern: int,
              compute: NumpyCompute, *, attrs_type_key: str = "DictAttrs",
              num_inputs: int | None = None, stateful: bool = False,
              description: str = "") -> Op:
    """Register `name` with everything the engine needs to type, fuse and evaluate it."""
    arg_names = tuple(arg_names)
    count = len(arg_names) if num_inputs is None else num_inputs
    op = register_op(name, num_inputs=count, arg_names=arg_names, description=description,
                     attrs_type_key=attrs_type_key, override=True)
    register_op_attr(name, "FTVMTypeRelation", _located_relation(name, arg_names, type_rel))
    register_op_attr(name, "TOpPattern", pattern)
    register_op_attr(name, "TOpIsStateful", stateful)
    register_op_attr(name, "FNumpyCompute", compute)
    return op


def register_pattern(op_name: str, pattern: int, level: int = 10) -> Any:
    return register_op_attr(op_name, "TOpPattern", pattern, level)


def register_stateful(op_name: str, stateful: bool, level: int = 10) -> Any:
    return register_op_attr(op_name, "TOpIsStateful", stateful, level)


def register_compute(op_name: str, compute: NumpyCompute | None = None, level: int = 10) -> Any:
    """Set the numpy reference implementation (usable as a decorator)."""
    return register_op_attr(op_name, "FNumpyCompute", compute, level)


def register_inplace(op_name: str, compute: InplaceCompute | None = None, level: int = 10
                     ) -> Any:
    """Set an evaluation that writes the result into the first argument and returns it, or
    returns None when it cannot (then `FNumpyCompute` runs). The interpreter calls it only
    for an argument nothing else holds any more (its last use, no other reference)."""
    return register_op_attr(op_name, "FNumpyInplace", compute, level)


def register_type_rel(op_name: str, rel: TypeRelation | None = None, level: int = 10) -> Any:
    return register_op_attr(op_name, "FTVMTypeRelation", rel, level)


def register_infer_correct_layout(op_name: str, fn: Any = None, level: int = 10) -> Any:
    return register_op_attr(op_name, "FInferCorrectLayout", fn, level)


def get(op_name: str) -> Op:
    return Op.get(op_name)


def make_call(name: str, args: Sequence[Expr], attrs: Mapping[str, Any] | None = None,
              type_key: str = "DictAttrs", span: SpanLike = UNKNOWN_SPAN) -> Call:
    """`Call(Op.get(name), args, Attrs(attrs, type_key))`, omitted attributes filled with
    their declared defaults."""
    return Call(Op.get(name), tuple(args), op_attrs(name, attrs or {}, type_key), span=span)


def op_attrs(op_name: str, attrs: Mapping[str, Any], type_key: str) -> Attrs:
    """The attrs of a call to `op_name`: `attrs` with every omitted default of `type_key`
    filled (`attrs_defaults`); an attribute the type does not declare is a KeyError."""
    if type_key == "DictAttrs" and not attrs:
        return EMPTY_ATTRS
    return Attrs(fill_defaults(type_key, attrs, op_name), type_key=type_key)
