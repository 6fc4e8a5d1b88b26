"""relay.analysis.span_coverage: ratio, total, missing."""

from __future__ import annotations

from passes_helpers import named

import engine as tvm
from engine import relay
from engine.ir import layer_span
from engine.relay.analysis import SpanCoverage, span_coverage


def test_counts_computing_expressions_only():
    x = relay.var("x", shape=(2,))
    spanned = named(relay.exp(x), "exp")
    bare = relay.add(spanned, relay.const(1.0, span=layer_span("c")))
    cov = span_coverage(tvm.IRModule.from_expr(relay.Function([x], bare)))
    assert isinstance(cov, SpanCoverage)
    assert cov.total == 3  # exp, constant, add: not the var, the ops or main itself
    assert cov.missing == [bare]
    assert abs(cov.ratio - 2 / 3) < 1e-12
    assert cov.covered == 2 and "66.7%" in str(cov)


def test_full_coverage_and_empty_module():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], named(relay.exp(x), "exp"))
    assert span_coverage(f).ratio == 1.0
    assert span_coverage(tvm.IRModule()).ratio == 1.0
    assert span_coverage(tvm.IRModule()).total == 0


def test_nested_function_bodies_are_counted():
    p = relay.var("p", shape=(2,))
    prim = relay.Function([p], relay.exp(p)).with_attr("Primitive", 1)
    x = relay.var("x", shape=(2,))
    call = named(relay.Call(prim, (x,)), "fused")
    cov = span_coverage(relay.Function([x], call))
    assert cov.total == 3 and len(cov.missing) == 2  # the function and the exp inside


def test_available_as_relay_analysis():
    assert relay.analysis.span_coverage is span_coverage
