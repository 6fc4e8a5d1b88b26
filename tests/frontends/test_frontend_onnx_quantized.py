"""Acceptance: models quantized by onnxruntime's own quantizer import into the QNN dialect
and match onnxruntime.

The files come from bench/make_onnx_quantized.py (cached in the git-ignored
bench/models/quantized/): torchvision ResNet-18, ResNet-50, MobileNetV2, MobileNetV3-Small
and EfficientNet-B0 (1x3x64x64) and small BERT and GPT-2 configurations (16 tokens), seeded
random weights, each quantized by `quantize_static` (seeded random calibration) in QDQ and
QOperator format, per tensor and per channel, and ResNet-18, ResNet-50, BERT and GPT-2 by
`quantize_dynamic` (ResNet-50's five files add about 15 s). Each file
- imports, its quantized layers as qnn ops (qnn.quantize/dequantize, qnn.conv2d,
  qnn.dense);
- goes through relay.build at O3 (the standard pipeline, then LowerTE) with 100 % span
  coverage after every pass;
- matches onnxruntime before the pipeline (the interpreter on the import), after it (the
  interpreter on the optimized module) and built (the graph runtime): within 1
  quantization step of an output that a DequantizeLinear makes (the error is measured in
  that output's steps, LSBs: 0 for every file but ResNet-18 QDQ per channel, 1, and
  MobileNetV2 QDQ per channel after the pipeline, 1: once Legalize has lowered
  qnn.dequantize to a float multiply, FoldScaleAxis moves an activation's scale through
  the next convolution into its weights, a float reassociation that moves one rounding
  tie; with FoldScaleAxis disabled it is 0), exactly for integer outputs, and to float32
  rounding (1e-5) for a float output computed after the quantized layers (BERT's
  LayerNormalization, the dynamic models' scaled MatMulInteger: 7e-7 at most; ResNet-50
  dynamic 1.5e-5 on logits of magnitude > 1).
  One file is held to a wider, measured bound (`KNOWN_LSB`): ResNet-50 QDQ per channel,
  3 LSB from both onnxruntime sessions (which agree with each other). Its quantized
  tensors match onnxruntime's literal session exactly through the first 34
  QuantizeLinears; at layer3.0's second ReLU one element of 4096 is 1 LSB apart (a float
  convolution whose float32 summation order puts a value on the other side of a rounding
  boundary), and 14 more bottleneck blocks of seeded random weights amplify it (up to 11
  LSB inside layer4, 3 at the logits). The integer QOperator files of the same model are
  exact.

Which onnxruntime session: the default one (ORT_ENABLE_ALL), what users run. On a
QOperator or dynamic file it runs the file's integer kernels as they are. On a QDQ file it
fuses DequantizeLinear -> op -> QuantizeLinear into its integer kernels (QLinearConv,
QGemm, ...), so it may differ from the file's literal float semantics (ORT_DISABLE_ALL,
float ops between the quantize steps, whose float32 summation order decides rounding
ties). Both are measured for the QDQ files, and we are held to both: within 1 LSB of the
default session, and no further from the literal one than onnxruntime's two sessions are
from each other (or 1 LSB). Our import keeps QDQ's float semantics (qnn.dequantize ->
float op -> qnn.quantize); it matches the default session to 0 LSB on every QDQ file but
ResNet-18 per channel (1 LSB; 0 from the literal session), and the literal session to 0
but ResNet-18 per tensor (2 LSB, exactly as far as onnxruntime's two sessions are from
each other there).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest

from engine.ir.expr import Call
from engine.relay.analysis import post_order_visit
from engine.relay.frontend.onnx import import_onnx
from engine.relay.frontend.result import ImportResult

pytest.importorskip("onnxruntime")
for _package in ("torch", "transformers"):
    pytest.importorskip(_package)
if importlib.util.find_spec("torchvision") is None:
    pytest.skip("torchvision is not installed", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import make_onnx_quantized as quantized  # noqa: E402
from make_onnx_quantized import Stages, output_error  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

CASES = quantized.cases()
IDS = [f"{name}.{variant}" for name, variant in CASES]
# measured LSB bounds above 1, with the reason in the module docstring
KNOWN_LSB = {("resnet50", "qdq_per_channel"): 3.0}
FLOAT_TOLERANCE = 1e-5


@dataclass
class Case:
    name: str
    variant: str
    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    steps: list[float | None]  # per output: its DequantizeLinear's scale, or None
    default: list[np.ndarray]  # onnxruntime, ORT_ENABLE_ALL
    literal: list[np.ndarray]  # onnxruntime, ORT_DISABLE_ALL
    result: ImportResult

    @property
    def qdq(self) -> bool:
        return self.variant.startswith("qdq")

    @property
    def lsb_bound(self) -> float:
        return KNOWN_LSB.get((self.name, self.variant), 1.0)


def errors(case: Case, actual: list[np.ndarray], reference: list[np.ndarray]) -> list[float]:
    assert len(actual) == len(reference)
    for got, want in zip(actual, reference):
        assert got.shape == want.shape and got.dtype == want.dtype
    return [output_error(got, want, step)
            for got, want, step in zip(actual, reference, case.steps)]


def assert_within(case: Case, actual: list[np.ndarray], reference: list[np.ndarray]) -> None:
    """Within 1 LSB (or the case's measured bound) of a dequantized output, exact for an integer one, float32 rounding
    for a float one."""
    for k, (err, want, step) in enumerate(zip(errors(case, actual, reference), reference,
                                              case.steps)):
        if step:
            assert err <= case.lsb_bound, f"output {k}: {err} LSB from onnxruntime"
        elif want.dtype.kind in "iub":
            assert err == 0, f"output {k}: integer output off by {err}"
        else:
            scale = max(1.0, float(np.abs(want).max()))
            assert err <= FLOAT_TOLERANCE * scale, f"output {k}: {err} from onnxruntime"


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def case(request: pytest.FixtureRequest) -> Case:
    name, variant = request.param
    path = quantized.quantized_model(name, variant)
    inputs = quantized.test_inputs(path)
    model = onnx.load(str(path))
    return Case(name, variant, model, inputs, quantized.output_steps(model),
                quantized.onnxruntime_outputs(path, inputs, optimized=True),
                quantized.onnxruntime_outputs(path, inputs, optimized=False),
                import_onnx(model))


@pytest.fixture(scope="module")
def stages(case: Case) -> Stages:
    """The interpreter on the import, relay.build's passes one by one (the optimized module
    evaluated before LowerTE, span coverage checked after every pass), the graph runtime."""
    return quantized.run_stages(case.result, case.inputs)


def op_names(case: Case) -> set[str]:
    names: set[str] = set()
    post_order_visit(case.result.mod["main"], lambda e: names.add(e.op.name)
                     if isinstance(e, Call) and hasattr(e.op, "name") else None)
    return names


def test_the_file_holds_the_quantizers_ops(case: Case) -> None:
    ops = {node.op_type for node in case.model.graph.node}
    if case.variant == "dynamic":
        assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops
    elif case.qdq:
        assert {"QuantizeLinear", "DequantizeLinear"} <= ops and not any(
            op.startswith("QLinear") for op in ops)
    else:
        assert "QGemm" in ops and ("QLinearConv" in ops or "QLinearMatMul" in ops)


def test_quantized_layers_import_as_qnn_ops(case: Case) -> None:
    ops = op_names(case)
    if case.qdq:
        assert {"qnn.quantize", "qnn.dequantize"} <= ops
    elif case.variant.startswith("qoperator"):
        # QGemm is a qnn.dense too; attention's batched QLinearMatMuls qnn.batch_matmul
        kernel = "qnn.conv2d" if case.name in quantized.CNNS else "qnn.batch_matmul"
        assert {kernel, "qnn.dense", "qnn.requantize"} <= ops
    else:  # dynamic: MatMulInteger / ConvInteger (weights constant) with run-time zero
        # points; quantize_dynamic leaves attention's activation x activation MatMuls float
        assert "qnn.dense" in ops and (case.name not in quantized.CNNS or "qnn.conv2d" in ops)


def test_import_matches_onnxruntime(case: Case, stages: Stages) -> None:
    assert_within(case, stages.before, case.default)


def test_qdq_files_are_measured_against_both_sessions(case: Case, stages: Stages) -> None:
    if not case.qdq:
        pytest.skip("QOperator and dynamic files run as written in both sessions")
    ours = stages.before
    between_sessions = max(errors(case, case.default, case.literal))
    assert max(errors(case, ours, case.default)) <= case.lsb_bound
    assert max(errors(case, ours, case.literal)) <= max(case.lsb_bound, between_sessions)


def test_build_keeps_every_span_after_every_pass(stages: Stages) -> None:
    assert {"FoldConstant", "FuseOps", "LowerTE"} <= set(stages.coverage.passes)
    assert stages.coverage.failures == []


def test_optimized_module_matches_onnxruntime(case: Case, stages: Stages) -> None:
    assert_within(case, stages.after, case.default)


def test_built_graph_matches_onnxruntime(case: Case, stages: Stages) -> None:
    assert_within(case, stages.built, case.default)


def test_every_kernel_names_its_layers(case: Case, stages: Stages) -> None:
    lib = stages.lib
    nodes = json.loads(lib.get_graph_json())["nodes"]
    spans = [set(lib.build_module.get_node_info(k)["spans"])
             for k, node in enumerate(nodes) if node["op"] == "tvm_op"]
    assert spans and all(spans), "a kernel without layer names"
    named = set().union(*spans)
    integer_layers = {node.name for node in case.model.graph.node
                      if node.op_type in ("QLinearConv", "QGemm", "QLinearMatMul",
                                          "MatMulInteger", "ConvInteger")}
    assert integer_layers <= named, sorted(integer_layers - named)[:5]
