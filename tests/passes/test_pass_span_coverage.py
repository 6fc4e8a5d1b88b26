"""relay.analysis.span_coverage: ratio, total, missing."""

from __future__ import annotations

from passes_helpers import named

import engine as tvm
from engine import relay
from engine.ir import layer_span
from engine.ir.expr import COMPUTING_KINDS
from engine.relay.analysis import SpanCoverage, span_coverage
from engine.relay.printer import print_ir


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
    inner = relay.exp(p)
    prim = relay.Function([p], inner).with_attr("Primitive", 1)
    x = relay.var("x", shape=(2,))
    call = named(relay.Call(prim, (x,)), "fused")
    cov = span_coverage(relay.Function([x], call))
    # the call and the exp inside the fused function; a function is not itself counted
    assert cov.total == 2 and cov.missing == [inner]


def test_computing_kinds_are_declared_once():
    expected = (relay.Call, relay.Tuple, relay.TupleGetItem, relay.Let, relay.If,
                relay.Constant)
    assert expected == COMPUTING_KINDS


def test_source_map_table_counts_as_the_analysis_does():
    p = relay.var("p", shape=(2,))
    prim = relay.Function([p], relay.exp(p)).with_attr("Primitive", 1)
    x = relay.var("x", shape=(2,))
    shared = named(relay.add(x, relay.const(1.0)), "add")  # printed once, used twice (refs)
    pair = relay.Tuple([relay.Call(prim, (shared,)), shared])
    mod = tvm.IRModule.from_expr(relay.Function([x], named(relay.TupleGetItem(pair, 0), "get")))
    table = print_ir(mod, show_types=True).source_map_table()
    cov = span_coverage(mod)
    assert table.span_coverage() == (cov.ratio, cov.total)
    assert cov.total == 6  # add, const, call, exp, tuple, getitem
    assert print_ir(tvm.IRModule()).source_map_table().span_coverage() == (1.0, 0)


def test_available_as_relay_analysis():
    assert relay.analysis.span_coverage is span_coverage
