"""reinterpret (TVM's relay.reinterpret): the same bits read as another dtype of the same
width, sub-byte types and bool included; a width mismatch is a located type error; the op
builds (an opaque numpy kernel) and runs in the graph executor."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.errors import TypeInferenceError
from engine.relay.type_infer import infer_type


@pytest.mark.parametrize(("data", "dtype"), [
    (np.array([1.0, -2.5, np.inf], "float32"), "int32"),
    (np.array([[7, -1]], "int64"), "float64"),
    (np.array([0x3C00, 0xFC00], "uint16"), "float16"),
    (np.array(2.5, "float32"), "uint32"),  # a scalar stays a scalar
    (np.array([1.5, -448], ml_dtypes.float8_e4m3fn), "uint8"),
    (np.array([1.5, -3], ml_dtypes.bfloat16), "int16"),
])
def test_reinterpret_reads_the_same_bytes(data, dtype, run_expr):
    call = relay.reinterpret(relay.var("x", shape=data.shape, dtype=str(data.dtype)), dtype)
    infer_type(call)
    assert call.checked_type == relay.TensorType(data.shape, dtype)
    out = np.asarray(run_expr(call, x=data))
    assert out.shape == data.shape
    np.testing.assert_array_equal(out, data.view(dtype))


def test_sub_byte_values_keep_their_low_bits(run_expr):
    x = relay.var("x", shape=(4,), dtype="int4")
    out = run_expr(relay.reinterpret(x, "uint4"), x=np.array([-2, -8, 7, 0], ml_dtypes.int4))
    np.testing.assert_array_equal(np.asarray(out).astype("int32"), [14, 8, 7, 0])
    back = run_expr(relay.reinterpret(relay.var("y", shape=(2,), dtype="uint2"), "int2"),
                    y=np.array([3, 1], ml_dtypes.uint2))
    np.testing.assert_array_equal(np.asarray(back).astype("int32"), [-1, 1])


def test_bool_and_bytes(run_expr):
    x = relay.var("x", shape=(3,), dtype="bool")
    out = run_expr(relay.reinterpret(x, "uint8"), x=np.array([True, False, True]))
    np.testing.assert_array_equal(out, np.array([1, 0, 1], "uint8"))
    y = relay.var("y", shape=(3,), dtype="uint8")
    flags = run_expr(relay.reinterpret(y, "bool"), y=np.array([0, 2, 1], "uint8"))
    np.testing.assert_array_equal(flags, [False, True, True])


def test_reinterpret_rejects_another_width():
    call = relay.reinterpret(relay.var("x", shape=(2,), dtype="int8"), "float16")
    with pytest.raises(TypeInferenceError, match="reinterpret, argument 'data': cannot be "
                                                 "reinterpreted as float16"):
        infer_type(call)


def test_reinterpret_builds_and_runs():
    x = relay.var("x", shape=(2, 3))
    bits = relay.reinterpret(relay.abs(x), "int32")
    y = relay.right_shift(bits, relay.const(23, "int32"))  # the biased exponent
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    data = np.array([[1.0, -2.0, 0.5], [8.0, 3.0, -0.25]], "float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", data)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(),
                                  [[127, 128, 126], [130, 128, 125]])
