"""relay.qnn.transform.Legalize (LegalizeOps, then CanonicalizeOps) and its place in the
build pipeline: relay.build lowers qnn ops with 100 % span coverage after every pass, an
integer conv (qnn.conv2d + bias + requantize) fuses into one kernel whose schedule steps
are recorded, and the built graph computes the interpreter's bits, in every requantize
mode."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.expr import Call
from engine.ir.traversal import post_order
from engine.relay.interpreter import evaluate
from engine.relay.parser import parse
from engine.relay.testing.coverage import CoverageCheck
from engine.relay.transform.pipeline import pipeline_steps, standard_pipeline

RNG = np.random.default_rng(1503)

CONV_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 6, 6), uint8], %w: Tensor[(4, 3, 3, 3), int8],
          %bias: Tensor[(4, 1, 1), int32]) {
  %0 = qnn.conv2d(%x, %w, 128, 0, 0.05f, meta[relay.Constant][0], padding=[1, 1, 1, 1],
                  channels=4, kernel_size=[3, 3], out_dtype="int32");
  %1 = add(%0, %bias);
  %2 = qnn.requantize(%1, meta[relay.Constant][1], 0, 0.2f, 120, axis=1, ROUNDING
                      out_dtype="uint8");
  %3 = qnn.sigmoid(%2, 0.2f, 120, 0.00390625f, 0);
  %4 = qnn.avg_pool2d(%3, 0.00390625f, 0, 0.0078125f, 3, pool_size=[2, 2], strides=[2, 2],
                      padding=[0, 0, 0, 0]);
  qnn.dequantize(%4, 0.0078125f, 3)
}
"""

MODES = {"UPWARD": "", "TONEAREST": 'rounding="TONEAREST",', "TFLITE": 'rounding="TFLITE",',
         "TFLITE_INT16": 'rounding="TFLITE_INT16",', "float32": 'compute_dtype="float32",'}


def conv_module(mode: str) -> tvm.IRModule:
    w_scale = np.array([0.01, 0.02, 0.015, 0.03], "float32")
    in_scale = (np.float32(0.05) * w_scale).astype("float32")
    text = CONV_TEXT.replace("ROUNDING", MODES[mode])
    return relay.transform.InferType()(parse(text, metadata={"relay.Constant": [w_scale,
                                                                             in_scale]}))


def inputs() -> dict[str, np.ndarray]:
    return {"x": RNG.integers(0, 256, (1, 3, 6, 6)).astype("uint8"),
            "w": RNG.integers(-128, 128, (4, 3, 3, 3)).astype("int8"),
            "bias": RNG.integers(-3000, 3000, (4, 1, 1)).astype("int32")}


def op_names(expr) -> set[str]:
    return {n.op.name for n in post_order(expr) if isinstance(n, Call) and hasattr(n.op, "name")}


def test_legalize_lowers_every_qnn_op_and_runs_first_in_the_pipeline():
    names = [(s.namespace, s.name) for s in pipeline_steps()]
    assert names.index(("engine.relay.qnn.transform", "Legalize")) \
        < names.index(("engine.relay.transform", "SimplifyInference"))
    mod = conv_module("UPWARD")
    lowered = relay.qnn.transform.Legalize()(mod)
    assert not any(n.startswith("qnn.") for n in op_names(lowered["main"].body))
    check = CoverageCheck()
    with tvm.transform.PassContext(opt_level=0, instruments=[check]):
        standard_pipeline()(mod)
    assert check.passes[:3] == ["RemoveUnusedFunctions", "qnn.LegalizeOps",
                                "qnn.CanonicalizeOps"] or "qnn.CanonicalizeOps" in check.passes
    assert not check.failures


def test_requantize_integer_ops_name_the_layer_they_serve():
    mod = conv_module("TFLITE")
    requantize = mod["main"].body.args[0].args[0].args[0]
    assert requantize.op.name == "qnn.requantize"
    lowered = relay.qnn.transform.Legalize()(mod)
    shifts = [n for n in post_order(lowered["main"].body)
              if isinstance(n, Call) and getattr(n.op, "name", "") == "right_shift"]
    # TFLite's two roundings: the high multiply's shift and RoundingDivideByPOT's
    assert sum(s.span == requantize.span for s in shifts) == 2


@pytest.mark.parametrize("mode", sorted(MODES))
def test_build_lowers_qnn_and_computes_the_interpreters_bits(mode):
    mod = conv_module(mode)
    data = inputs()
    want = evaluate(mod, data)
    check = CoverageCheck()
    with tvm.transform.PassContext(opt_level=3, instruments=[check],
                                   config={"te.keep_schedule_record": True}):
        lib = relay.build(mod, target="llvm")
    assert not check.failures, check.failures[:2]
    assert "qnn.CanonicalizeOps" in check.passes
    runtime = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    runtime.set_input(**data)
    runtime.run()
    np.testing.assert_array_equal(runtime.get_output(0).numpy(), want)
    bm = lib.build_module
    infos = [bm.get_node_info(i) for i in range(bm.num_nodes)]
    conv = [i for i, info in enumerate(infos) if "nn.conv2d" in info.get("ops", [])]
    assert len(conv) == 1
    ops = set(infos[conv[0]]["ops"])
    assert {"add", "right_shift" if mode != "float32" else "round", "clip", "cast"} <= ops
    steps = bm.get_node_steps(conv[0])
    assert len(steps) > 2 and steps[1].primitive
