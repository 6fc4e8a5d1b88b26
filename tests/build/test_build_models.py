"""relay.build on ResNet-50 and MobileNetV2 (bench/make_models.py): a recorded schedule
on every fused node, spans naming the layers, graph JSON sanity, records off."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest

import engine as tvm
from engine import relay
from engine.relay.frontend import from_onnx

MODELS = ("resnet50", "mobilenetv2")


@pytest.fixture(scope="session")
def imported(onnx_model: Callable[[str], Path]) -> dict[str, tuple[Any, Any]]:
    return {name: from_onnx(onnx.load(str(onnx_model(name)))) for name in MODELS}


@pytest.fixture(scope="session")
def built(imported: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    out = {}
    for name, (mod, params) in imported.items():
        with tvm.transform.PassContext(opt_level=3, config={"te.keep_schedule_record": True}):
            out[name] = relay.build(mod, target="llvm", params=params)
    return out


def _op_nodes(lib: Any) -> list[int]:
    graph = json.loads(lib.get_graph_json())
    return [k for k, node in enumerate(graph["nodes"]) if node["op"] == "tvm_op"]


@pytest.mark.parametrize("name", MODELS)
def test_every_fused_node_has_a_recorded_schedule(built: dict[str, Any], name: str) -> None:
    lib = built[name]
    bm = lib.build_module
    ops = _op_nodes(lib)
    assert len(ops) >= 50
    for k in ops:
        sched = bm.get_node_schedule(k)
        assert sched is not None
        assert len(sched.schedule_record) == len(sched.primitive_record) >= 2
        assert sched.primitive_record[0] == "vanilla"
        info = bm.get_node_info(k)
        assert info["spans"], f"node {k} ({info['name']}) has no layer names"
        calls = bm.get_lowered(k).calls  # a shared kernel: this node is one of its calls
        assert set(info["spans"]) in [set(span.source_names()) for span in calls]
    with pytest.raises(IndexError):
        bm.get_node_schedule(len(json.loads(lib.get_graph_json())["nodes"]))


def test_conv_kernels_are_tiled_vectorized_parallel(built: dict[str, Any]) -> None:
    lib = built["resnet50"]
    convs = [low for low in lib.build_module.lowered.values() if low.anchor == "nn.conv2d"]
    assert sum(len(low.calls) for low in convs) == 53  # calls; equal convs share a kernel
    assert len(convs) < 53
    text = str(convs[0].lower())
    assert '"parallel"' in text and '"vectorized"' in text and "allocate" in text
    assert {"cache_write", "compute_at", "vectorize", "parallel"} <= set(
        convs[0].schedule.primitive_record)


def test_spans_name_the_resnet_layers(built: dict[str, Any]) -> None:
    bm = built["resnet50"].build_module
    names = {n for k in _op_nodes(built["resnet50"]) for n in bm.get_node_info(k)["spans"]}
    assert {"resnetv1/conv1", "layer1.0.conv1", "layer4.2.conv3"} <= names
    lowered = next(iter(bm.lowered.values()))
    func = lowered.lower()[lowered.name]
    assert func.span.source_names() == lowered.func.span.source_names()


@pytest.mark.parametrize("name", MODELS)
def test_graph_json_is_consistent(built: dict[str, Any], name: str) -> None:
    lib = built[name]
    graph = json.loads(lib.get_graph_json())
    nodes, attrs = graph["nodes"], graph["attrs"]
    entries = graph["node_row_ptr"][-1]
    assert len(attrs["shape"][1]) == len(attrs["dltype"][1]) == len(attrs["storage_id"][1])
    assert len(attrs["shape"][1]) == entries
    assert graph["arg_nodes"] == [k for k, n in enumerate(nodes) if n["op"] == "null"]
    params = lib.get_params()
    assert set(params) == {nodes[k]["name"] for k in graph["arg_nodes"]} - {"data", "input"}
    for k, node in enumerate(nodes):
        for nid, _, _ in node["inputs"]:
            assert nid < k
        if node["op"] == "tvm_op":
            assert node["attrs"]["func_name"] in lib.get_lib()
            assert int(node["attrs"]["num_inputs"]) == len(node["inputs"])
    assert attrs["shape"][1][graph["node_row_ptr"][graph["heads"][0][0]]] == [1, 1000]
    storage = attrs["storage_id"][1]
    assert len(set(storage)) < len(storage)  # intermediates share buffers


def test_records_off_gives_empty_records(imported: dict[str, tuple[Any, Any]]) -> None:
    mod, params = imported["mobilenetv2"]
    with tvm.transform.PassContext(opt_level=3, config={"te.keep_schedule_record": False}):
        lib = relay.build(mod, target="llvm", params=params)
    bm = lib.build_module
    for k in _op_nodes(lib):
        sched = bm.get_node_schedule(k)
        assert len(sched.schedule_record) == len(sched.primitive_record) == 0
        assert bm.get_node_steps(k) == []
        assert "for (" in str(bm.get_lowered(k).lower())  # still scheduled and lowered


def test_steps_carry_what_the_explorer_shows(built: dict[str, Any]) -> None:
    bm = built["mobilenetv2"].build_module
    k = _op_nodes(built["mobilenetv2"])[0]
    steps = bm.get_node_steps(k)
    sched = bm.get_node_schedule(k)
    assert [s.primitive for s in steps] == sched.primitive_record
    assert steps[0].python.startswith("s = te.create_schedule")
    assert all(s.python.split("(")[0].endswith(s.primitive) or "=" in s.python
               for s in steps[1:])
    assert steps[0].loop_nest != steps[-1].loop_nest
    assert all(s.tedd["schedule_tree"].startswith("digraph") for s in steps)
    assert steps[-1].loop_nest == str(bm.get_lowered(k).lower())
