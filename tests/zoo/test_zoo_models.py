"""Acceptance on the model zoo (bench/zoo_models.py): every model imports, type-checks,
evaluates to onnxruntime's outputs, has every expression spanned with a frontend layer
name, and keeps both through the O3 pipeline. One build + import per model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import pytest
from zoo_helpers import (
    assert_close,
    evaluate,
    is_primitive,
    ort_outputs,
    relay_ops,
    span_problems,
    valid_span_names,
)
from zoo_models import MODELS, build, example_feeds

import engine as tvm
from engine.ir.module import IRModule
from engine.ir.type import TensorType, TupleType
from engine.relay.analysis import post_order_visit, span_coverage
from engine.relay.frontend.onnx import import_onnx
from engine.relay.frontend.result import ImportResult
from engine.relay.transform import InferType
from engine.relay.transform.pipeline import standard_pipeline

# what each model exists to cover: Relay ops its import must contain
COVERS: dict[str, set[str]] = {
    "squeezenet1_0": {"nn.max_pool2d", "concatenate", "nn.global_avg_pool2d"},
    "alexnet": {"nn.lrn", "nn.dense"},
    "densenet121": {"nn.avg_pool2d", "concatenate", "nn.batch_norm"},
    "inception_v3": {"nn.avg_pool2d", "nn.conv2d"},
    "shufflenet_v2": {"split", "transpose", "reshape"},
    "efficientnet_b0": {"sigmoid", "multiply", "nn.global_avg_pool2d"},
    "efficientnet_b0_tf": {"nn.pad", "mean", "squeeze"},
    "tiny_yolov3_op9": {"image.resize2d", "nn.leaky_relu", "strided_slice", "power"},
    "tiny_yolov3": {"image.resize2d", "nn.leaky_relu", "strided_slice"},
    "unet": {"nn.conv2d_transpose", "concatenate"},
    "unet_bilinear": {"image.resize2d"},
    "m5_audio": {"nn.conv1d", "nn.max_pool1d", "nn.avg_pool1d", "nn.log_softmax"},
    "r3d_video": {"nn.conv3d", "nn.max_pool3d", "nn.avg_pool3d"},
    "unet3d": {"nn.conv3d", "nn.conv3d_transpose", "nn.max_pool3d"},
    "gpt2": {"cumsum", "take", "where", "nn.batch_matmul", "nn.softmax", "split", "tanh"},
    "gpt2_op21": {"nn.layer_norm", "tanh", "nn.batch_matmul"},
    "distilbert": {"where", "erf", "broadcast_to", "nn.batch_matmul"},
    "distilbert_op20": {"nn.layer_norm", "erf"},
    "textcnn": {"take", "nn.conv1d", "max"},
}


@dataclass
class ZooCase:
    name: str
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    expected: list[np.ndarray]
    result: ImportResult


@pytest.fixture(scope="module", params=list(MODELS))
def case(request: pytest.FixtureRequest) -> ZooCase:
    model = build(request.param)
    feeds = example_feeds(model)
    return ZooCase(request.param, model, feeds, ort_outputs(model, feeds), import_onnx(model))


def test_zoo_model_matches_onnxruntime(case: ZooCase) -> None:
    assert_close(evaluate(case.result.mod, case.feeds), case.expected)


def test_zoo_model_type_checks(case: ZooCase) -> None:
    mod = InferType()(case.result.mod)
    ret = mod["main"].body.checked_type
    types = ret.fields if isinstance(ret, TupleType) else (ret,)
    assert all(isinstance(t, TensorType) for t in types)
    assert [tuple(t.shape) for t in types] == [e.shape for e in case.expected]
    assert [t.dtype for t in types] == [str(e.dtype) for e in case.expected]


def test_zoo_model_every_expression_names_a_layer(case: ZooCase) -> None:
    checked, missing, foreign = span_problems(case.result.mod,
                                              valid_span_names(case.result.graph))
    assert checked >= len(case.model.graph.node) // 2
    assert not missing, f"{len(missing)} of {checked} expressions have no span: {missing[:3]}"
    assert not foreign, f"spans naming no layer: {sorted(set(foreign))[:5]}"
    assert span_coverage(case.result.mod).ratio == 1.0


def test_zoo_model_imports_the_ops_it_covers(case: ZooCase) -> None:
    missing = COVERS.get(case.name, set()) - relay_ops(case.result.mod)
    assert not missing, f"{case.name} should exercise {sorted(missing)}"


def _optimize(mod: IRModule) -> IRModule:
    with tvm.transform.PassContext(opt_level=3):
        return standard_pipeline(3)(mod)


def test_zoo_model_survives_o3(case: ZooCase) -> None:
    optimized = _optimize(case.result.mod)
    assert_close(evaluate(optimized, case.feeds), case.expected)
    coverage = span_coverage(optimized)
    assert coverage.ratio == 1.0, f"{coverage}: {coverage.missing[:3]}"
    fused: list[Any] = []
    post_order_visit(optimized["main"], lambda n: fused.append(n) if is_primitive(n) else None)
    assert fused, "FuseOps made no primitive functions"


def test_zoo_covers_opsets_9_to_21() -> None:
    opsets = {next(o.version for o in build(name).opset_import if o.domain in ("", "ai.onnx"))
              for name in MODELS}
    assert {9, 13, 21} <= opsets
    assert opsets & {17, 18}
    assert min(opsets) == 9 and max(opsets) == 21
