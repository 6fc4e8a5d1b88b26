"""TVM's `tvm.error`: the engine's error classes under TVM's names.

    try:
        relay.transform.InferType()(mod)
    except tvm.error.TVMError as err:   # a RuntimeError, as in TVM
        ...

Every error the engine raises on purpose is a `TVMError` (our `EngineError`);
`DiagnosticError` is the located kind the parser raises (`ParseError`), and
`OpNotImplemented` the one a frontend raises for operators it cannot convert.
"""

from engine.ir.errors import DiagnosticError, EngineError, UnsupportedOperatorError

TVMError = EngineError
OpNotImplemented = UnsupportedOperatorError

__all__ = ["DiagnosticError", "OpNotImplemented", "TVMError"]
