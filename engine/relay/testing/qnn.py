"""Small helpers for building and inspecting QNN graphs in tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.ir.expr import Call, Constant, Expr
from engine.ir.module import IRModule
from engine.ir.traversal import post_order
from engine.runtime.ndarray import NDArray


def f32(value: Any) -> Constant:
    """A float32 constant (a scale)."""
    return Constant(NDArray(np.asarray(value, "float32")))


def i32(value: Any) -> Constant:
    """An int32 constant (a zero point)."""
    return Constant(NDArray(np.asarray(value, "int32")))


def op_names(expr: IRModule | Expr) -> list[str]:
    """The op names of every call, in post order."""
    body = expr["main"].body if isinstance(expr, IRModule) else expr
    return [n.op.name for n in post_order(body) if isinstance(n, Call) and hasattr(n.op, "name")]


__all__ = ["f32", "i32", "op_names"]
