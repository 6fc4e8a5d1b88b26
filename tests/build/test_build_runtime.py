"""A built graph runs end to end (graph executor over the fused functions) and matches
the interpreter on the unoptimized module; driver.build runs a TE schedule."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

import engine as tvm
from engine import relay, te
from engine.contrib import graph_executor
from engine.relay import interpreter
from engine.relay.frontend import from_onnx


def test_mobilenet_graph_runs_like_the_interpreter(onnx_model: Callable[[str], Path]) -> None:
    mod, params = from_onnx(onnx.load(str(onnx_model("mobilenetv2"))))
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    name = mod["main"].params[0].name_hint
    expected = interpreter.evaluate(mod, {name: x, **params})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input(name, x)
    m.run()
    assert m.get_num_outputs() == 1
    np.testing.assert_allclose(m.get_output(0).numpy(), np.asarray(expected),
                               rtol=1e-3, atol=1e-3)


def test_tuple_outputs_and_shared_inputs() -> None:
    x = relay.var("x", shape=(2, 6))
    parts = relay.split(x, 3, axis=1)
    f = relay.Function([x], relay.Tuple([relay.nn.relu(parts[0]), relay.exp(parts[2])]))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    data = np.arange(12, dtype="float32").reshape(2, 6) - 5
    m.set_input("x", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(data[:, :2], 0))
    np.testing.assert_allclose(m.get_output(1).numpy(), np.exp(data[:, 4:]), rtol=1e-6)


def test_driver_build_runs_a_schedule() -> None:
    a = te.placeholder((8, 8), name="A")
    b = te.compute((8, 8), lambda i, j: a[i, j] * 2.0, name="B")
    s = te.create_schedule(b.op)
    s[b].parallel(b.op.axis[0])
    func = tvm.build(s, [a, b], target="llvm", name="double")
    x = np.random.default_rng(1).standard_normal((8, 8)).astype("float32")
    out = np.zeros_like(x)
    func(x, out)
    np.testing.assert_allclose(out, 2 * x)
    assert "parallel" in func.get_source()


def test_a_symbolic_input_is_named_before_the_pipeline_runs() -> None:
    """relay.build refuses an input with a run-time dimension up front, naming the input
    (not a fused function's p0 after the whole pipeline), and LowerTE says the same."""
    import pytest

    from engine.instrument import PassInstrument, pass_instrument
    from engine.ir.errors import PassError
    from engine.relay.backend.lower_te import LowerTE
    from engine.relay.backend.te_compiler import LowerError

    x = relay.var("pixels", shape=(relay.Any(), 4))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))

    @pass_instrument
    class Seen(PassInstrument):
        def __init__(self) -> None:
            self.names: list[str] = []

        def run_before_pass(self, mod: object, info: object) -> None:
            self.names.append(info.name)  # type: ignore[attr-defined]

    seen = Seen()
    with tvm.transform.PassContext(opt_level=3, instruments=[seen]), \
            pytest.raises(LowerError, match=r"%pixels: Tensor\[\(\?, 4\), float32\]"):
        relay.build(mod, target="llvm")
    assert seen.names == []
    with pytest.raises(PassError, match="LowerError: .*pin 'pixels'"):
        LowerTE("llvm")(relay.transform.InferType()(mod))


def test_max_pool_argmax_builds_and_runs_like_the_interpreter() -> None:
    """nn.max_pool_argmax (a numpy-kernel op) next to the pool it indexes, as ONNX MaxPool's
    two outputs, through relay.build and the graph executor."""
    x = relay.var("x", shape=(2, 3, 7, 8))
    pool = relay.nn.max_pool2d(x, (3, 2), (2, 2), padding=(1, 0, 1, 1))
    index = relay.nn.max_pool_argmax(x, (3, 2), (2, 2), padding=(1, 0, 1, 1), storage_order=1)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([relay.nn.relu(pool), index])))
    data = np.random.default_rng(2).standard_normal((2, 3, 7, 8)).astype("float32")
    expected = interpreter.evaluate(mod, {"x": data})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.asarray(expected[0]), rtol=1e-6)
    np.testing.assert_array_equal(m.get_output(1).numpy(), np.asarray(expected[1]))
    assert m.get_output(1).numpy().dtype == np.int64


def test_deformable_conv2d_builds_and_runs_like_the_interpreter() -> None:
    rng = np.random.default_rng(3)
    x = relay.var("x", shape=(1, 4, 6, 6))
    offset = relay.var("offset", shape=(1, 18, 6, 6))
    weight = relay.const(rng.standard_normal((5, 4, 3, 3)).astype("float32"))
    mask = relay.const(rng.random((1, 9, 6, 6)).astype("float32"))
    y = relay.nn.modulated_deformable_conv2d(x, offset, weight, mask, padding=(1, 1))
    mod = tvm.IRModule.from_expr(relay.Function([x, offset], relay.nn.relu(y)))
    feeds = {"x": rng.standard_normal((1, 4, 6, 6)).astype("float32"),
             "offset": rng.standard_normal((1, 18, 6, 6)).astype("float32")}
    expected = interpreter.evaluate(mod, feeds)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in feeds.items():
        m.set_input(name, value)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.asarray(expected), rtol=1e-5,
                               atol=1e-5)
