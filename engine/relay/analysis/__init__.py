"""Analyses over Relay expressions (TVM's `relay.analysis`)."""

from engine.relay.analysis.vars import (
    all_vars,
    bind_vars,
    bound_vars,
    count_nodes,
    free_vars,
)
from engine.relay.expr_functor import post_order_visit

__all__ = ["all_vars", "bind_vars", "bound_vars", "count_nodes", "free_vars", "post_order_visit"]
from engine.relay.analysis.span_coverage import SpanCoverage as SpanCoverage, span_coverage as span_coverage  # noqa: I001
