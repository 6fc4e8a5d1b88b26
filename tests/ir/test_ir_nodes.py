"""The IR core: every node kind, spans, types, attrs, IRModule, *WithFields, ScopeBuilder."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.ir import (
    UNKNOWN_SPAN,
    Attrs,
    IRModule,
    SequentialSpan,
    SourceName,
    Span,
    TensorType,
    TupleType,
    merge_spans,
)
from engine.ir.op import Op, register_op


@pytest.fixture(autouse=True)
def _ops() -> None:
    for name, n in (("nn.relu", 1), ("add", 2), ("negative", 1), ("multiply", 2)):
        register_op(name, num_inputs=n)


def test_every_node_kind_constructs_with_unknown_span_and_unique_id() -> None:
    x = relay.var("x", shape=(1, 3))
    c = relay.const(np.ones((1, 3), "float32"))
    call = relay.Call(Op.get("add"), [x, c])
    tup = relay.Tuple([call, x])
    item = relay.TupleGetItem(tup, 0)
    v = relay.var("v")
    let = relay.Let(v, item, v)
    ite = relay.If(relay.const(True), let, x)
    fn = relay.Function([x], ite)
    gv = relay.GlobalVar("main")
    nodes = [x, c, call, tup, item, let, ite, fn, gv, Op.get("add")]
    assert len({n.node_id for n in nodes}) == len(nodes)
    for node in nodes[:-1]:
        assert node.span is UNKNOWN_SPAN and not node.span
    assert call.args == (x, c) and isinstance(call.args, tuple)
    assert tup.fields[1] is x and item.index == 0
    assert fn.params == (x,) and fn.body is ite


def test_nodes_are_frozen_and_hashed_by_identity() -> None:
    a, b = relay.var("x"), relay.var("x")
    assert a != b and len({a, b}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.name_hint = "y"  # type: ignore[misc]


def test_replace_keeps_span_and_gives_a_new_id() -> None:
    x = relay.var("x")
    call = relay.Call(Op.get("nn.relu"), [x], span=Span(SourceName("relu1")))
    y = relay.var("y")
    new = dataclasses.replace(call, args=(y,))
    assert new.span == call.span and new.node_id != call.node_id and new.args == (y,)


def test_checked_type_must_be_inferred_first() -> None:
    x = relay.var("x", shape=(2,))
    with pytest.raises(ValueError, match="InferType"):
        _ = x.checked_type
    x.set_checked_type(TensorType((2,)))
    assert x.checked_type == TensorType((2,), "float32")


def test_var_and_const_constructors_follow_tvm() -> None:
    x = relay.var("x", shape=(1, relay.Any()), dtype="int64")
    assert x.type_annotation == TensorType((1, relay.Any()), "int64")
    assert str(x.type_annotation.shape[1]) == "?"
    assert relay.const(1.5).data.dtype == "float32"
    assert relay.const(3).data.dtype == "int32"
    assert relay.const([1, 2], "int64").data.numpy().tolist() == [1, 2]
    data = relay.const(np.zeros((2, 2))).data.numpy()
    with pytest.raises(ValueError):
        data[0, 0] = 1.0  # constants are read-only


def test_types_are_values() -> None:
    assert TensorType([1, 2]) == TensorType((1, 2), "float32")
    assert TensorType((1, 2)) != TensorType((1, 2), "float16")
    assert TupleType([TensorType((1,))]) == TupleType((TensorType((1,)),))
    assert hash(TensorType((3,))) == hash(TensorType((3,)))
    assert TensorType((2, 3)).concrete_shape == (2, 3)
    with pytest.raises(ValueError):
        _ = TensorType((relay.Any(),)).concrete_shape


def test_attrs_are_frozen_ordered_and_compared_by_value() -> None:
    a = Attrs({"strides": [1, 1], "padding": (0, 0, 0, 0), "layout": "NCHW"})
    assert a.strides == (1, 1) and a["layout"] == "NCHW" and list(a) == ["strides", "padding", "layout"]
    assert a == Attrs({"strides": (1, 1), "padding": [0, 0, 0, 0], "layout": "NCHW"})
    assert hash(a) == hash(Attrs({"strides": (1, 1), "padding": [0, 0, 0, 0], "layout": "NCHW"}))
    assert a != a.replace(layout="NHWC")
    assert Attrs({"flag": True}) != Attrs({"flag": 1})
    with pytest.raises(AttributeError):
        a.strides = (2, 2)
    with pytest.raises(AttributeError, match="nope"):
        _ = a.nope


def test_sequential_span_flattens_dedups_and_drops_unknown() -> None:
    s1, s2, s3 = (Span(SourceName(n)) for n in ("conv1", "bn1", "relu1"))
    nested = SequentialSpan([s1, SequentialSpan([s2, s1]), UNKNOWN_SPAN, s3])
    assert nested.spans == (s1, s2, s3)
    assert nested == SequentialSpan([s1, s2, s3])
    assert nested != SequentialSpan([s2, s1, s3])
    assert nested.source_names() == ("conv1", "bn1", "relu1")
    assert merge_spans([UNKNOWN_SPAN]) is UNKNOWN_SPAN
    assert merge_spans([s1, s1]) == s1
    assert merge_spans([s1, s2]) == SequentialSpan([s1, s2])
    assert bool(SequentialSpan([])) is False


def test_irmodule_mapping_api() -> None:
    x = relay.var("x", shape=(1,))
    mod = IRModule.from_expr(relay.Call(Op.get("nn.relu"), [x]))
    main = mod["main"]
    assert isinstance(main, relay.Function) and main.params == (x,)
    gv = mod.get_global_var("main")
    assert mod[gv] is main and "main" in mod and gv in mod
    other = relay.Function([x], x)
    mod2 = mod.shallow_copy()
    mod2["id"] = other
    assert "id" not in mod and mod2["id"] is other
    assert [g.name_hint for g in mod2.get_global_vars()] == ["main", "id"]
    mod.update(mod2)
    assert mod["id"] is other
    with pytest.raises(KeyError, match="no function named @missing"):
        _ = mod["missing"]
    same = mod.with_functions({gv: main})
    assert same is mod


def test_with_fields_returns_same_node_when_nothing_changes() -> None:
    x, y = relay.var("x"), relay.var("y")
    call = relay.Call(Op.get("add"), [x, y], span=Span(SourceName("add1")))
    assert relay.CallWithFields(call) is call
    assert relay.CallWithFields(call, args=[x, y]) is call
    new = relay.CallWithFields(call, args=[y, x])
    assert new is not call and new.args == (y, x) and new.span == call.span
    fn = relay.Function([x], x)
    assert relay.FunctionWithFields(fn, body=x) is fn
    let = relay.Let(x, y, x)
    assert relay.LetWithFields(let, body=y).body is y
    ite = relay.If(x, y, x, span=Span(SourceName("if1")))
    assert relay.IfWithFields(ite, cond=y).span == ite.span


def test_scope_builder_builds_let_and_if() -> None:
    sb = relay.ScopeBuilder()
    c = relay.var("c", shape=(), dtype="bool")
    a = sb.let("a", relay.const(1.0))
    with sb.if_scope(c):
        sb.ret(a)
    with sb.else_scope():
        sb.ret(relay.const(2.0))
    body = sb.get()
    assert isinstance(body, relay.Let) and body.var is a
    assert isinstance(body.body, relay.If) and body.body.true_branch is a


def test_operator_sugar_builds_calls() -> None:
    x, y = relay.var("x"), relay.var("y")
    assert (x + y).op is Op.get("add")
    assert (x * 2.0).args[1].data.dtype == "float32"
    assert (-x).op is Op.get("negative")
    assert isinstance(relay.Tuple([x, y])[1], relay.Var)


def test_unknown_op_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="not registered"):
        Op.get("nn.relux")


def test_top_level_namespaces_mirror_tvm() -> None:
    assert tvm.IRModule is IRModule
    assert tvm.ir.structural_equal is not None and tvm.nd.array(np.ones(2)).shape == (2,)
    with pytest.raises(AttributeError):
        _ = relay.no_such_thing


def test_numbered_from_gives_an_import_the_same_ids_in_every_fresh_process() -> None:
    import subprocess
    import sys

    code = ("from engine.ir.expr import numbered_from\n"
            "from engine.relay.parser import parse\n"
            "with numbered_from() as fresh:\n"
            "    mod = parse('def @main(%x: Tensor[(2), float32]) { nn.relu(add(%x, 1f)) }')\n"
            "print(fresh, mod['main'].node_id, mod['main'].body.node_id)\n")
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)]
    assert outs[0] == outs[1] and outs[0].startswith("True ")


def test_numbered_from_in_a_process_past_its_base_just_continues() -> None:
    from engine import relay
    from engine.ir.expr import numbered_from

    with numbered_from(1) as fresh:
        first = relay.var("x")
    later = relay.var("y")
    assert not fresh and later.node_id > first.node_id
