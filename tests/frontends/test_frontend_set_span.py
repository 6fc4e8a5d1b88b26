"""set_span semantics (the span-filling RFC) on hand-built IR."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.span import SequentialSpan, layer_span
from engine.relay.analysis import post_order_visit
from engine.relay.frontend.common import LayerNamer, fill_span_enabled, set_span
from engine.transform import PassContext


def _names(expr) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    post_order_visit(expr, lambda n: out.append((type(n).__name__, n.span.source_names()))
                     if not isinstance(n, relay.op.Op) else None)
    return out


def test_fills_every_new_expression_with_the_layer_name() -> None:
    x = relay.var("x", shape=(1, 4))
    w = relay.const(np.ones((4, 4), "float32"))
    out = set_span(relay.nn.relu(relay.nn.dense(x, w)), "fc1")
    assert out.span == layer_span("fc1")
    assert out.args[0].span == layer_span("fc1")
    assert out.args[0].args[1].span == layer_span("fc1")  # the weight too
    assert out.args[0].args[0].span == layer_span("fc1")  # an unspanned var as well


def test_stops_at_expressions_that_already_have_a_span() -> None:
    x = relay.var("x", shape=(1, 4))
    first = set_span(relay.nn.relu(x), "relu1")
    second = set_span(relay.add(first, relay.const(1.0)), "add1")
    assert second.args[0] is first  # same object: not copied, not renamed
    assert first.span == layer_span("relu1")
    assert second.args[1].span == layer_span("add1")


def test_one_to_many_conversion_tags_all_and_duplicates_nothing() -> None:
    x = relay.var("x", shape=(4, 6))
    parts = relay.split(x, indices_or_sections=3, axis=1)
    outputs = [parts[0], parts[1], parts[2]]
    filled = set_span(outputs, "split")
    assert isinstance(filled, list) and len(filled) == 3
    shared = {id(item.tuple_value) for item in filled}
    assert len(shared) == 1  # the split call is rebuilt once, shared by the three items
    assert all(item.span == layer_span("split") for item in filled)
    assert filled[0].tuple_value.span == layer_span("split")


def test_nested_tuples_lists_and_none() -> None:
    a = relay.var("a", shape=(2,))
    b = relay.exp(a)
    filled = set_span((b, [relay.negative(a), None], 3), "layer")
    assert filled[0].span == layer_span("layer")
    assert filled[1][0].span == layer_span("layer")
    assert filled[1][1] is None and filled[2] == 3
    # the var shared by both parts is rebuilt once
    assert filled[0].args[0] is filled[1][0].args[0]


def test_relay_tuple_and_function() -> None:
    x = relay.var("x", shape=(2,))
    tup = relay.Tuple([relay.exp(x), relay.log(x)])
    func = relay.Function([x], relay.TupleGetItem(tup, 1))
    filled = set_span(func, "block")
    assert filled.span == layer_span("block")
    assert all(names == ("block",) for _, names in _names(filled))


def test_accepts_span_objects_and_bytes() -> None:
    x = relay.var("x", shape=(2,))
    seq = SequentialSpan([layer_span("a"), layer_span("b")])
    assert set_span(relay.exp(x), seq).span == seq
    assert set_span(relay.exp(x), b"bytes_name").span == layer_span("bytes_name")
    with pytest.raises(TypeError):
        set_span(relay.exp(x), 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        set_span({"not": "an expr"}, "name")


def test_disabled_by_pass_context_config() -> None:
    x = relay.var("x", shape=(2,))
    call = relay.exp(x)
    with PassContext(config={"relay.frontend.fill_span": False}):
        assert not fill_span_enabled()
        assert set_span(call, "ignored") is call
    assert set_span(call, "used").span == layer_span("used")


def test_disabled_by_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    x = relay.var("x", shape=(2,))
    call = relay.exp(x)
    monkeypatch.setenv("EXPLORER_SPANFILLING", "0")
    assert set_span(call, "ignored") is call
    monkeypatch.setenv("EXPLORER_SPANFILLING", "1")
    assert set_span(call, "used").span == layer_span("used")


def test_a_deep_chain_fills_without_recursion() -> None:
    x = relay.var("x", shape=(2,))
    y = x
    for _ in range(20000):
        y = relay.negative(y)
    filled = set_span(y, "chain")
    count = []
    post_order_visit(filled, lambda n: count.append(n.span.source_names()))
    assert ("chain",) in count and len([c for c in count if c == ("chain",)]) == 20001


def test_layer_namer_generates_unique_names() -> None:
    namer = LayerNamer(["Conv_0", "relu_a"])
    assert namer.name("relu_a", "Relu") == "relu_a"
    assert namer.name("", "Conv") == "Conv_1"  # Conv_0 is taken by the model
    assert namer.name("", "Conv") == "Conv_2"
    assert namer.name("", "Relu") == "Relu_0"
