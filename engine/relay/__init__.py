"""Relay: the high-level IR, its ops, passes, frontends and build (TVM's `tvm.relay`).

Heavy or optional parts (frontends, the interpreter, the build) load on first use.
"""

from engine._lazy import lazy_getattr
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
from engine.relay import (  # printer: registers the IR's text printer
    analysis,
    printer,
    qnn,  # registers the QNN dialect (relay.qnn.op, relay.qnn.transform)
)
from engine.relay.expr import ExprWithOp, bind, const, var
from engine.relay.expr_functor import ExprFunctor, ExprMutator, ExprVisitor
from engine.relay.op import *  # noqa: F403  (relay.add, relay.nn, relay.image, ...)
from engine.relay.printer import astext
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

# name -> (module, attribute or None for the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "op": ("engine.relay.op", None),
    "transform": ("engine.relay.transform", None),
    "frontend": ("engine.relay.frontend", None),
    "parser": ("engine.relay.parser", None),
    "fromtext": ("engine.relay.parser", "parse"),
    "parse": ("engine.relay.parser", "parse"),
    "SIBuilder": ("engine.relay.si_builder", "SIBuilder"),
    "create_executor": ("engine.relay.interpreter", "create_executor"),
    "interpreter": ("engine.relay.interpreter", None),
    "build": ("engine.relay.backend.build_module", "build"),
    "optimize": ("engine.relay.backend.build_module", "optimize"),
    "build_module": ("engine.relay.backend.build_module", None),
    "testing": ("engine.relay.testing", None),
}


__getattr__ = lazy_getattr("engine.relay", _LAZY, globals())


__all__ = [
    "Any", "AnyDim", "Call", "CallWithFields", "Constant", "Expr", "ExprFunctor", "ExprMutator",
    "ExprVisitor", "ExprWithOp", "FuncType", "Function", "FunctionWithFields", "GlobalVar", "If",
    "IfWithFields", "IncompleteType", "Let", "LetWithFields", "ScopeBuilder", "TensorType",
    "Tuple", "TupleGetItem", "TupleGetItemWithFields", "TupleType", "TupleWithFields",
    "Type", "Var", "VarWithFields", "analysis", "astext", "bind", "const", "printer", "qnn",
    "var",
]
