"""FoldConstant: Before / Expected, the edge cases of the issue, spans."""

from __future__ import annotations

import numpy as np
import pytest
from passes_helpers import check_golden, named, names, ops_in, run_opt_pass

import engine as tvm
from engine import relay
from engine.ir import SequentialSpan, assert_structural_equal, layer_span, register_op
from engine.ir.op import register_op_attr
from engine.relay.analysis import span_coverage


def fold(expr):
    return run_opt_pass(expr, relay.transform.FoldConstant())


def test_all_constant_call_is_evaluated():
    c_data = np.array([1, 2, 3], dtype="float32")
    x = relay.var("x", shape=(3,))

    def before():
        y = relay.add(relay.const(c_data), relay.const(c_data))
        y = relay.multiply(y, relay.const(2.0))
        return relay.Function([x], relay.add(x, y))

    def expected():
        return relay.Function([x], relay.add(x, relay.const((c_data + c_data) * 2)))

    assert_structural_equal(fold(before()), run_opt_pass(expected(), []))


def test_folded_constant_carries_every_consumed_span():
    w = relay.const(np.ones((4,), "float32"), span=layer_span("conv1.weight"))
    s = relay.const(np.full((4,), 3.0, "float32"), span=layer_span("bn1.scale"))
    x = relay.var("x", shape=(4,))
    f = relay.Function([x], named(relay.add(x, named(relay.multiply(w, s), "bn1")), "add"))
    out = fold(f)
    folded = out.body.args[1]
    assert isinstance(folded, relay.Constant)
    np.testing.assert_array_equal(folded.data.numpy(), np.full((4,), 3.0))
    assert names(folded) == ("bn1", "conv1.weight", "bn1.scale")
    assert span_coverage(out).ratio == 1.0


def test_unchanged_function_is_the_same_object():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    mod = relay.transform.InferType()(mod)
    assert relay.transform.FoldConstant()(mod) is mod


def test_let_bound_constant_is_propagated():
    x = relay.var("x", shape=(2,))
    v = relay.var("v")
    before = relay.Function([x], relay.Let(v, relay.add(relay.const(1.0), relay.const(2.0)),
                                           relay.add(x, v)))
    expected = relay.Function([x], relay.add(x, relay.const(3.0)))
    assert_structural_equal(fold(before), run_opt_pass(expected, []))


def test_let_with_non_constant_value_is_kept():
    x = relay.var("x", shape=(2,))
    v = relay.var("v")
    before = relay.Function([x], relay.Let(v, relay.nn.relu(x), relay.add(v, v)))
    out = fold(before)
    assert isinstance(out.body, relay.Let)
    assert_structural_equal(out, run_opt_pass(before, []))


def test_tuple_getitem_of_tuple_is_folded():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    before = relay.Function([x, y], relay.nn.relu(relay.TupleGetItem(relay.Tuple([x, y]), 1)))
    expected = relay.Function([x, y], relay.nn.relu(y))
    assert_structural_equal(fold(before), run_opt_pass(expected, []))


def test_tuple_result_of_constant_call_becomes_tuple_of_constants():
    c = relay.const(np.arange(6, dtype="float32"), span=layer_span("c"))
    call = named(relay.split(c, 2).astuple(), "split")
    x = relay.var("x", shape=(3,))
    out = fold(relay.Function([x], relay.add(x, relay.TupleGetItem(call, 1))))
    folded = out.body.args[1]
    assert isinstance(folded, relay.Constant)
    np.testing.assert_array_equal(folded.data.numpy(), [3, 4, 5])
    assert names(folded) == ("split", "c")


@pytest.mark.parametrize("make", [
    lambda x: relay.zeros_like(x),
    lambda x: relay.ones_like(x),
    lambda x: relay.full_like(x, relay.const(2.0)),
    lambda x: relay.full(relay.const(2.0), (2, 3), "float32"),
])
def test_like_and_full_are_not_folded(make):
    c = relay.const(np.ones((2, 3), "float32"))
    out = fold(make(c))
    assert isinstance(out, relay.Call), "folding would materialise a big tensor"


def test_dropout_of_a_constant_is_left_for_simplify_inference():
    out = fold(relay.nn.dropout(relay.const(np.ones((2, 3), "float32")), rate=0.2))
    assert isinstance(out, relay.TupleGetItem) and out.tuple_value.op.name == "nn.dropout"


def test_zero_argument_call_is_not_folded():
    out = fold(relay.zeros((2, 3), "float32"))
    assert isinstance(out, relay.Call) and out.op.name == "zeros"


def test_stateful_op_is_not_folded():
    register_op("test.stateful_noise", num_inputs=1, arg_names=("data",))
    register_op_attr("test.stateful_noise", "TOpIsStateful", True)
    register_op_attr("test.stateful_noise", "FNumpyCompute", lambda xs, attrs: xs[0] + 1)
    register_op_attr("test.stateful_noise", "FTVMTypeRelation", lambda types, attrs: types[0])
    call = relay.Call(tvm.ir.Op.get("test.stateful_noise"), (relay.const(1.0),))
    out = fold(call)
    assert isinstance(out, relay.Call) and out.op.name == "test.stateful_noise"


def test_shape_of_static_shape_is_folded():
    x = relay.var("x", shape=(1, 3, 8, 8))
    before = relay.Function([x], relay.add(relay.shape_of(named(relay.nn.relu(x), "relu")),
                                           relay.const(1, "int32")))
    out = fold(before)
    assert isinstance(out.body, relay.Constant)
    np.testing.assert_array_equal(out.body.data.numpy(), [2, 4, 9, 9])
    assert out.body.data.numpy().dtype == np.int32


def test_shape_of_dynamic_shape_is_kept():
    x = relay.var("x", shape=(relay.Any(), 3))
    out = fold(relay.Function([x], relay.shape_of(x)))
    assert ops_in(out) == ["shape_of"]


@pytest.mark.parametrize("cond, taken", [(True, "then"), (False, "else")])
def test_if_with_constant_condition_takes_the_branch(cond, taken):
    x = relay.var("x", shape=(2,))
    then = named(relay.nn.relu(x), "then")
    other = named(relay.negative(x), "else")
    ite = relay.If(relay.const(cond), then, other, span=layer_span("cond"))
    out = fold(relay.Function([x], ite))
    branch = then if cond else other
    assert_structural_equal(out.body, branch)
    assert out.body.span == SequentialSpan([branch.span, ite.span])
    assert names(out.body) == (taken, "cond")


def test_if_with_variable_condition_is_kept():
    x, c = relay.var("x", shape=(2,)), relay.var("c", shape=(), dtype="bool")
    f = relay.Function([x, c], relay.If(c, x, relay.negative(x)))
    out = fold(f)
    assert isinstance(out.body, relay.If)


def test_primitive_function_body_is_left_alone():
    p = relay.var("p", shape=(2,))
    inner = relay.Function([p], relay.add(p, relay.add(relay.const(1.0), relay.const(1.0))))
    inner = inner.with_attr("Primitive", 1)
    x = relay.var("x", shape=(2,))
    out = fold(relay.Function([x], relay.Call(inner, (x,))))
    assert out.body.op.body.args[1].op.name == "add"


def test_fold_qnn_flag_is_accepted():
    assert relay.transform.FoldConstant(fold_qnn=True).info.name == "FoldConstant"
    assert relay.transform.FoldConstant().info.opt_level == 2


def test_golden_conv_bn_folding():
    x = relay.var("x", shape=(1, 2, 4, 4))
    w = relay.const(np.ones((2, 2, 1, 1), "float32"), span=layer_span("conv1.weight"))
    conv = named(relay.nn.conv2d(x, w, channels=2, kernel_size=(1, 1)), "conv1")
    scale = named(relay.multiply(relay.const(np.full((2, 1, 1), 2.0, "float32")),
                                 relay.const(np.full((2, 1, 1), 0.5, "float32"))), "bn1")
    f = relay.Function([x], named(relay.multiply(conv, scale), "bn1"))
    mod = relay.transform.FoldConstant()(relay.transform.InferType()(tvm.IRModule.from_expr(f)))
    check_golden("fold_constant_conv_bn", mod.astext(show_meta_data=False))
