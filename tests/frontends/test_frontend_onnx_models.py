"""Acceptance: every model of bench/make_models.py imports, type-checks, evaluates to
onnxruntime's outputs, and every expression carries a span naming a frontend layer."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, infer_type, run_module

from engine.ir.type import TensorType, TupleType
from engine.relay import frontend

ort = pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_models import example_inputs  # noqa: E402

MODELS = ["mlp", "resnet50", "mobilenetv2", "bert2", "bert2_ln17", "bert12"]


@pytest.fixture(scope="module", params=MODELS)
def imported(request: pytest.FixtureRequest, onnx_model: Callable[[str], Path]):
    """(name, path, ImportResult, inputs, onnxruntime outputs), one import per model."""
    path = onnx_model(request.param)
    result = frontend.load(path)
    feeds = example_inputs(onnx.load(str(path), load_external_data=False))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    return request.param, path, result, feeds, expected


def test_import_matches_onnxruntime(imported) -> None:
    _, _, result, feeds, expected = imported
    assert result.format == "onnx"
    assert_close(run_module(result.mod, feeds), expected)


def test_import_type_checks(imported) -> None:
    _, _, result, _, expected = imported
    mod = infer_type(result.mod)
    ret = mod["main"].body.checked_type
    types = ret.fields if isinstance(ret, TupleType) else (ret,)
    assert [tuple(t.shape) for t in types if isinstance(t, TensorType)] == \
        [e.shape for e in expected]


def test_every_expression_names_a_layer(imported) -> None:
    name, _, result, _, _ = imported
    checked = assert_fully_spanned(result)
    layers = {layer["name"] for layer in result.graph["layers"]}
    assert checked >= len(result.graph["layers"]) // 2
    if name == "resnet50":
        assert {"layer1.0.conv1", "resnetv1/fc"} <= layers


def test_frontend_graph_describes_the_model(imported) -> None:
    _, path, result, feeds, _ = imported
    model = onnx.load(str(path), load_external_data=False)
    graph = result.graph
    assert len(graph["layers"]) == len(model.graph.node)
    assert [i["name"] for i in graph["inputs"]] == list(feeds)
    assert [o["name"] for o in graph["outputs"]] == [o.name for o in model.graph.output]
    first = graph["layers"][0]
    assert first["name"] == model.graph.node[0].name
    assert first["outputs"] == list(model.graph.node[0].output)
    summary = frontend.describe(result)
    assert summary["num_layers"] == len(model.graph.node)
    assert sum(summary["op_types"].values()) == len(model.graph.node)


def test_bert_inputs_keep_their_int64_type(imported) -> None:
    name, _, result, _, _ = imported
    if not name.startswith("bert"):
        pytest.skip("BERT-only check")
    params = {p.name_hint: p.type_annotation for p in result.mod["main"].params}
    assert params["input_ids"] == TensorType((1, 128), "int64")
    assert params["attention_mask"] == TensorType((1, 128), "int64")
