"""qnn.transform.CanonicalizeOps: every qnn op lowered to integer Relay ops that compute
the same bits as the qnn kernels, every created call spanned, and the result builds."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.errors import PassError
from engine.ir.expr import Call
from engine.ir.module import IRModule
from engine.ir.traversal import post_order
from engine.relay.analysis import span_coverage
from engine.relay.interpreter import evaluate
from engine.relay.parser import parse

qnn = relay.qnn.op
RNG = np.random.default_rng(150)

NETWORK = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), int8],
          %b: Tensor[(1, 3, 4, 4), int8]) {
  %0 = qnn.quantize(%x, 0.05f, 3, out_dtype="int8");
  %1 = qnn.conv2d(%0, %w, 3, 0, 0.05f, 0.02f, strides=[2, 2], padding=[2, 2, 2, 2],
                  channels=3, kernel_size=[3, 3], out_dtype="int32");
  %2 = qnn.requantize(%1, 0.001f, 0, 0.1f, -3, rounding="TONEAREST", out_dtype="int8");
  %3 = qnn.add(%2, %b, 0.1f, -3, 0.07f, 2, 0.15f, 1);
  %4 = qnn.mul(%3, %b, 0.15f, 1, 0.07f, 2, 0.2f, -5);
  qnn.dequantize(%4, 0.2f, -5)
}
"""


CONV_REQUANTIZE = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), int8]) {
  %0 = qnn.quantize(%x, 0.05f, 3, out_dtype="int8");
  %1 = qnn.conv2d(%0, %w, 3, 0, 0.05f, 0.02f, padding=[1, 1, 1, 1], channels=3,
                  kernel_size=[3, 3], out_dtype="int32");
  qnn.requantize(%1, 0.001f, 0, 0.1f, -3, out_dtype="int8")
}
"""


def canonicalize(mod: IRModule) -> IRModule:
    return relay.transform.InferType()(relay.qnn.transform.CanonicalizeOps()(mod))


def network_inputs() -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((1, 2, 5, 5)).astype("float32") * 3,
            "w": RNG.integers(-128, 128, (3, 2, 3, 3)).astype("int8"),
            "b": RNG.integers(-128, 128, (1, 3, 4, 4)).astype("int8")}


def op_names(mod: IRModule) -> set[str]:
    return {node.op.name for node in post_order(mod["main"].body)
            if isinstance(node, Call) and hasattr(node.op, "name")}


def per_channel_module(rounding: str) -> IRModule:
    x = relay.var("x", shape=(2, 6), dtype="uint8")
    kzp = np.array([0, 1, -2, 4], "int32")
    dense = qnn.dense(x, relay.var("w", shape=(4, 6), dtype="int8"), relay.const(np.int32(128)),
                      relay.const(kzp), relay.const(np.float32(0.02)),
                      relay.const(np.array([0.01, 0.02, 0.03, 0.5], "float32")), units=4)
    scales = np.array([0.0002, 0.0004, 0.0006, 0.01], "float32")
    out = qnn.requantize(dense, relay.const(scales), relay.const(np.zeros(4, "int32")),
                         relay.const(np.float32(0.05)), relay.const(np.int32(10)), axis=1,
                         rounding=rounding, out_dtype="uint8")
    return relay.transform.InferType()(IRModule.from_expr(relay.Function([x, *relay.analysis
                                                                          .free_vars(out)[1:]],
                                                                         out)))


def test_every_qnn_op_is_lowered_with_every_call_spanned():
    mod = relay.transform.InferType()(parse(NETWORK))
    assert span_coverage(mod).ratio == 1.0
    out = canonicalize(mod)
    assert not any(name.startswith("qnn.") for name in op_names(out))
    assert {"nn.conv2d", "right_shift", "multiply", "clip"} <= op_names(out)
    coverage = span_coverage(out)
    assert coverage.ratio == 1.0, coverage.missing[:3]


def test_a_requantize_lowering_carries_the_requantize_span():
    mod = relay.transform.InferType()(parse(NETWORK))
    requantize = mod["main"].body.args[0].args[0].args[0]
    assert requantize.op.name == "qnn.requantize"
    out = canonicalize(mod)
    shifts = [n for n in post_order(out["main"].body)
              if isinstance(n, Call) and getattr(n.op, "name", "") == "right_shift"]
    assert requantize.span in {s.span for s in shifts}


def test_lowered_network_computes_the_same_bits():
    mod = relay.transform.InferType()(parse(NETWORK))
    inputs = network_inputs()
    want = evaluate(mod, inputs)
    np.testing.assert_array_equal(evaluate(canonicalize(mod), inputs), want)


@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
def test_per_channel_dense_and_requantize_lower_bit_exactly(rounding):
    mod = per_channel_module(rounding)
    inputs = {"x": RNG.integers(0, 256, (2, 6)).astype("uint8"),
              "w": RNG.integers(-128, 128, (4, 6)).astype("int8")}
    want = evaluate(mod, inputs)
    assert want.dtype == np.uint8
    np.testing.assert_array_equal(evaluate(canonicalize(mod), inputs), want)


def test_per_axis_quantize_and_dequantize_lower_bit_exactly():
    x = relay.var("x", shape=(2, 3, 4))
    scale = relay.const(np.array([0.1, 0.05, 0.3], "float32"))
    zp = relay.const(np.array([-5, 0, 7], "int32"))
    q = qnn.quantize(x, scale, zp, axis=1, out_dtype="int8")
    mod = relay.transform.InferType()(IRModule.from_expr(
        relay.Function([x], relay.Tuple([q, qnn.dequantize(q, scale, zp, axis=1)]))))
    data = {"x": RNG.standard_normal((2, 3, 4)).astype("float32") * 4}
    want, got = evaluate(mod, data), evaluate(canonicalize(mod), data)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_a_scale_that_is_not_a_constant_is_a_clear_error():
    x = relay.var("x", shape=(3,), dtype="int32")
    s = relay.var("s", shape=(), dtype="float32")
    call = qnn.requantize(x, s, relay.const(np.int32(0)), relay.const(np.float32(1)),
                          relay.const(np.int32(0)))
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x, s], call)))
    with pytest.raises(PassError, match="needs a constant input_scale"):
        relay.qnn.transform.CanonicalizeOps()(mod)


def test_canonicalized_conv_requantize_builds_and_runs_like_the_interpreter():
    mod = relay.transform.InferType()(parse(CONV_REQUANTIZE))
    inputs = network_inputs()
    del inputs["b"]
    want = evaluate(mod, inputs)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(canonicalize(mod), target="llvm")
    runtime = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    runtime.set_input(**inputs)
    runtime.run()
    got = runtime.get_output(0).numpy()
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_nhwc_per_channel_depthwise_conv_lowers_bit_exactly():
    """TFLite's layout: NHWC data, HWOI depthwise kernel, one kernel zero point and scale
    per output channel (the kernel's O axis)."""
    x = relay.var("x", shape=(1, 5, 5, 4), dtype="int8")
    w = relay.var("w", shape=(3, 3, 4, 1), dtype="int8")
    kzp = relay.const(np.array([0, 2, -1, 3], "int32"))
    conv = qnn.conv2d(x, w, relay.const(np.int32(-7)), kzp, relay.const(np.float32(0.1)),
                      relay.const(np.array([0.1, 0.2, 0.3, 0.4], "float32")),
                      kernel_size=(3, 3), channels=4, padding=(1, 1), groups=4,
                      data_layout="NHWC", kernel_layout="HWOI")
    out = qnn.requantize(conv, relay.const(np.array([0.01, 0.02, 0.03, 0.04], "float32")),
                         relay.const(np.zeros(4, "int32")), relay.const(np.float32(0.3)),
                         relay.const(np.int32(-2)), axis=3, out_dtype="int8")
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x, w], out)))
    inputs = {"x": RNG.integers(-128, 128, (1, 5, 5, 4)).astype("int8"),
              "w": RNG.integers(-128, 128, (3, 3, 4, 1)).astype("int8")}
    xs = np.pad(inputs["x"].astype(np.int64) + 7, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ws = inputs["w"][..., 0].astype(np.int64) - [0, 2, -1, 3]
    acc = sum(xs[:, i:i + 5, j:j + 5, :] * ws[i, j] for i in range(3) for j in range(3))
    np.testing.assert_array_equal(evaluate(conv, inputs), acc)
    want = evaluate(mod, inputs)
    assert want.shape == (1, 5, 5, 4)
    np.testing.assert_array_equal(evaluate(canonicalize(mod), inputs), want)
