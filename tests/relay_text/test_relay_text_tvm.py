"""Relay text as TVM 0.19's printer writes it (`mod.astext(show_meta_data=True)`): the
hand-written fixtures conv_bn_relu.relay and bert_block.relay (attribute defaults left
out, `/* ty=... */` annotations, `%N = ...;` bindings, the version header and the
`#[metadata]` node graph) load, type-check, run like numpy, keep 100 % span coverage
through every pass of the O3 pipeline with their `line N` layers, and build."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tvm_fixtures import FIXTURES, REFERENCES, constants, inputs

import engine as tvm
from engine import relay
from engine.ir.expr import Call, Constant
from engine.ir.module import IRModule
from engine.ir.span import Span
from engine.relay.analysis import post_order_visit, span_coverage
from engine.relay.frontend import load
from engine.relay.interpreter import evaluate
from engine.relay.testing.coverage import CoverageCheck
from engine.relay.transform.pipeline import standard_pipeline

NAMES = sorted(FIXTURES)


def _load(name: str) -> IRModule:
    return relay.transform.InferType()(load(str(FIXTURES[name])).mod)


def _nodes(mod: IRModule, kind: type) -> list[Any]:
    found: list[Any] = []
    post_order_visit(mod["main"], lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


@pytest.mark.parametrize("name", NAMES)
def test_metadata_constants_are_the_seeded_arrays(name: str) -> None:
    mod = _load(name)
    loaded = {c.data.numpy().tobytes() for c in _nodes(mod, Constant)}
    for array in constants(name):
        assert array.tobytes() in loaded


@pytest.mark.parametrize("name", NAMES)
def test_loads_type_checks_and_runs_like_numpy(name: str) -> None:
    mod = _load(name)
    feed = inputs(name)
    got = np.asarray(evaluate(mod, feed))
    want = REFERENCES[name](*feed.values(), constants(name))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_omitted_attributes_hold_tvms_defaults() -> None:
    calls = {c.op.name: c for c in _nodes(_load("conv_bn_relu"), Call)}
    assert calls["nn.softmax"].attrs.axis == -1
    assert calls["nn.bias_add"].attrs.axis == 1
    conv = calls["nn.conv2d"].attrs
    assert (conv.data_layout, conv.kernel_layout, conv.strides) == ("NCHW", "OIHW", (1, 1))
    assert calls["nn.batch_norm"].attrs.epsilon == 1e-5


def test_every_call_is_a_layer_named_by_its_line() -> None:
    mod = _load("conv_bn_relu")
    text = FIXTURES["conv_bn_relu"].read_text().splitlines()
    for call in _nodes(mod, Call):
        assert isinstance(call.span, Span) and call.span.source_name.name == "conv_bn_relu.relay"
        line = text[call.span.line - 1]
        assert call.op.name + "(" in line[call.span.column - 1:]
        assert call.span.source_names() == (f"line {call.span.line}",)


def test_import_lists_the_line_layers() -> None:
    graph = load(str(FIXTURES["conv_bn_relu"])).graph
    layers = {layer["name"]: layer for layer in graph["layers"]}
    assert list(layers) == [f"line {n}" for n in range(3, 18) if n not in (5, 10)]  # %N.0
    assert layers["line 3"]["op_type"] == "nn.conv2d" and layers["line 3"]["inputs"] == ["data"]
    assert layers["line 11"]["inputs"] == ["line 9", "line 7"]  # add(%7 = %6.0, %4)


@pytest.mark.parametrize("name", NAMES)
def test_o3_keeps_full_span_coverage_and_the_outputs(name: str) -> None:
    mod = _load(name)
    assert span_coverage(mod).ratio == 1.0
    checker = CoverageCheck()
    with tvm.transform.PassContext(opt_level=3, instruments=[checker]):
        optimized = standard_pipeline(3, "llvm")(mod)
    assert {"FoldConstant", "FuseOps"} <= set(checker.passes)
    assert checker.failures == []
    layers = {n for c in _nodes(optimized, Call) for n in c.span.source_names()}
    assert any(n.startswith("line ") for n in layers)
    feed = inputs(name)
    np.testing.assert_allclose(np.asarray(evaluate(optimized, feed)),
                               np.asarray(evaluate(mod, feed)), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_relay_build_runs_like_the_interpreter(name: str) -> None:
    from engine.contrib import graph_executor

    mod = _load(name)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    module = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    feed = inputs(name)
    module.set_input(**feed)
    module.run()
    np.testing.assert_allclose(module.get_output(0).numpy(), np.asarray(evaluate(mod, feed)),
                               rtol=1e-3, atol=1e-4)
