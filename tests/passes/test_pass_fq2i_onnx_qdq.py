"""FakeQuantizationToInteger on a real QDQ model: torchvision's ResNet-18 (seeded weights,
torch.onnx) quantized by onnxruntime.quantization.quantize_static (per channel, seeded
calibration). QuantizeLinear / DequantizeLinear are read as qnn.quantize / dequantize
(test-local converters, and no import-time folding of them, until the ONNX importer does
so itself); every Conv region
becomes a qnn.conv2d with one requantize, spans stay complete, the integer graph's outputs
stay within a few output steps of the float QDQ graph (1 LSB per region, accumulated over
20 layers), and relay.build runs it bit-exactly like the interpreter."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.relay.analysis import span_coverage
from engine.relay.frontend.onnx import import_onnx, importer, table
from engine.relay.interpreter import evaluate
from engine.relay.testing import torch_models
from engine.relay.testing.coverage import CoverageCheck
from engine.relay.testing.qnn import op_names, quantize_onnx_static
from engine.relay.testing.torch_models import Export

pytest.importorskip("torch")
if importlib.util.find_spec("torchvision") is None:
    pytest.skip("torchvision is not installed", allow_module_level=True)

pytestmark = [pytest.mark.torch, pytest.mark.slow]

CACHE = Path(__file__).resolve().parents[2] / "bench" / "models" / "torch_export"
qnn = relay.qnn.op
QDQ = ("QuantizeLinear", "DequantizeLinear")


def qparams(ctx: table.NodeContext) -> tuple[relay.Expr, relay.Expr, str]:
    scale = relay.const(ctx.const(1, "scale").astype("float32"))
    zp = ctx.const(2, "zero point") if ctx.has(2) else np.zeros((), "uint8")
    return scale, relay.const(zp.astype("int32")), str(zp.dtype)


def quantize_linear(ctx: table.NodeContext) -> relay.Expr:
    scale, zp, dtype = qparams(ctx)
    return qnn.quantize(ctx.input(0), scale, zp, axis=int(ctx.attr("axis", 1)),
                        out_dtype=dtype)


def dequantize_linear(ctx: table.NodeContext) -> relay.Expr:
    scale, zp, _ = qparams(ctx)
    return qnn.dequantize(ctx.input(0), scale, zp, axis=int(ctx.attr("axis", 1)))


@pytest.fixture(scope="module")
def qdq(tmp_path_factory: pytest.TempPathFactory) -> tuple[tvm.IRModule, dict]:
    path = torch_models.cached_export(CACHE, "resnet18", Export("torchscript", 17))
    quantized = quantize_onnx_static(path, path.with_suffix(".qdq-per-channel.onnx"),
                                     per_channel=True, seed=15)
    inputs, _ = torch_models.load_reference(path)
    fold = importer.fold_node

    def fold_but_qdq(node, values, opset):
        return None if node.op_type in QDQ else fold(node, values, opset)

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(table._TABLE, "QuantizeLinear", [(10, quantize_linear)])
        patch.setitem(table._TABLE, "DequantizeLinear", [(10, dequantize_linear)])
        patch.setattr(importer, "fold_node", fold_but_qdq)
        mod = import_onnx(quantized).mod
    return relay.transform.InferType()(mod), inputs, quantized


@pytest.fixture(scope="module")
def converted(qdq) -> tvm.IRModule:
    mod = qdq[0]
    check = CoverageCheck()
    with tvm.transform.PassContext(instruments=[check]):
        out = relay.transform.FakeQuantizationToInteger(hard_fail=True)(mod)
    assert not check.failures, check.failures[:2]
    return relay.transform.InferType()(out)


def test_every_conv_region_becomes_an_integer_conv(qdq, converted):
    mod = qdq[0]
    before, after = op_names(mod), op_names(converted)
    assert before.count("nn.conv2d") == 20
    assert after.count("qnn.conv2d") == 20 and "nn.conv2d" not in after
    assert after.count("qnn.add") == 8 and "qnn.dense" in after
    assert span_coverage(converted).ratio == 1.0


def test_outputs_stay_within_a_few_steps_of_the_float_qdq_graph(qdq, converted):
    """Each region is within 1 LSB of its float form; over 20 layers the logits (1000,
    in steps of the last quantize) stay within 3 steps, 90 % within 1, no farther from the
    float QDQ graph than onnxruntime's own integer kernels are."""
    mod, inputs, quantized = qdq
    want, got = evaluate(mod, inputs), evaluate(converted, inputs)
    last = converted["main"].body
    assert last.op.name == "qnn.dequantize"
    step = float(last.args[1].data.numpy())
    steps = np.round(np.abs(got - want) / step)
    assert steps.max() <= 3 and np.mean(steps <= 1) > 0.9, (steps.max(), np.mean(steps <= 1))
    session = ort.InferenceSession(str(quantized), providers=["CPUExecutionProvider"])
    ort_steps = np.round(np.abs(session.run(None, inputs)[0] - want) / step)
    assert steps.max() <= ort_steps.max()


def test_the_integer_graph_builds_and_runs_like_the_interpreter(qdq, converted):
    inputs = qdq[1]
    check = CoverageCheck()
    with tvm.transform.PassContext(opt_level=3, instruments=[check]):
        lib = relay.build(converted, target="llvm")
    assert not check.failures, check.failures[:2]
    runtime = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    runtime.set_input(**inputs)
    runtime.run()
    np.testing.assert_array_equal(runtime.get_output(0).numpy(), evaluate(converted, inputs))
