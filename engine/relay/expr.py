"""Relay expressions (re-exported from `engine.ir.expr`) and their constructors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

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
)
from engine.ir.span import UNKNOWN_SPAN, SpanLike
from engine.ir.type import TensorType, Type
from engine.runtime.ndarray import NDArray

ExprWithOp = Expr



def var(name_hint: str, type_annotation: Type | str | None = None, shape: Sequence[Any] | None = None,
        dtype: str = "float32", span: SpanLike = UNKNOWN_SPAN) -> Var:
    """`relay.var("x", shape=(1, 3), dtype="float32")`, as in TVM."""
    if isinstance(type_annotation, str):
        dtype, type_annotation = type_annotation, None
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(shape, dtype)
    elif type_annotation is None and shape is None and dtype != "float32":
        type_annotation = TensorType((), dtype)
    return Var(name_hint, type_annotation, span=span)


def const(value: Any, dtype: str | None = None, span: SpanLike = UNKNOWN_SPAN) -> Constant:
    """A constant from a Python scalar, list, numpy array or NDArray.

    As in TVM, Python floats default to float32 and ints to int32.
    """
    if isinstance(value, NDArray):
        if dtype is None or value.dtype == dtype:
            return Constant(value, span=span)  # shared, a lazy one unread
        value = value.numpy()
    if isinstance(value, np.ndarray):
        arr = value.astype(dtype, copy=False) if dtype is not None else value
    else:
        if dtype is None:
            probe = np.asarray(value)
            if probe.dtype == np.float64:
                dtype = "float32"
            elif probe.dtype == np.int64:
                dtype = "int32"
        arr = np.asarray(value, dtype=dtype)
    return Constant(NDArray(arr), span=span)


def bind(expr: Expr, binds: dict[Var, Expr]) -> Expr:
    """Substitute variables (TVM's relay.bind); on a Function, bound params are dropped."""
    from engine.relay.analysis import bind_vars

    return bind_vars(expr, binds)


__all__ = [
    "Call", "Constant", "Expr", "ExprWithOp", "Function", "GlobalVar", "If", "Let", "Tuple",
    "TupleGetItem", "Var", "bind", "const", "var",
]
