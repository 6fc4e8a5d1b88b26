"""The DFT: `relay.op.signal.dft_matrix` / `dft` (the composition as a dense) and
`dyn.signal.dft` (run-time axis and length) against numpy's fft; DynamicToStatic turns the
dyn op into the dense, and a module using it builds and runs."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.errors import TypeInferenceError
from engine.ir.type import AnyDim
from engine.relay.analysis import post_order_visit
from engine.relay.interpreter import evaluate
from engine.relay.op.signal import dft, dft_matrix
from engine.relay.transform import DynamicToStatic, InferType
from engine.relay.type_infer import infer_type

RNG = np.random.default_rng(7)


def _complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]


def _reference(x: np.ndarray, axis: int, length: int, inverse: bool, onesided: bool
               ) -> np.ndarray:
    """ONNX's DFT from numpy's fft (complex as a trailing dim of 2)."""
    z = _complex(x)
    if inverse and onesided:
        return np.fft.irfft(z, length, axis=axis)[..., None]
    out = (np.fft.ifft if inverse else np.fft.fft)(z, length, axis=axis)
    if onesided:
        out = np.take(out, np.arange(length // 2 + 1), axis=axis)
    return np.stack([out.real, out.imag], axis=-1)


MODES = [(False, False), (False, True), (True, False), (True, True)]


@pytest.mark.parametrize("inverse,onesided", MODES)
@pytest.mark.parametrize("n_in,length,channels", [(8, 8, 1), (8, 8, 2), (6, 9, 2), (9, 5, 1)])
def test_dft_matrix_is_numpy_fft(inverse, onesided, n_in, length, channels) -> None:
    x = RNG.standard_normal((n_in, channels))
    want = _reference(x[None], 1, length, inverse, onesided)[0]
    got = dft_matrix(n_in, channels, length, inverse, onesided, "float64") @ x.reshape(-1)
    np.testing.assert_allclose(got.reshape(want.shape), want, atol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_composed_dft_along_any_signal_axis(axis: int) -> None:
    x = RNG.standard_normal((3, 4, 5, 2)).astype("float32")
    expr = dft(relay.var("x", shape=x.shape), 4, axis, x.shape[axis], 2, 7, False, True)
    want = _reference(x, axis, 7, False, True)
    np.testing.assert_allclose(evaluate(expr, {"x": x}), want, rtol=1e-4, atol=1e-5)


def _dyn_call(shape: tuple[int, ...], inverse: bool = False, onesided: bool = False
              ) -> relay.Call:
    return relay.dyn.signal.dft(relay.var("x", shape=shape),
                                relay.var("axis", shape=(), dtype="int64"),
                                relay.var("n", shape=(), dtype="int64"), inverse, onesided)


def test_dyn_dft_type_keeps_the_rank_and_the_complex_dim() -> None:
    call = _dyn_call((2, 6, 6, 2), inverse=True, onesided=True)
    infer_type(call)
    assert tuple(call.checked_type.shape) == (AnyDim(), AnyDim(), AnyDim(), 1)
    bad = _dyn_call((2, 6, 3))
    with pytest.raises(TypeInferenceError, match="dyn.signal.dft"):
        infer_type(bad)


@pytest.mark.parametrize("inverse,onesided", MODES)
def test_dyn_dft_reads_axis_and_length_at_run_time(inverse, onesided) -> None:
    x = RNG.standard_normal((2, 6, 5, 2)).astype("float32")
    call = _dyn_call(x.shape, inverse, onesided)
    for axis, n in ((1, 0), (2, 8), (-2, 3)):
        got = evaluate(call, {"x": x, "axis": np.int64(axis), "n": np.int64(n)})
        length = n or (2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis])
        want = _reference(x, axis % 4, length, inverse, onesided)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _constant_axis_module() -> tvm.IRModule:
    x = relay.var("x", shape=(2, 8, 2))
    call = relay.dyn.signal.dft(x, relay.const(np.int64(1)), relay.const(np.int64(6)),
                                onesided=True)
    return InferType()(tvm.IRModule.from_expr(relay.Function([x], call)))


def _op_names(mod: tvm.IRModule) -> set[str]:
    names: set[str] = set()
    post_order_visit(mod["main"], lambda n: names.add(n.op.name) if isinstance(
        n, relay.Call) and isinstance(n.op, relay.Op) else None)
    return names


def test_dynamic_to_static_makes_the_dense() -> None:
    mod = _constant_axis_module()
    with tvm.transform.PassContext(opt_level=3):
        after = DynamicToStatic()(mod)
    assert "dyn.signal.dft" not in _op_names(after)
    assert "nn.dense" in _op_names(after)
    assert tuple(after["main"].body.checked_type.shape) == (2, 4, 2)
    x = RNG.standard_normal((2, 8, 2)).astype("float32")
    np.testing.assert_allclose(evaluate(after, {"x": x}), evaluate(mod, {"x": x}),
                               rtol=1e-4, atol=1e-5)


def test_a_module_using_the_op_builds_and_runs() -> None:
    x = RNG.standard_normal((2, 8, 2)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(_constant_axis_module(), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _reference(x, 1, 6, False, True),
                               rtol=1e-4, atol=1e-5)
