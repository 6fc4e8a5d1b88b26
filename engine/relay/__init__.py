"""Relay: the high-level IR, its ops, passes, frontends and build (TVM's `tvm.relay`)."""

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
from engine.ir.type import Any, AnyDim, FuncType, IncompleteType, TensorType, TupleType, Type
from engine.relay import analysis
from engine.relay.expr import ExprWithOp, TupleWrapper, bind, const, var
from engine.relay.expr_functor import ExprFunctor, ExprMutator, ExprVisitor
from engine.relay.scope_builder import ScopeBuilder
from engine.relay.with_fields import (
    CallWithFields,
    FunctionWithFields,
    IfWithFields,
    LetWithFields,
    TupleGetItemWithFields,
    TupleWithFields,
    VarWithFields,
)

__all__ = [
    "Any", "AnyDim", "Call", "CallWithFields", "Constant", "Expr", "ExprFunctor", "ExprMutator",
    "ExprVisitor", "ExprWithOp", "FuncType", "Function", "FunctionWithFields", "GlobalVar", "If",
    "IfWithFields", "IncompleteType", "Let", "LetWithFields", "ScopeBuilder", "TensorType",
    "Tuple", "TupleGetItem", "TupleGetItemWithFields", "TupleType", "TupleWithFields",
    "TupleWrapper", "Type", "Var", "VarWithFields", "analysis", "bind", "const", "var",
]
