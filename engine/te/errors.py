"""Errors of the tensor-expression layer, under the engine's one hierarchy."""

from __future__ import annotations

from engine.ir.errors import EngineError


class TEError(EngineError):
    """A tensor expression is malformed (bad shape, misplaced reduction...)."""


class ScheduleError(TEError):
    """A schedule primitive was applied to something it cannot transform."""


class LoweringError(TEError):
    """A schedule could not be lowered to a loop nest (unbound tensor, bad attach...)."""
