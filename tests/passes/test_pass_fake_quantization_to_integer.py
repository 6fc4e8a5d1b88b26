"""FakeQuantizationToInteger on small QDQ graphs: each region becomes qnn / integer ops,
keeps 100 % span coverage (the requantize names the quantize and the op it serves), and
its integer outputs equal the float QDQ graph's exactly (identity-like and table ops) or
within 1 quantization step (products and sums); what cannot convert stays in float."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.errors import PassError
from engine.ir.expr import Call
from engine.ir.module import IRModule
from engine.ir.span import SourceName, Span
from engine.ir.traversal import post_order
from engine.relay.analysis import span_coverage
from engine.relay.interpreter import evaluate
from engine.relay.parser import parse
from engine.relay.testing.qnn import f32, i32, op_names
from engine.relay.transform._rewrite import fill_span

qnn = relay.qnn.op
RNG = np.random.default_rng(1504)


def fq2i(mod: IRModule, **options) -> IRModule:
    out = relay.transform.FakeQuantizationToInteger(**options)(mod)
    return relay.transform.InferType()(out)


def compare(mod: IRModule, inputs: dict, exact: bool, **options) -> IRModule:
    """FQ2I of `mod`: fully spanned, and its integer outputs equal the float graph's (or
    are within 1 step, mostly equal)."""
    mod = relay.transform.InferType()(mod)
    want = evaluate(mod, inputs)
    out = fq2i(mod, **options)
    coverage = span_coverage(out)
    assert coverage.ratio == 1.0, coverage.missing[:3]
    got = evaluate(out, inputs)
    assert got.dtype == want.dtype
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        assert diff.max() <= 1 and diff.mean() < 0.25, (diff.max(), diff.mean())
    return out


def spanned(expr, name: str):
    return fill_span(expr, Span(SourceName(name)), ())


def conv_module(per_channel: bool) -> IRModule:
    x = relay.var("x", shape=(1, 3, 8, 8), dtype="uint8")
    sx = np.float32(0.04)
    w_int = RNG.integers(-127, 128, (4, 3, 3, 3)).astype("int8")
    sw = (RNG.uniform(0.002, 0.01, 4) if per_channel else np.full(4, 0.005)).astype("float32")
    bias = RNG.integers(-2000, 2000, 4).astype("int32")
    dx = spanned(qnn.dequantize(x, f32(sx), i32(128)), "x_dq")
    w_scale = f32(sw) if per_channel else f32(sw[0])
    dw = spanned(qnn.dequantize(relay.const(w_int), w_scale, i32(np.zeros(4) if per_channel
                                                                 else 0), axis=0), "w_dq")
    db = spanned(qnn.dequantize(relay.const(bias), f32(sx * sw), i32(np.zeros(4)), axis=0),
                 "b_dq")
    conv = spanned(relay.nn.conv2d(dx, dw, padding=(1, 1), channels=4, kernel_size=(3, 3)),
                   "conv")
    y = spanned(relay.nn.relu(spanned(relay.nn.bias_add(conv, db), "bias")), "relu")
    q = spanned(qnn.quantize(y, f32(0.05), i32(0), out_dtype="uint8"), "y_q")
    return IRModule.from_expr(relay.Function([x], q))


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_bias_relu_becomes_an_integer_conv_and_a_requantize(per_channel):
    mod = conv_module(per_channel)
    x = RNG.integers(0, 256, (1, 3, 8, 8)).astype("uint8")
    out = compare(mod, {"x": x}, exact=False)
    names = op_names(out)
    assert "qnn.conv2d" in names and "qnn.requantize" in names
    assert "nn.conv2d" not in names and "qnn.dequantize" not in names
    requantize = next(n for n in post_order(out["main"].body)
                      if isinstance(n, Call) and n.op.name == "qnn.requantize")
    assert {"y_q", "relu"} <= {str(s.source_name) for s in getattr(requantize.span, "spans",
                                                                    [requantize.span])}
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(out, target="llvm")
    runtime = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    runtime.set_input(x=x)
    runtime.run()
    np.testing.assert_array_equal(runtime.get_output(0).numpy(), evaluate(out, {"x": x}))


def region(body: str, **types: str) -> IRModule:
    params = ", ".join(f"%{k}: {v}" for k, v in types.items())
    return parse(f'#[version = "0.0.5"]\ndef @main({params}) {{\n{body}\n}}\n')


def test_identity_like_ops_keep_the_integers_exactly():
    mod = region("""
  %0 = qnn.dequantize(%x, 0.1f, 3);
  %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0]);
  %2 = reshape(%1, newshape=[1, 8]);
  %3 = transpose(%2, axes=[1, 0]);
  %4 = clip(%3, a_min=-0.5f, a_max=6f);
  qnn.quantize(%4, 0.1f, 3, out_dtype="int8")""", x="Tensor[(1, 2, 4, 4), int8]")
    out = compare(mod, {"x": RNG.integers(-128, 128, (1, 2, 4, 4)).astype("int8")}, True)
    assert "qnn.requantize" not in op_names(out) and "qnn.quantize" not in op_names(out)


@pytest.mark.parametrize("op", ["sigmoid", "tanh", "exp", "nn.leaky_relu"])
def test_table_ops_are_exactly_the_float_graph(op):
    attrs = ", alpha=0.1f" if op == "nn.leaky_relu" else ""
    mod = region(f"""
  %0 = qnn.dequantize(%x, 0.05f, 0);
  %1 = {op}(%0{attrs});
  qnn.quantize(%1, 0.0078125f, -128, out_dtype="int8")""", x="Tensor[(256,), int8]")
    out = compare(mod, {"x": np.arange(-128, 128).astype("int8")}, True)
    assert f"qnn.{op.removeprefix('nn.')}" in op_names(out)


def test_add_of_two_quantized_tensors_is_qnn_add():
    mod = region("""
  %0 = qnn.dequantize(%a, 0.1f, 3);
  %1 = qnn.dequantize(%b, 0.07f, -2);
  %2 = add(%0, %1);
  qnn.quantize(%2, 0.15f, 1, out_dtype="int8")""", a="Tensor[(4, 8), int8]",
                 b="Tensor[(8,), int8]")
    inputs = {"a": RNG.integers(-128, 128, (4, 8)).astype("int8"),
              "b": RNG.integers(-128, 128, (8,)).astype("int8")}
    out = compare(mod, inputs, False)
    assert "qnn.add" in op_names(out)


POOLS = {
    "concatenate": ("concatenate((%0, %1), axis=1)", "qnn.concatenate", 0.25),
    "avg_pool2d": ("nn.avg_pool2d(%0, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0])",
                   "qnn.avg_pool2d", 0.1),
    "global_avg_pool2d": ("nn.global_avg_pool2d(%0)", "qnn.avg_pool2d", 0.05),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_concatenate_and_average_pools(name):
    expr, qnn_op, out_scale = POOLS[name]
    mod = region(f"""
  %0 = qnn.dequantize(%a, 0.1f, 3);
  %1 = qnn.dequantize(%b, 0.2f, -1);
  %2 = {expr};
  qnn.quantize(%2, {out_scale}f, 3, out_dtype="int8")""", a="Tensor[(1, 2, 4, 4), int8]",
                 b="Tensor[(1, 1, 4, 4), int8]")
    inputs = {"a": RNG.integers(-100, 100, (1, 2, 4, 4)).astype("int8"),
              "b": RNG.integers(-100, 100, (1, 1, 4, 4)).astype("int8")}
    out = compare(mod, inputs, exact=False)
    assert qnn_op in op_names(out)


def test_a_sum_inside_a_region_stays_float():
    """Its output parameters are unknown there: any choice could saturate."""
    mod = relay.transform.InferType()(region("""
  %0 = qnn.dequantize(%a, 0.1f, 3);
  %1 = add(%0, %0);
  %2 = nn.relu(%1);
  qnn.quantize(%2, 0.2f, 0, out_dtype="int8")""", a="Tensor[(4,), int8]"))
    assert "qnn.add" not in op_names(fq2i(mod))
    with pytest.raises(PassError, match="add inside a region"):
        fq2i(mod, hard_fail=True)


def test_dense_and_batch_matmul():
    w = RNG.integers(-127, 128, (5, 6)).astype("int8")
    x = relay.var("x", shape=(2, 6), dtype="int8")
    dx = spanned(qnn.dequantize(x, f32(0.05), i32(2)), "x_dq")
    dw = spanned(qnn.dequantize(relay.const(w), f32(RNG.uniform(0.01, 0.02, 5)),
                                i32(np.zeros(5)), axis=0), "w_dq")
    q = spanned(qnn.quantize(spanned(relay.nn.dense(dx, dw), "dense"), f32(0.2), i32(-3),
                             out_dtype="int8"), "y_q")
    mod = IRModule.from_expr(relay.Function([x], q))
    out = compare(mod, {"x": RNG.integers(-128, 128, (2, 6)).astype("int8")}, False)
    assert "qnn.dense" in op_names(out)
    mod = region("""
  %0 = qnn.dequantize(%a, 0.05f, 1);
  %1 = qnn.dequantize(%b, 0.03f, -4);
  %2 = nn.batch_matmul(%0, %1, transpose_b=True);
  qnn.quantize(%2, 0.3f, 0, out_dtype="int8")""", a="Tensor[(2, 3, 8), int8]",
                 b="Tensor[(2, 4, 8), int8]")
    inputs = {"a": RNG.integers(-128, 128, (2, 3, 8)).astype("int8"),
              "b": RNG.integers(-128, 128, (2, 4, 8)).astype("int8")}
    assert "qnn.batch_matmul" in op_names(compare(mod, inputs, False))


SOFTMAX = """
  %0 = qnn.dequantize(%x, 0.1f, 0);
  %1 = nn.softmax(%0);
  qnn.quantize(%1, 0.00390625f, -128, out_dtype="int8")"""


def test_a_region_without_integer_form_stays_float():
    """As TVM: not a fake-quantized region at all, so hard_fail does not raise either."""
    mod = relay.transform.InferType()(region(SOFTMAX, x="Tensor[(2, 5), int8]"))
    assert op_names(fq2i(mod)) == op_names(mod)
    assert op_names(fq2i(mod, hard_fail=True)) == op_names(mod)


def test_a_quantize_of_a_dequantize_becomes_a_requantize_or_nothing():
    mod = region("""
  %0 = qnn.dequantize(%x, 0.1f, 3);
  %1 = qnn.quantize(%0, 0.1f, 3, out_dtype="int8");
  %2 = qnn.dequantize(%1, 0.1f, 3);
  qnn.quantize(%2, 0.25f, -1, out_dtype="int8")""", x="Tensor[(64,), int8]")
    out = compare(mod, {"x": np.arange(-128, 128, 4).astype("int8")}, exact=False)
    assert op_names(out) == ["qnn.requantize"]


def test_softmax_converts_when_named_optional():
    mod = region(SOFTMAX, x="Tensor[(2, 5), int8]")
    out = compare(mod, {"x": RNG.integers(-128, 128, (2, 5)).astype("int8")}, True,
                  optional_qnn_ops=["nn.softmax"])
    assert "qnn.softmax" in op_names(out)


def test_requantize_like_onnxruntime_uses_its_float_requantize():
    out = fq2i(relay.transform.InferType()(conv_module(True)), requantize_like="onnxruntime")
    requantize = [n for n in post_order(out["main"].body)
                  if isinstance(n, Call) and n.op.name == "qnn.requantize"]
    assert [r.attrs.compute_dtype for r in requantize] == ["float32"]
    with pytest.raises(ValueError, match="unknown requantize convention"):
        relay.transform.FakeQuantizationToInteger(requantize_like="tf")


def test_conv2d_transpose_becomes_qnn_conv2d_transpose():
    mod = region("""
  %0 = qnn.dequantize(%x, 0.05f, 128);
  %1 = qnn.dequantize(%w, 0.01f, 0);
  %2 = nn.conv2d_transpose(%0, %1, channels=3, kernel_size=[2, 2], strides=[2, 2]);
  qnn.quantize(%2, 0.1f, 0, out_dtype="int8")""", x="Tensor[(1, 2, 3, 3), uint8]",
                 w="Tensor[(2, 3, 2, 2), int8]")
    inputs = {"x": RNG.integers(0, 256, (1, 2, 3, 3)).astype("uint8"),
              "w": RNG.integers(-128, 128, (2, 3, 2, 2)).astype("int8")}
    out = compare(mod, inputs, exact=False)
    assert "qnn.conv2d_transpose" in op_names(out)


def test_use_qat_converts_ops_whose_result_stays_float():
    mod = relay.transform.InferType()(region("""
  %0 = qnn.dequantize(%x, 0.05f, 128);
  %1 = qnn.dequantize(%w, 0.01f, 0);
  %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %3 = reshape(%2, newshape=[1, 64]);
  nn.softmax(%3)""", x="Tensor[(1, 2, 4, 4), uint8]", w="Tensor[(4, 2, 3, 3), int8]"))
    inputs = {"x": RNG.integers(0, 256, (1, 2, 4, 4)).astype("uint8"),
              "w": RNG.integers(-128, 128, (4, 2, 3, 3)).astype("int8")}
    assert op_names(fq2i(mod)) == op_names(mod)  # no quantize: nothing without use_qat
    out = fq2i(mod, use_qat=True)
    assert op_names(out) == ["qnn.conv2d", "reshape", "qnn.dequantize", "nn.softmax"]
    assert span_coverage(out).ratio == 1.0
    np.testing.assert_allclose(evaluate(out, inputs), evaluate(mod, inputs), rtol=1e-5,
                               atol=1e-7)
