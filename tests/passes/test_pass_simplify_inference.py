"""SimplifyInference: batch_norm / layer_norm / dropout unpacked, spans filled."""

from __future__ import annotations

import numpy as np
from passes_helpers import check_golden, named, names, ops_in, run_opt_pass

import engine as tvm
from engine import relay
from engine.ir import assert_structural_equal, layer_span
from engine.relay.analysis import span_coverage
from engine.relay.interpreter import evaluate


def simplify(expr):
    return run_opt_pass(expr, relay.transform.SimplifyInference())


def _bn_params(c: int) -> list[relay.Var]:
    return [relay.var(n, shape=(c,)) for n in ("gamma", "beta", "mean", "var")]


def test_batch_norm_unpacked_as_tvm():
    x = relay.var("x", shape=(1, 3, 4, 4))
    gamma, beta, mean, var = params = _bn_params(3)

    def before():
        return relay.Function([x, *params], relay.nn.batch_norm(x, *params, epsilon=1e-3)[0])

    def expected():
        scale = relay.divide(relay.const(1.0), relay.sqrt(relay.add(var, relay.const(1e-3))))
        scale = relay.multiply(gamma, scale)
        shift = relay.add(relay.multiply(relay.negative(mean), scale), beta)
        out = relay.multiply(x, relay.expand_dims(scale, 1, 2))
        return relay.Function([x, *params], relay.add(out, relay.expand_dims(shift, 1, 2)))

    assert_structural_equal(simplify(before()), run_opt_pass(expected(), []))


def test_batch_norm_axis_and_flags():
    x = relay.var("x", shape=(2, 5, 3))
    gamma, beta, mean, var = params = _bn_params(3)
    before = relay.Function([x, *params], relay.nn.batch_norm(
        x, *params, axis=-1, center=False, scale=False)[0])
    scale = relay.divide(relay.const(1.0), relay.sqrt(relay.add(var, relay.const(1e-5))))
    shift = relay.multiply(relay.negative(mean), scale)
    expected = relay.Function([x, *params], relay.add(relay.multiply(x, scale), shift))
    assert_structural_equal(simplify(before), run_opt_pass(expected, []))


def test_batch_norm_numerics_and_spans():
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 3, 4, 4))
    consts = [relay.const(rng.random(3, dtype="float32") + 0.5, span=layer_span(f"bn1.{n}"))
              for n in ("gamma", "beta", "mean", "var")]
    bn = relay.nn.batch_norm(x, *consts)
    call = named(bn[0].tuple_value, "bn1")
    f = relay.Function([x], named(relay.nn.relu(named(relay.TupleGetItem(call, 0), "bn1")),
                                  "relu1"))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = relay.transform.SimplifyInference()(mod)
    assert "nn.batch_norm" not in ops_in(out["main"])
    assert span_coverage(out).ratio == 1.0
    new_calls = [n for n in ops_in(out["main"]) if n != "nn.relu"]
    assert set(new_calls) == {"add", "sqrt", "divide", "multiply", "negative", "expand_dims"}
    assert names(out["main"].body.args[0]) == ("bn1",)
    data = rng.random((1, 3, 4, 4), dtype="float32")
    np.testing.assert_allclose(evaluate(out, {"x": data}), evaluate(mod, {"x": data}),
                               rtol=1e-5, atol=1e-6)


def test_layer_norm_unpacked():
    x = relay.var("x", shape=(2, 8))
    g, b = relay.var("g", shape=(8,)), relay.var("b", shape=(8,))

    def expected():
        mean = relay.mean(x, axis=[1], keepdims=True)
        var = relay.variance(x, axis=[1], keepdims=True, with_mean=mean)
        out = relay.divide(relay.subtract(x, mean),
                           relay.sqrt(relay.add(var, relay.const(1e-5))))
        return relay.Function([x, g, b], relay.add(relay.multiply(out, g), b))

    before = relay.Function([x, g, b], relay.nn.layer_norm(x, g, b))
    assert_structural_equal(simplify(before), run_opt_pass(expected(), []))


def test_layer_norm_numerics():
    rng = np.random.default_rng(1)
    x = relay.var("x", shape=(2, 4, 6))
    g = relay.const(rng.random(4, dtype="float32"))
    b = relay.const(rng.random(4, dtype="float32"))
    f = relay.Function([x], named(relay.nn.layer_norm(x, g, b, axis=1, epsilon=1e-3), "ln"))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = relay.transform.SimplifyInference()(mod)
    assert "nn.layer_norm" not in ops_in(out["main"])
    assert all(names(n) == ("ln",) for n in [out["main"].body])
    data = rng.random((2, 4, 6), dtype="float32")
    np.testing.assert_allclose(evaluate(out, {"x": data}), evaluate(mod, {"x": data}),
                               rtol=1e-4, atol=1e-5)


def test_dropout_becomes_identity():
    x = relay.var("x", shape=(2, 3))
    before = relay.Function([x], relay.nn.relu(relay.nn.dropout(x, 0.3)))
    expected = relay.Function([x], relay.nn.relu(x))
    assert_structural_equal(simplify(before), run_opt_pass(expected, []))


def test_nothing_to_unpack_returns_same_module():
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x],
                                                                          relay.exp(x))))
    assert relay.transform.SimplifyInference()(mod) is mod


def test_untyped_module_is_typed_first():
    x = relay.var("x", shape=(1, 2, 2, 2))
    params = _bn_params(2)
    mod = tvm.IRModule.from_expr(relay.Function([x, *params],
                                                relay.nn.batch_norm(x, *params)[0]))
    out = relay.transform.SimplifyInference()(mod)
    assert "nn.batch_norm" not in ops_in(out["main"])


def test_golden():
    x = relay.var("x", shape=(1, 2, 3, 3))
    consts = [relay.const(np.full(2, v, "float32"), span=layer_span(f"bn.{n}"))
              for v, n in ((1.0, "gamma"), (0.0, "beta"), (0.5, "mean"), (4.0, "var"))]
    call = named(relay.nn.batch_norm(x, *consts)[0].tuple_value, "bn")
    f = relay.Function([x], named(relay.TupleGetItem(call, 0), "bn"))
    mod = relay.transform.SimplifyInference()(relay.transform.InferType()(
        tvm.IRModule.from_expr(f)))
    check_golden("simplify_inference_batch_norm", mod.astext(show_meta_data=False))
