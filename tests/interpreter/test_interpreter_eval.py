"""The numpy interpreter: control flow, closures, globals, executors, deep chains, memory."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.relay.interpreter import EvaluationError, Interpreter, evaluate
from engine.runtime.ndarray import NDArray


def test_tuple_let_if() -> None:
    x = relay.var("x", shape=(2,))
    c = relay.var("c", shape=(), dtype="bool")
    v = relay.Var("v")
    body = relay.Let(v, x * relay.const(3.0),
                     relay.Tuple([relay.If(c, v, relay.negative(v)), x]))
    func = relay.Function([x, c], relay.TupleGetItem(body, 0))
    data = np.array([1.0, 2.0], "float32")
    np.testing.assert_array_equal(evaluate(func, [data, np.array(True)]), [3, 6])
    np.testing.assert_array_equal(evaluate(func, {"x": data, "c": np.array(False)}), [-3, -6])


def test_closures_capture_their_environment() -> None:
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    adder = relay.Function([y], y + x)  # captures x
    f = relay.Var("f")
    func = relay.Function([x], relay.Let(f, adder, relay.Call(f, [relay.Call(f, [x])])))
    np.testing.assert_array_equal(evaluate(func, [np.array([1, 2], "float32")]), [3, 6])


def test_global_calls_and_recursion_free_module() -> None:
    mod = tvm.IRModule()
    a = relay.var("a", shape=(2,))
    mod["square"] = relay.Function([a], a * a)
    x = relay.var("x", shape=(2,))
    sq = mod.get_global_var("square")
    mod["main"] = relay.Function([x], relay.Call(sq, [relay.Call(sq, [x])]))
    np.testing.assert_array_equal(evaluate(mod, {"x": np.array([2, 3], "float32")}), [16, 81])


def test_primitive_functions_run_their_body() -> None:
    p = relay.var("p", shape=(3,))
    prim = relay.Function([p], relay.nn.relu(p - relay.const(1.0))).with_attr("Primitive", 1)
    x = relay.var("x", shape=(3,))
    func = relay.Function([x], relay.Call(prim, [x]))
    np.testing.assert_array_equal(evaluate(func, [np.array([0, 1, 5], "float32")]), [0, 0, 4])


@pytest.mark.parametrize("kind", ["debug", "graph", "vm"])
def test_create_executor_positional_keyword_and_params(kind: str) -> None:
    x = relay.var("x", shape=(2, 2))
    w = relay.var("w", shape=(3, 2))
    mod = tvm.IRModule.from_expr(relay.nn.dense(x, w))
    wd = np.arange(6, dtype="float32").reshape(3, 2)
    xd = np.ones((2, 2), "float32")
    ex = relay.create_executor(kind, mod=mod, device=tvm.cpu(0), target="llvm")
    out = ex.evaluate()(xd, w=wd)
    assert isinstance(out, NDArray)
    np.testing.assert_array_equal(out.numpy(), xd @ wd.T)
    bound = relay.create_executor(kind, mod=mod, params={"w": tvm.nd.array(wd)})
    np.testing.assert_array_equal(bound.evaluate()(tvm.nd.array(xd)).numpy(), xd @ wd.T)


def test_executor_returns_tuples_of_ndarrays() -> None:
    x = relay.var("x", shape=(4,))
    parts = relay.split(x, 2)
    mod = tvm.IRModule.from_expr(parts.astuple())
    out = relay.create_executor(mod=mod).evaluate()(np.arange(4, dtype="float32"))
    assert isinstance(out, tuple) and all(isinstance(o, NDArray) for o in out)
    np.testing.assert_array_equal(out[1].numpy(), [2, 3])


def test_missing_argument_and_failing_op_are_clear() -> None:
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.nn.relu(x))
    with pytest.raises(EvaluationError, match="missing argument %x"):
        evaluate(mod, {})
    bad = relay.reshape(x, (3,))
    with pytest.raises(EvaluationError, match=r"while evaluating reshape\(float32\[2\]\)"):
        evaluate(bad, {"x": np.zeros(2, "float32")})


def test_hundred_thousand_chain_evaluates() -> None:
    x = relay.var("x", shape=(1, 16))
    y = x
    for i in range(100_000):
        y = relay.nn.relu(y) if i % 2 else relay.add(y, relay.const(np.float32(0.5)))
    out = evaluate(tvm.IRModule.from_expr(y), {"x": np.zeros((1, 16), "float32")})
    np.testing.assert_allclose(out, np.full((1, 16), 25000.0))


class _Tracked(np.ndarray):
    """An ndarray subclass that can be weakly referenced."""


def test_intermediates_are_freed_after_their_last_use() -> None:
    from engine.ir.op import Op

    produced: list[weakref.ref] = []
    alive_at_end: list[int] = []
    compute = Op.get("nn.relu").get_attr("FNumpyCompute")

    x = relay.var("x", shape=(64,))
    y = x
    for _ in range(20):
        y = relay.nn.relu(y)
    interp = Interpreter()
    original = interp._run_op

    def run_op(call, args):
        alive_at_end.append(sum(r() is not None for r in produced))
        out = compute(args, call.attrs).view(_Tracked)
        produced.append(weakref.ref(out))
        return out

    interp._run_op = run_op  # type: ignore[method-assign]
    interp.apply(relay.Function([x], y), [np.ones(64, "float32")])
    gc.collect()
    assert original is not None
    assert max(alive_at_end) <= 1, alive_at_end
