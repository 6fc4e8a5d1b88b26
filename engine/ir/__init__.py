"""The IR core: spans, types, attrs, expression nodes, IRModule, structural comparison.

Mirrors `tvm.ir`: `tvm.ir.Span`, `tvm.ir.SourceName`, `tvm.ir.SequentialSpan`,
`tvm.ir.structural_equal`, `tvm.ir.assert_structural_equal`, `tvm.IRModule`.
"""

from engine.ir.attrs import Attrs, DictAttrs, make_attrs
from engine.ir.errors import (
    ConfigError,
    DiagnosticError,
    EngineError,
    FrontendError,
    ParseError,
    PassError,
    StructuralMismatchError,
    TypeInferenceError,
    UnsupportedOperatorError,
)
from engine.ir.expr import BaseExpr, BaseFunc, Expr, GlobalVar, RelayExpr
from engine.ir.module import IRModule
from engine.ir.op import Op, register_op, register_op_attr
from engine.ir.span import (
    UNKNOWN_SPAN,
    SequentialSpan,
    SourceName,
    Span,
    SpanLike,
    layer_span,
    merge_spans,
)
from engine.ir.structural import (
    assert_structural_equal,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
)
from engine.ir.type import (
    AnyDim,
    FuncType,
    IncompleteType,
    TensorType,
    TupleType,
    Type,
)

__all__ = [
    "UNKNOWN_SPAN", "AnyDim", "Attrs", "BaseExpr", "BaseFunc", "ConfigError", "DiagnosticError",
    "DictAttrs", "EngineError", "Expr", "FrontendError", "FuncType", "GlobalVar", "IRModule",
    "IncompleteType", "Op", "ParseError", "PassError", "RelayExpr", "SequentialSpan",
    "SourceName", "Span", "SpanLike", "StructuralMismatchError", "TensorType", "TupleType",
    "Type", "TypeInferenceError", "UnsupportedOperatorError", "assert_structural_equal",
    "get_first_structural_mismatch", "layer_span", "make_attrs", "merge_spans", "register_op",
    "register_op_attr", "structural_equal", "structural_hash",
]

