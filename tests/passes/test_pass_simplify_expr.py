"""SimplifyExpr: each rewrite Before / Expected, merged spans, numerics, fixpoint."""

from __future__ import annotations

import numpy as np
import pytest
from passes_helpers import check_golden, named, names, ops_in, run_opt_pass

import engine as tvm
from engine import relay
from engine.ir import assert_structural_equal
from engine.relay.interpreter import evaluate


def simplify(expr):
    return run_opt_pass(expr, relay.transform.SimplifyExpr())


def same(before, expected):
    assert_structural_equal(simplify(before), run_opt_pass(expected, []))


X = relay.var("x", shape=(1, 3, 4, 4))


def fn(body):
    return relay.Function([X], body)


def test_consecutive_reshapes_merge_with_both_spans():
    r1 = named(relay.reshape(X, (3, 16)), "reshape1")
    r2 = named(relay.reshape(r1, (1, 48)), "reshape2")
    out = simplify(fn(r2))
    assert_structural_equal(out, run_opt_pass(fn(relay.reshape(X, (1, 48))), []))
    assert names(out.body) == ("reshape2", "reshape1")


def test_three_reshapes_merge_into_one():
    r = relay.reshape(relay.reshape(relay.reshape(X, (3, 16)), (48,)), (1, 48))
    same(fn(r), fn(relay.reshape(X, (1, 48))))


def test_transposes_cancel():
    t = relay.transpose(relay.transpose(X, (0, 2, 3, 1)), (0, 3, 1, 2))
    out = simplify(fn(t))
    assert out.body is out.params[0]


def test_transposes_merge():
    t = relay.transpose(relay.transpose(X, (0, 2, 3, 1)), (1, 0, 2, 3))
    same(fn(t), fn(relay.transpose(X, (2, 0, 3, 1))))


def test_layout_transform_and_transpose_merge():
    t = relay.transpose(relay.layout_transform(X, "NCHW", "NHWC"), (0, 3, 1, 2))
    assert simplify(fn(t)).body is X


def test_default_transpose_axes_reverse():
    t = relay.transpose(relay.transpose(X), None)
    assert simplify(fn(t)).body is X


def test_same_dtype_cast_is_dropped():
    same(fn(relay.nn.relu(relay.cast(X, "float32"))), fn(relay.nn.relu(X)))


def test_lossless_consecutive_casts_merge():
    same(fn(relay.cast(relay.cast(X, "float64"), "float16")), fn(relay.cast(X, "float16")))


def test_lossy_consecutive_casts_are_kept():
    before = fn(relay.cast(relay.cast(X, "int32"), "float32"))
    assert ops_in(simplify(before)) == ["cast", "cast"]


@pytest.mark.parametrize("make, expected", [
    (lambda: relay.zeros_like(X), lambda: relay.zeros((1, 3, 4, 4), "float32")),
    (lambda: relay.ones_like(X), lambda: relay.ones((1, 3, 4, 4), "float32")),
    (lambda: relay.full_like(X, relay.const(2.0)),
     lambda: relay.full(relay.const(2.0), (1, 3, 4, 4), "float32")),
    (lambda: relay.reshape_like(X, relay.zeros((3, 16), "float32")),
     lambda: relay.reshape(X, (3, 16))),
])
def test_like_ops_become_concrete(make, expected):
    same(fn(make()), fn(expected()))


@pytest.mark.parametrize("make", [
    lambda: relay.add(X, relay.const(0.0)),
    lambda: relay.add(relay.const(0.0), X),
    lambda: relay.subtract(X, relay.const(0.0)),
    lambda: relay.multiply(X, relay.const(1.0)),
    lambda: relay.multiply(relay.ones_like(X), X),
    lambda: relay.divide(X, relay.const(1.0)),
    lambda: relay.add(X, relay.zeros((1, 3, 4, 4), "float32")),
])
def test_identities_are_removed(make):
    assert simplify(fn(make())).body is X


def test_identity_that_broadcasts_is_kept():
    before = fn(relay.add(X, relay.zeros((2, 1, 3, 4, 4), "float32")))
    assert "add" in ops_in(simplify(before))


def test_full_operand_becomes_scalar():
    out = simplify(fn(relay.maximum(X, relay.full(relay.const(0.5), (1, 3, 4, 4), "float32"))))
    assert ops_in(out) == ["maximum"]
    assert float(out.body.args[1].data.numpy()) == 0.5


def test_divide_by_sqrt_becomes_rsqrt():
    same(fn(relay.divide(relay.const(1.0), relay.sqrt(X))), fn(relay.rsqrt(X)))
    same(fn(relay.divide(relay.const(2.0), relay.sqrt(X))),
         fn(relay.multiply(relay.const(2.0), relay.rsqrt(X))))


def test_adjacent_multiplies_combine_constants():
    before = fn(relay.multiply(relay.multiply(X, relay.const(2.0)), relay.const(3.0)))
    expected = fn(relay.multiply(X, relay.multiply(relay.const(2.0), relay.const(3.0))))
    same(before, expected)


def test_add_then_multiply_switches():
    # (x + 1) * 3 -> x * 3 + 1 * 3, and the next round's `x * 1 -> x` leaves 3.
    before = fn(relay.multiply(relay.add(X, relay.const(1.0)), relay.const(3.0)))
    expected = fn(relay.add(relay.multiply(X, relay.const(3.0)), relay.const(3.0)))
    same(before, expected)


def test_numerics_of_every_rewrite():
    c = relay.const(np.float32(2.5))
    body = relay.Tuple([
        relay.reshape(relay.reshape(X, (3, 16)), (1, 48)),
        relay.transpose(relay.transpose(X, (0, 2, 3, 1)), (1, 0, 2, 3)),
        relay.multiply(relay.add(X, c), relay.const(3.0)),
        relay.multiply(relay.multiply(X, c), relay.const(3.0)),
        relay.divide(relay.const(2.0), relay.sqrt(relay.add(X, relay.const(1.0)))),
        relay.add(relay.zeros_like(X), X),
    ])
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(fn(body)))
    out = relay.transform.SimplifyExpr()(mod)
    assert out is not mod
    data = np.random.default_rng(0).random((1, 3, 4, 4), dtype="float32")
    for a, b in zip(evaluate(mod, {"x": data}), evaluate(out, {"x": data})):
        np.testing.assert_allclose(b, a, rtol=1e-5)


def test_nothing_to_simplify_returns_same_module():
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(fn(relay.nn.relu(X))))
    assert relay.transform.SimplifyExpr()(mod) is mod


def test_golden():
    r1 = named(relay.reshape(X, (3, 16)), "flatten")
    r2 = named(relay.reshape(r1, (1, 48)), "view")
    body = named(relay.multiply(named(relay.transpose(named(relay.transpose(
        r2, (1, 0)), "t1"), (1, 0)), "t2"), relay.const(1.0)), "scale")
    mod = relay.transform.SimplifyExpr()(relay.transform.InferType()(
        tvm.IRModule.from_expr(fn(body))))
    check_golden("simplify_expr", mod.astext(show_meta_data=False))


def test_pass_info():
    info = relay.transform.SimplifyExpr().info
    assert (info.name, info.opt_level, info.required) == ("SimplifyExpr", 0, ("InferType",))
