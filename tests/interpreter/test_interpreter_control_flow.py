"""Control flow as the ONNX importer writes it: an `if` whose branches capture values
computed outside them, and a loop as a recursive let-bound function; both through the
standard pipeline, and what relay.build says of them."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.ir.type import FuncType, TensorType
from engine.relay.backend.graph_codegen import GraphCodegenError
from engine.relay.interpreter import Interpreter, evaluate


def _if_module() -> tvm.IRModule:
    x = relay.var("x", shape=(2,))
    c = relay.var("c", shape=(), dtype="bool")
    y = relay.nn.relu(x * relay.const(2.0))
    z = relay.exp(x)
    ite = relay.If(c, y + z, y - z)  # both branches capture y and z
    return tvm.IRModule.from_expr(relay.Function([x, c], relay.add(ite, y)))


def _loop_module() -> tvm.IRModule:
    """acc = 0; for i in range(n): acc += x, as `let %loop = fn (i, acc) {...}`."""
    x = relay.var("x", shape=(2,))
    n = relay.var("n", shape=(), dtype="int64")
    i = relay.var("i", shape=(), dtype="int64")
    acc = relay.var("acc", shape=(2,))
    loop = relay.Var("loop", FuncType([TensorType((), "int64"), TensorType((2,))],
                                      TensorType((2,))))
    step = relay.Call(loop, [i + relay.const(1, "int64"), acc + x])
    body = relay.Function([i, acc], relay.If(relay.less(i, n), step, acc),
                          ret_type=TensorType((2,)))
    start = relay.Call(loop, [relay.const(0, "int64"), relay.zeros((2,), "float32")])
    return tvm.IRModule.from_expr(relay.Function([x, n], relay.Let(loop, body, start)))


def _optimized(mod: tvm.IRModule) -> tvm.IRModule:
    with tvm.transform.PassContext(opt_level=3):
        return relay.optimize(mod)[0]


DATA = np.array([1.0, -2.0], "float32")


@pytest.mark.parametrize("cond", [True, False])
def test_if_with_captured_values_survives_the_standard_pipeline(cond: bool) -> None:
    mod = _if_module()
    y = np.maximum(DATA * 2, 0)
    want = (y + np.exp(DATA) if cond else y - np.exp(DATA)) + y
    opt = _optimized(mod)
    branches = opt["main"].body.args[0]
    assert isinstance(branches, relay.If)
    assert isinstance(branches.true_branch.op, relay.Function)  # fused inside the branch
    for m in (mod, opt):
        got = evaluate(m, {"x": DATA, "c": np.array(cond)})
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_if_branch_reads_captured_values_it_does_not_compute_again() -> None:
    mod = _if_module()
    calls: list[str] = []
    interp = Interpreter(mod)
    run_op = interp._run_op

    def counting(call, args):  # type: ignore[no-untyped-def]
        calls.append(call.op.name)
        return run_op(call, args)

    interp._run_op = counting  # type: ignore[method-assign]
    interp.apply(mod["main"], [DATA, np.array(True)])
    assert sorted(calls) == ["add", "add", "exp", "multiply", "nn.relu"]


def test_a_recursive_loop_runs_before_and_after_the_pipeline() -> None:
    mod = _loop_module()
    opt = _optimized(mod)
    for m in (mod, opt):
        np.testing.assert_array_equal(evaluate(m, {"x": DATA, "n": np.array(3)}), DATA * 3)
        np.testing.assert_array_equal(evaluate(m, {"x": DATA, "n": np.array(0)}), [0, 0])


def test_a_loop_of_many_trips_needs_no_python_stack() -> None:
    np.testing.assert_array_equal(evaluate(_loop_module(), {"x": DATA, "n": np.array(5000)}),
                                  DATA * 5000)


def test_relay_build_names_the_control_flow_and_the_vm_runs_it() -> None:
    for mod in (_if_module(), _loop_module()):
        with pytest.raises(GraphCodegenError, match=r"control flow \((If|Let)\).*'vm'"):
            relay.build(mod)
    executor = relay.create_executor("vm", mod=_if_module())
    out = executor.evaluate()(DATA, np.array(False)).numpy()
    y = np.maximum(DATA * 2, 0)
    np.testing.assert_allclose(out, y - np.exp(DATA) + y, rtol=1e-6)
