"""Span coverage: the share of expressions that know where they came from.

Counted: every computing expression (`engine.ir.expr.COMPUTING_KINDS`: calls,
tuples, projections, constants, lets, ifs) reachable from the module's functions
(or from one expression), nested function bodies included, each node once. Not
counted: variables, global names and operators (they name things rather than
compute them; a function's parameters come from the model's inputs) and
functions themselves. The printer's source map counts the same way
(`SourceMapTable.span_coverage`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.ir.expr import COMPUTING_KINDS, Expr, Function
from engine.ir.module import IRModule
from engine.ir.traversal import post_order


@dataclass(frozen=True)
class SpanCoverage:
    """`ratio` = known / total (1.0 for an empty module); `missing` lists the nodes
    without a span, in post-order."""

    ratio: float
    total: int
    missing: list[Expr] = field(default_factory=list)

    @property
    def covered(self) -> int:
        return self.total - len(self.missing)

    def __str__(self) -> str:
        return f"span coverage {self.ratio:.1%} ({self.covered}/{self.total})"


def span_coverage(mod_or_expr: IRModule | Expr) -> SpanCoverage:
    roots: list[Expr]
    if isinstance(mod_or_expr, IRModule):
        roots = [f.body if isinstance(f, Function) else f for _, f in mod_or_expr.items()]
    elif isinstance(mod_or_expr, Function):
        roots = [mod_or_expr.body]
    else:
        roots = [mod_or_expr]
    total = 0
    missing: list[Expr] = []
    seen: set[int] = set()
    for root in roots:
        for node in post_order(root):
            if not isinstance(node, COMPUTING_KINDS) or id(node) in seen:
                continue
            seen.add(id(node))
            total += 1
            if not node.span:
                missing.append(node)
    ratio = 1.0 if total == 0 else (total - len(missing)) / total
    return SpanCoverage(ratio, total, missing)


__all__ = ["SpanCoverage", "span_coverage"]
