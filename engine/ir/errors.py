"""One hierarchy of typed, located errors for the whole engine."""

from __future__ import annotations

from collections.abc import Sequence


class EngineError(RuntimeError):
    """Base of every error the engine raises on purpose: TVM's `tvm.error.TVMError`, a
    RuntimeError as in TVM."""


class DiagnosticError(EngineError):
    """An error at a place in a text: shows the source line with a caret."""

    def __init__(self, message: str, *, source: str = "", line: int = 0, column: int = 0,
                 source_name: str = "<string>") -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.source_name = source_name
        super().__init__(self._render())

    def _render(self) -> str:
        if not self.line:
            return self.message
        lines = self.source.splitlines()
        where = f"{self.source_name}:{self.line}:{self.column}: {self.message}"
        if self.line > len(lines):
            return where
        text = lines[self.line - 1]
        caret = " " * max(self.column - 1, 0) + "^"
        return f"{where}\n  {text}\n  {caret}"


class ParseError(DiagnosticError):
    """The Relay text could not be parsed."""


class TypeInferenceError(EngineError):
    """InferType found an ill-typed expression; the message names op, argument and span."""


class StructuralMismatchError(EngineError, AssertionError):
    """assert_structural_equal found a difference; the message names the first one."""


class FrontendError(EngineError):
    """A frontend could not import a model (corrupt file, unsupported operators...)."""


class UnsupportedOperatorError(FrontendError):
    """The model uses operators the frontend cannot convert; all of them are listed."""

    def __init__(self, frontend: str, ops: dict[str, int], where: Sequence[str] = ()) -> None:
        """`ops`: op name -> count; `where`: optional lines, one per op, such as
        "unsupported: CastLike (ai.onnx, opset 21) at node 'cast_1'"."""
        self.frontend = frontend
        self.ops = dict(ops)
        self.where = tuple(where)
        listing = ", ".join(f"{name} (x{count})" for name, count in sorted(ops.items()))
        lines = [f"{frontend}: unsupported operators: {listing}", *self.where]
        super().__init__("\n".join(lines))


class PassError(EngineError):
    """A pass raised: names the pass and the passes that ran before it."""

    def __init__(self, pass_name: str, passes_before: list[str], cause: BaseException) -> None:
        self.pass_name = pass_name
        self.passes_before = list(passes_before)
        self.cause = cause
        before = ", ".join(passes_before[-8:]) if passes_before else "none"
        if len(passes_before) > 8:
            before = "..., " + before
        super().__init__(
            f"pass {pass_name!r} failed: {type(cause).__name__}: {cause} "
            f"(passes run before it: {before})"
        )


class ConfigError(EngineError, ValueError):
    """A PassContext config key is unknown or has the wrong type."""
