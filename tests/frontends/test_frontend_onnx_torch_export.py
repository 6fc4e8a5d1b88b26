"""Acceptance: what `torch.onnx.export` writes imports and matches PyTorch.

torchvision's ResNet-18, MobileNetV3-Small, EfficientNet-B0 and ConvNeXt-Tiny (1x3x64x64)
and small Hugging Face BERT and GPT-2 configurations (2 layers, hidden 64, 16 tokens),
seeded random weights, each exported by both exporters: the TorchScript one (at opset
17) and the dynamo one (torch.export + onnxscript, at its default, opset 20). Each model
- imports, and the interpreter matches PyTorch's outputs (rtol 1e-3);
- names its layers after the exporter's nodes, and every expression carries such a span;
- goes through relay.build at O3 (the standard pipeline, then LowerTE) with 100 % span
  coverage after every pass, and the built graph matches PyTorch too, every kernel
  naming the layers it came from (every convolution and matmul layer among them) and
  lowering to a loop nest.
A BERT exported with a dynamic batch (TorchScript at its default opset 20, dynamo at its
lowest, 18) imports with the batch pinned by shape={...}.

The exports are made once per machine (engine/relay/testing/torch_models.py caches them
in the git-ignored bench/models/torch_export/); torch, torchvision, transformers and
onnxscript come from `make test-extras`, and the tests skip without them.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from frontend_helpers import (
    assert_fully_spanned,
    assert_matches,
    valid_span_names,
)

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.relay.frontend.common import ConversionError, DynamicShapeError
from engine.relay.frontend.onnx import import_onnx
from engine.relay.frontend.result import ImportResult
from engine.relay.interpreter import evaluate
from engine.relay.testing import torch_models
from engine.relay.testing.coverage import CoverageCheck
from engine.relay.testing.torch_models import Export

for _package in ("torch", "transformers", "onnxscript"):
    pytest.importorskip(_package)
if importlib.util.find_spec("torchvision") is None:
    pytest.skip("torchvision is not installed", allow_module_level=True)

pytestmark = [pytest.mark.torch, pytest.mark.slow]

CACHE = Path(__file__).resolve().parents[2] / "bench" / "models" / "torch_export"
CASES = [(name, how) for name in torch_models.MODELS for how in torch_models.EXPORTS]
IDS = [f"{name}-{how.tag}" for name, how in CASES]
DYNAMIC = [Export("torchscript", dynamic_batch=True), Export("dynamo", 18, dynamic_batch=True)]
ANCHORS = ("Conv", "Gemm", "MatMul")  # layers whose name must reach a built kernel


@dataclass
class Case:
    how: Export
    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    expected: list[np.ndarray]
    result: ImportResult


@dataclass
class Built:
    outputs: list[np.ndarray]
    coverage: CoverageCheck
    node_spans: list[set[str]]
    kernels: list[Any]


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def case(request: pytest.FixtureRequest) -> Case:
    name, how = request.param
    path = torch_models.cached_export(CACHE, name, how)
    inputs, expected = torch_models.load_reference(path)
    return Case(how, onnx.load(str(path)), inputs, expected, import_onnx(path))


@pytest.fixture(scope="module")
def built(case: Case) -> Built:
    check = CoverageCheck()
    with tvm.transform.PassContext(opt_level=3, instruments=[check]):
        lib = relay.build(case.result.mod, target="llvm", params=case.result.params)
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in case.inputs.items():
        module.set_input(name, value)
    module.run()
    outputs = [module.get_output(i).numpy() for i in range(module.get_num_outputs())]
    nodes = json.loads(lib.get_graph_json())["nodes"]
    spans = [set(lib.build_module.get_node_info(k)["spans"])
             for k, node in enumerate(nodes) if node["op"] == "tvm_op"]
    return Built(outputs, check, spans, list(lib.build_module.lowered.values()))


def test_exports_are_self_contained_at_the_expected_opset(case: Case) -> None:
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    assert opset == case.how.opset if case.how.opset else opset >= 18
    assert not any(onnx.external_data_helper.uses_external_data(t)
                   for t in case.model.graph.initializer)


def test_import_matches_pytorch(case: Case) -> None:
    assert_matches(evaluate(case.result.mod, case.inputs), case.expected)


def test_layers_are_the_exporters_nodes(case: Case) -> None:
    layers = [layer["name"] for layer in case.result.graph["layers"]]
    assert sorted(layers) == sorted(node.name for node in case.model.graph.node)
    assert assert_fully_spanned(case.result) >= len(layers) // 2


def test_build_keeps_every_span_after_every_pass(case: Case, built: Built) -> None:
    assert {"SimplifyInference", "FoldConstant", "BackwardFoldScaleAxis", "AlterOpLayout",
            "FuseOps", "LowerTE"} <= set(built.coverage.passes)
    assert built.coverage.failures == []


def test_built_graph_matches_pytorch(case: Case, built: Built) -> None:
    assert_matches(built.outputs, case.expected)


def test_every_kernel_names_its_layers(case: Case, built: Built) -> None:
    valid = valid_span_names(case.result)
    assert built.node_spans and all(built.node_spans), "a kernel without layer names"
    named = set().union(*built.node_spans)
    assert named <= valid, sorted(named - valid)[:5]
    anchors = {node.name for node in case.model.graph.node if node.op_type in ANCHORS}
    assert anchors and anchors <= named, sorted(anchors - named)[:5]


def test_every_kernel_lowers_to_a_loop_nest(built: Built) -> None:
    # what the explorer shows of a kernel; GPT-2's fused functions take the split q/k/v
    # tuple and read one field of it
    scheduled = [k for k in built.kernels if not k.extern]
    assert scheduled
    for kernel in scheduled:
        assert kernel.name in kernel.lower()


@pytest.fixture(scope="module", params=DYNAMIC, ids=[how.tag for how in DYNAMIC])
def dynamic_bert(request: pytest.FixtureRequest) -> tuple[Path, dict[str, np.ndarray],
                                                          list[np.ndarray]]:
    path = torch_models.cached_export(CACHE, "bert_tiny", request.param)
    return (path, *torch_models.load_reference(path))


def test_dynamic_batch_is_symbolic_in_the_export(dynamic_bert: Any) -> None:
    path, inputs, _ = dynamic_bert
    model = onnx.load(str(path))
    batch = {i.name: i.type.tensor_type.shape.dim[0] for i in model.graph.input}
    assert set(batch) == set(inputs)
    assert all(dim.dim_param and not dim.dim_value for dim in batch.values())


def test_dynamic_batch_imports_with_the_batch_pinned(dynamic_bert: Any) -> None:
    path, inputs, expected = dynamic_bert
    assert all(v.shape[0] == 2 for v in inputs.values())
    pinned = import_onnx(path, shape={k: v.shape for k, v in inputs.items()})
    assert_matches(evaluate(pinned.mod, inputs), expected)
    first = {k: v[:1] for k, v in inputs.items()}  # the same file, pinned to another batch
    single = import_onnx(path, shape={k: v.shape for k, v in first.items()})
    assert_matches(evaluate(single.mod, first), [e[:1] for e in expected])


def test_dynamic_batch_unpinned_asks_for_shapes(dynamic_bert: Any) -> None:
    path, _, _ = dynamic_bert
    with pytest.raises(ConversionError, match=r"dynamic shape .*pin the model's dynamic inputs "
                       r"\(input_ids \[\w+, \d+\].*shape=\{'input_ids': \[1, \d+\]") as caught:
        import_onnx(path)
    assert isinstance(caught.value, DynamicShapeError)
    assert all(dims[0] == 1 for dims in caught.value.suggested.values())


def test_torchvision_imports_with_or_without_its_compiled_ops() -> None:
    import torch

    torchvision = torch_models.import_torchvision()
    assert torchvision.models.resnet18(weights=None, num_classes=3).fc.out_features == 3
    if torchvision.extension._has_ops():
        return
    boxes, scores = torch.zeros(2, 4), torch.zeros(2)
    with pytest.raises(NotImplementedError, match="torchvision::nms"):  # a schema, no kernel
        torch.ops.torchvision.nms(boxes, scores, 0.5)
