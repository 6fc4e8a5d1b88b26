"""SIBuilder: span collection over subgraphs and recursive filling, case by case."""

from __future__ import annotations

import pytest
from transform_testlib import call

from engine import relay
from engine.ir import UNKNOWN_SPAN, SequentialSpan, TensorType, layer_span
from engine.relay.expr_functor import post_order_visit
from engine.relay.si_builder import SIBuilder
from engine.transform import PassContext

S1, S2, S3 = layer_span("conv1"), layer_span("bn1"), layer_span("relu1")


def _spans(expr: relay.Expr) -> list[str]:
    out: list[str] = []
    post_order_visit(expr, lambda n: out.append(",".join(n.span.source_names()) or "-"))
    return out


def test_sequential_span_flattens_and_compares_elementwise() -> None:
    nested = SequentialSpan([S1, SequentialSpan([S2, S1]), UNKNOWN_SPAN, S3])
    assert nested == SequentialSpan([S1, S2, S3])
    assert nested != SequentialSpan([S2, S1, S3])
    assert nested.source_names() == ("conv1", "bn1", "relu1")


def test_lazy_name_on_relay() -> None:
    assert relay.SIBuilder is SIBuilder


def test_create_span_from_spans() -> None:
    assert SIBuilder(S1).CreateSpan() == S1
    assert SIBuilder([S1, S2, S1]).CreateSpan() == SequentialSpan([S1, S2])
    assert SIBuilder([S1, SequentialSpan([S2, S3])]).create_span() == SequentialSpan([S1, S2, S3])
    assert SIBuilder([S1]).CreateSpan() == S1
    assert SIBuilder().CreateSpan() == UNKNOWN_SPAN
    assert SIBuilder([]).CreateSpan() == UNKNOWN_SPAN


def test_create_span_of_subgraph_in_traversal_order_stops_at_inputs() -> None:
    x = relay.var("x", span=layer_span("input_x"))
    below = call("neg", x, span=layer_span("below"))
    a = call("relu", below, span=layer_span("inp"))        # an input
    c = relay.const(1.0, span=layer_span("const"))
    mid = call("add", a, c, span=layer_span("mid"))
    side = call("neg", c, span=layer_span("side"))
    entry = call("add", mid, side, span=layer_span("entry"))
    span = SIBuilder(entry, [a]).CreateSpan()
    # entry first, depth-first in evaluation order, the input included, nothing below it,
    # a shared node (the constant) once
    assert span.source_names() == ("entry", "mid", "inp", "const", "side")
    assert SIBuilder(entry, a).CreateSpan() == span  # a single input need not be a list
    whole = SIBuilder(entry).CreateSpan().source_names()
    assert whole == ("entry", "mid", "inp", "below", "input_x", "const", "side")


def test_fill_sets_span_between_entry_and_inputs_only() -> None:
    x, y = relay.var("x"), relay.var("y")
    inp = call("neg", call("relu", x), span=S1)
    c = relay.const(2.0)
    entry = call("relu", call("add", inp, c))
    new = SIBuilder(S3).RecursivelyFillSpan(entry, [inp])
    assert new is not entry
    assert new.span == S3 and new.args[0].span == S3     # relu and add filled
    assert new.args[0].args[1].span == S3                 # the constant too
    assert new.args[0].args[0] is inp                     # the input: same object
    assert inp.args[0].span == UNKNOWN_SPAN               # below the input: untouched
    assert new.op is entry.op and not new.op.span         # ops are never filled
    assert y.span == UNKNOWN_SPAN


def test_fill_never_rebuilds_vars_so_bindings_hold() -> None:
    x = relay.var("x")
    func = relay.Function([x], call("relu", call("neg", x)))
    new = SIBuilder(S2).fill(func)
    assert new.params[0] is x and new.body.args[0].args[0] is x
    assert new.span == S2 and new.body.span == S2 and x.span == UNKNOWN_SPAN


def test_fill_keeps_dag_sharing() -> None:
    x = relay.var("x")
    shared = call("relu", x)
    entry = call("add", shared, call("neg", shared))
    new = SIBuilder(S1).fill(entry)
    assert new.args[0] is new.args[1].args[0]
    assert _spans(new).count("conv1") == 3  # relu, neg, add: each once


def test_fill_without_overwrite_stops_at_spanned_nodes() -> None:
    x = relay.var("x")
    deep = call("neg", x)
    earlier = call("relu", deep, span=S1)      # an earlier layer's output
    entry = call("add", earlier, call("neg", x))
    new = SIBuilder(S2).fill(entry, overwrite=False)
    assert new.span == S2 and new.args[1].span == S2
    assert new.args[0] is earlier and earlier.args[0].span == UNKNOWN_SPAN
    overwritten = SIBuilder(S2).fill(entry)
    assert overwritten.args[0].span == S2 and overwritten.args[0].args[0].span == S2


def test_fill_returns_same_object_when_already_spanned() -> None:
    x = relay.var("x")
    entry = call("relu", call("neg", x, span=S1), span=S1)
    assert SIBuilder(S1).fill(entry) is entry


def test_fill_with_sequential_span_and_types_kept() -> None:
    x = relay.var("x")
    inner = call("neg", x)
    entry = call("relu", inner)
    ty = TensorType((2,), "float32")
    inner.set_checked_type(ty)
    entry.set_checked_type(ty)
    span = SIBuilder([S1, S2]).CreateSpan()
    new = SIBuilder(span).fill(entry)
    assert new.span == SequentialSpan([S1, S2])
    assert new.checked_type == ty and new.args[0].checked_type == ty


def test_fill_covers_let_if_tuple_and_functions() -> None:
    x, v, w = relay.var("x"), relay.var("v"), relay.var("w")
    inner_fn = relay.Function([w], call("neg", w))
    body = relay.Let(v, relay.Tuple([x, x]),
                     relay.Let(w, relay.TupleGetItem(v, 0),
                               relay.If(relay.const(True), relay.Call(inner_fn, [w]), w)))
    new = SIBuilder(S3).fill(body)
    kinds = []
    post_order_visit(new, lambda n: kinds.append((type(n).__name__, bool(n.span))))
    filled = {k for k, has in kinds if has}
    assert filled >= {"Let", "Tuple", "TupleGetItem", "If", "Call", "Function", "Constant"}
    assert all(not has for k, has in kinds if k in ("Var", "Op"))
    assert new.body.var is w and new.var is v


def test_two_builders_compose_like_a_pass_would() -> None:
    # A rewrite replacing relu(neg(x)) by abs-like neg(x): keep both sources on the new node.
    x = relay.var("x")
    old = call("relu", call("neg", x, span=S1), span=S2)
    replacement = call("neg", x)
    new = SIBuilder(old, [x]).fill(replacement, [x])
    assert new.span == SequentialSpan([S2, S1])
    assert new.args[0] is x


def test_disabled_by_config() -> None:
    x = relay.var("x")
    entry = call("relu", call("neg", x, span=S1))
    with PassContext(config={"ir.enable_si_builder": False}):
        off = SIBuilder(entry)
        assert off.CreateSpan() == UNKNOWN_SPAN
        assert SIBuilder(S1).CreateSpan() == UNKNOWN_SPAN
        assert SIBuilder(S2).fill(entry) is entry
    assert SIBuilder(entry).CreateSpan() == S1  # enabled by default


def test_fill_with_unknown_span_does_nothing() -> None:
    entry = call("relu", relay.var("x"), span=S1)
    assert SIBuilder().fill(entry) is entry


def test_argument_errors() -> None:
    with pytest.raises(TypeError):
        SIBuilder(S1, [relay.var("x")])
    with pytest.raises(TypeError):
        SIBuilder(["conv1"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        SIBuilder(S1).fill(call("relu", relay.var("x")), ["not an expr"])  # type: ignore[list-item]


def test_deep_chains_without_recursion() -> None:
    x = relay.var("x")
    node: relay.Expr = x
    for _ in range(100_000):
        node = call("neg", node)
    new = SIBuilder(S1).fill(node, [x])
    assert new.span == S1
    assert SIBuilder(new, [x]).CreateSpan() == S1
    lets: relay.Expr = x
    for i in range(20_000):
        lets = relay.Let(relay.var(f"v{i}"), call("neg", x), lets)
    filled = SIBuilder(S2).fill(lets)
    assert filled.span == S2 and filled.body.span == S2
