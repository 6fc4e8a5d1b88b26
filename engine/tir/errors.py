"""Errors of the TIR layer, under the engine's one hierarchy."""

from __future__ import annotations

from engine.ir.errors import EngineError


class TIRError(EngineError):
    """A TIR expression or statement is malformed (bad operand, unknown intrinsic...)."""


class EvalError(TIRError):
    """The loop-nest evaluator could not run a PrimFunc (missing buffer, bad shape...)."""
