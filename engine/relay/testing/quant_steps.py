"""Quantization steps (LSBs) of a module's outputs, to measure numerics error in them.

An integer output's step is 1: its error in steps is the integer difference. A float
output produced by a dequantize (`qnn.dequantize`, or the importers' composed form
`multiply(cast(int x), scale)`) has that dequantize's scale as its step: its error in steps
is the float error divided by the scale (per channel for a per-axis scale). Any other
float output has no step (None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.ir import IRModule
from engine.ir.expr import Call, Constant, Expr, Tuple, Var
from engine.ir.op import Op
from engine.ir.type import TensorType

LSB_TOLERANCE = 1.0
"""A quantized output matches when within one step (the issue's acceptance: exact for
integers, or within one quantization step with the reason stated)."""


STEP_DIGITS = 4
"""Errors in steps are rounded to 1e-4 step: a dequantized float32 value (q - zp) * scale is
itself rounded, by up to |q - zp| * 2**-24 steps (< 2e-5 for 8-bit q), so an error of
exactly k steps reads k, not k + 1e-5."""


def _is_integer(expr: Expr) -> bool:
    ty = expr._checked_type
    return isinstance(ty, TensorType) and np.dtype(ty.dtype).kind in "iu"


def _value(expr: Expr, params: dict[str, Any]) -> np.ndarray | None:
    if isinstance(expr, Constant):
        return expr.data.numpy()
    if isinstance(expr, Var) and expr.name_hint in params:
        value = params[expr.name_hint]
        return value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    return None


def _op_name(expr: Expr) -> str | None:
    return expr.op.name if isinstance(expr, Call) and isinstance(expr.op, Op) else None


def _along(scale: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-axis scale shaped to broadcast against an output of rank `ndim`."""
    if scale.ndim == 0 or scale.size == 1:
        return scale.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = scale.size
    return scale.reshape(shape)


def _rank(expr: Expr) -> int:
    ty = expr._checked_type
    return len(ty.shape) if isinstance(ty, TensorType) else 0


def _dequantize_scale(expr: Expr, params: dict[str, Any]) -> np.ndarray | None:
    if _op_name(expr) == "qnn.dequantize":
        assert isinstance(expr, Call)
        scale = _value(expr.args[1], params)
        axis = int(expr.attrs.get("axis", -1))
        return None if scale is None else _along(scale, axis, _rank(expr))
    if _op_name(expr) == "multiply":
        assert isinstance(expr, Call)
        for data, scale_expr in (expr.args, expr.args[::-1]):
            if _op_name(data) == "cast" and _is_integer(data.args[0]):  # type: ignore[attr-defined]
                scale = _value(scale_expr, params)
                if scale is not None:
                    return scale
    return None


def _outputs(body: Expr) -> list[Expr]:
    if isinstance(body, Tuple):
        return [leaf for field in body.fields for leaf in _outputs(field)]
    return [body]


def output_steps(mod: IRModule, params: dict[str, Any]) -> list[np.ndarray | None]:
    """Per flattened output of main (a typed module), its step: 1 for an integer output,
    the scale of the dequantize that produced a float one, None otherwise."""
    steps: list[np.ndarray | None] = []
    for out in _outputs(mod["main"].body):
        if _is_integer(out):
            steps.append(np.ones(()))
        else:
            steps.append(_dequantize_scale(out, params))
    return steps


def max_step_error(outs: Sequence[np.ndarray], refs: Sequence[np.ndarray],
                   steps: Sequence[np.ndarray | None]) -> float | None:
    """The largest error in steps over the outputs that have one; None when none has."""
    worst: float | None = None
    for out, ref, step in zip(outs, refs, steps, strict=True):
        if step is None or out.shape != ref.shape or out.size == 0:
            continue
        diff = np.abs(out.astype(np.float64) - ref.astype(np.float64)) / np.abs(step)
        err = round(float(np.max(diff)), STEP_DIGITS)
        worst = err if worst is None else max(worst, err)
    return worst
