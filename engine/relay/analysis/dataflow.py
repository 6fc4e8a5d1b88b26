"""The dataflow view of a function body: what each value-producing node reads.

A call reads its arguments (not its callee: a fused function's body is its
own graph), a tuple its fields, a tuple-get-item its tuple. Vars, constants,
lets, ifs and functions read nothing here: graph codegen and numerics taps
walk only straight-line dataflow and reject the rest themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.ir.expr import Expr, Function, If, Let, operands
from engine.ir.traversal import post_order

_SCOPES = (Let, If, Function)


def dataflow_operands(expr: Expr) -> Sequence[Expr]:
    """The values `expr` reads (see module docstring): the IR's `operands`, stopping at
    the nodes that open a scope."""
    return () if isinstance(expr, _SCOPES) else operands(expr)


def dataflow_post_order(root: Expr) -> list[Expr]:
    """Every node `root` reads, transitively, producers first (iterative)."""
    return post_order(root, dataflow_operands)


__all__ = ["dataflow_operands", "dataflow_post_order"]
