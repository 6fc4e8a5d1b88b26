"""Low-precision element types (ml_dtypes' float8, bfloat16, int4) through the standard
pipeline and relay.build: lossy casts survive the passes, the built graph rounds as the
interpreter does, and every kernel's loop nest computes the same values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.expr import Call
from engine.relay.analysis import post_order_visit
from engine.relay.backend.build_module import check_numerics
from engine.relay.interpreter import evaluate
from engine.relay.transform.pipeline import optimize

DATA = np.array([[0.1, 1.3, 300.0, -1e6], [0.0, -2.71, 3.14, 17.0]], "float32")


def _round_trip(dtype: str) -> tvm.IRModule:
    """x * 2 through `dtype` and back, plus one."""
    x = relay.var("x", shape=DATA.shape)
    y = relay.cast(relay.cast(relay.multiply(x, relay.const(2.0)), dtype), "float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(y, relay.const(1.0))))


def _expected(dtype: str) -> np.ndarray:
    return (DATA * 2).astype(dtype).astype("float32") + 1


def _cast_dtypes(mod: tvm.IRModule) -> list[str]:
    seen: list[str] = []
    post_order_visit(mod["main"], lambda e: seen.append(str(e.attrs.dtype)) if isinstance(
        e, Call) and getattr(e.op, "name", "") == "cast" else None)
    return seen


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16", "int4"])
def test_a_cast_through_a_narrow_type_survives_the_pipeline(dtype: str) -> None:
    mod = _round_trip(dtype)
    with tvm.transform.PassContext(opt_level=3):
        optimized, _ = optimize(mod)
    assert dtype in _cast_dtypes(optimized)  # the lossy cast pair is not merged away
    np.testing.assert_array_equal(evaluate(optimized, {"x": DATA}), _expected(dtype))


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2fnuz", "bfloat16", "int4"])
def test_relay_build_rounds_as_the_interpreter(dtype: str) -> None:
    mod = _round_trip(dtype)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", DATA)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), _expected(dtype))
    assert set(check_numerics(lib).values()) == {"ok"}


def test_a_float8_graph_input_and_output() -> None:
    x = relay.var("x", shape=(4,), dtype="float8_e4m3fn")
    y = relay.cast(relay.multiply(relay.cast(x, "float32"), relay.const(4.0)), "float8_e4m3fn")
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    data = np.array([0.5, -1.75, 112, 3], ml_dtypes.float8_e4m3fn)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", data)
    m.run()
    out = m.get_output(0).numpy()
    assert out.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(out.astype("float32"), [2, -7, 448, 12])


@pytest.mark.parametrize("pool", ["max_pool1d", "max_pool2d", "max_pool3d"])
def test_bfloat16_max_pooling_pads_with_minus_infinity(pool: str) -> None:
    """A torch.onnx export of a bfloat16 ResNet pools bfloat16 data: the padding is -inf
    (ml_dtypes' floats are no numpy kind "f"; before, it asked np.iinfo and failed)."""
    nd = int(pool[-2])
    data = -np.abs(np.random.default_rng(0).standard_normal((1, 2) + (5,) * nd)) - 1
    x = relay.var("x", shape=data.shape, dtype="bfloat16")
    out = getattr(relay.nn, pool)(x, pool_size=(3,) * nd, strides=(2,) * nd, padding=(1,) * nd)
    got = evaluate(relay.Function([x], out), {"x": data.astype(ml_dtypes.bfloat16)})
    x32 = relay.var("x", shape=data.shape)
    ref = getattr(relay.nn, pool)(x32, pool_size=(3,) * nd, strides=(2,) * nd,
                                  padding=(1,) * nd)
    want = evaluate(relay.Function([x32], ref), {"x": data.astype(ml_dtypes.bfloat16)
                                                 .astype("float32")})
    assert got.dtype == ml_dtypes.bfloat16 and (got.astype("float32") < 0).all()
    np.testing.assert_array_equal(got.astype("float32"), want)
