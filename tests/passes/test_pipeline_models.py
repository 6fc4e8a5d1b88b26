"""The O3 pipeline on every make_models model, pass by pass: span coverage stays 100% after
every pass, and the interpreter's outputs stay the same (rtol 1e-3) after every pass that
changed the module (numerics on every model but bert12, whose evaluation is too slow to
repeat per pass). Each model is imported and optimized once per session."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from passes_helpers import evaluate

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument
from engine.ir.expr import Call, Constant, Function
from engine.ir.module import IRModule
from engine.relay.analysis import post_order_visit, span_coverage
from engine.relay.frontend import load
from engine.relay.transform.pipeline import standard_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import make_models

MODELS = ["mlp", "resnet50", "mobilenetv2", "bert2", "bert2_ln17", "bert12"]
NUMERICS = {"mlp", "resnet50", "mobilenetv2", "bert2", "bert2_ln17"}


@dataclass(eq=False, repr=False)
class Checker(PassInstrument):
    """An instrument: span coverage and (optionally) outputs after every leaf pass."""

    inputs: dict[str, np.ndarray] | None
    reference: list[np.ndarray] | None
    coverage_failures: list[str] = field(default_factory=list)
    numeric_failures: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    before: IRModule | None = None

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        self.before = mod

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        if info.name in ("StandardPipeline", "FoldScaleAxis"):
            return  # a Sequential: its children were checked one by one
        self.passes.append(info.name)
        cov = span_coverage(mod)
        if cov.ratio != 1.0:
            self.coverage_failures.append(f"{info.name}: {cov} {cov.missing[:3]}")
        if mod is self.before:
            return
        self.changed.append(info.name)
        if self.inputs is None or self.reference is None:
            return
        try:
            _assert_close(self.reference, evaluate(mod, self.inputs))
        except AssertionError as err:
            self.numeric_failures.append(f"{info.name}: {str(err)[:300]}")


def _assert_close(expected: list[np.ndarray], actual: list[np.ndarray]) -> None:
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual):
        np.testing.assert_allclose(np.asarray(got, "float64"), np.asarray(want, "float64"),
                                   rtol=1e-3, atol=1e-4)


@dataclass
class Run:
    imported: IRModule
    optimized: IRModule
    checker: Checker


@pytest.fixture(scope="session")
def o3_runs(onnx_model: Callable[[str], Path]) -> Callable[[str], Run]:
    cache: dict[str, Run] = {}

    def run(name: str) -> Run:
        if name not in cache:
            path = onnx_model(name)
            mod = relay.transform.InferType()(load(str(path)).mod)
            inputs = reference = None
            if name in NUMERICS:
                inputs = make_models.example_inputs(onnx.load(str(path), load_external_data=False))
                reference = evaluate(mod, inputs)
            checker = Checker(inputs, reference)
            with tvm.transform.PassContext(opt_level=3, instruments=[checker]):
                optimized = standard_pipeline(3, "llvm")(mod)
            cache[name] = Run(mod, optimized, checker)
        return cache[name]

    return run


@pytest.mark.parametrize("name", MODELS)
def test_o3_keeps_span_coverage_after_every_pass(name: str, o3_runs: Callable[[str], Run]
                                                 ) -> None:
    run = o3_runs(name)
    assert span_coverage(run.imported).ratio == 1.0
    ran = set(run.checker.passes)
    assert {"SimplifyInference", "FoldConstant", "BackwardFoldScaleAxis", "AlterOpLayout",
            "FuseOps"} <= ran
    assert "FuseOps" in run.checker.changed
    assert run.checker.coverage_failures == []


@pytest.mark.parametrize("name", sorted(NUMERICS))
def test_o3_keeps_outputs_after_every_pass(name: str, o3_runs: Callable[[str], Run]) -> None:
    run = o3_runs(name)
    assert run.checker.numeric_failures == []
    assert len(run.checker.changed) >= 3  # the pipeline did rewrite the model


def _calls(func: Function) -> list[Call]:
    out: list[Call] = []
    post_order_visit(func.body, lambda e: out.append(e) if isinstance(e, Call) else None)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_o3_main_is_calls_to_primitive_functions(name: str, o3_runs: Callable[[str], Run]
                                                 ) -> None:
    main = o3_runs(name).optimized["main"]
    top = [c for c in _top_level_calls(main)]
    assert top
    for call in top:
        assert isinstance(call.op, Function) and call.op.is_primitive(), call


def _top_level_calls(main: Function) -> list[Call]:
    """Calls in main outside the fused functions."""
    out: list[Call] = []
    stack: list[Any] = [main.body]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Call):
            out.append(node)
            stack.extend(node.args)
        elif isinstance(node, relay.Tuple):
            stack.extend(node.fields)
        elif isinstance(node, relay.TupleGetItem):
            stack.append(node.tuple_value)
    return out


def test_o3_resnet50_folds_batch_norm_into_conv_weights(o3_runs: Callable[[str], Run]) -> None:
    run = o3_runs("resnet50")
    text = run.optimized.astext(show_meta_data=False)
    assert "batch_norm" not in text
    main = run.optimized["main"]
    convs = [c for call in _top_level_calls(main) for c in _calls(call.op)  # type: ignore
             if isinstance(c.op, tvm.ir.Op) and c.op.name == "nn.conv2d"]
    assert len(convs) == 53
    for conv in convs:
        names = conv.span.source_names()
        assert any(".conv" in n or "/conv" in n or "downsample.0" in n for n in names), names
        assert any(".bn" in n or "/bn" in n or "downsample.1" in n for n in names), names
    # each conv's weight is a constant argument of its fused call whose span names the BN
    weights = [arg for call in _top_level_calls(main) for arg in call.args
               if isinstance(arg, Constant) and arg.data.numpy().ndim == 4]
    assert len(weights) == 53
    assert all(any("bn" in n or "downsample.1" in n for n in w.span.source_names())
               for w in weights)


def test_o3_resnet50_folded_weight_is_scaled_by_bn(o3_runs: Callable[[str], Run],
                                                   onnx_model: Callable[[str], Path]) -> None:
    run = o3_runs("resnet50")
    model = onnx.load(str(onnx_model("resnet50")))
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    conv_w = init["resnetv1/conv1.weight"]
    gamma, var = init["resnetv1/bn1.weight"], init["resnetv1/bn1.running_var"]
    expected = conv_w * (gamma / np.sqrt(var + 1e-5))[:, None, None, None]
    main = run.optimized["main"]
    weights = [arg for call in _top_level_calls(main) for arg in call.args
               if isinstance(arg, Constant) and arg.data.numpy().shape == conv_w.shape]
    assert any(np.allclose(w.data.numpy(), expected, rtol=1e-4, atol=1e-6) for w in weights)


def make_models_path(name: str) -> Path:
    from shared_models import model_path

    return model_path(name)


@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2", "bert2"])
def test_o3_every_fused_function_names_its_layers(name: str, o3_runs: Callable[[str], Run]
                                                  ) -> None:
    main = o3_runs(name).optimized["main"]
    for call in _top_level_calls(main):
        func = call.op
        assert isinstance(func, Function)
        inside = {n for c in _calls(func) for n in c.span.source_names()}
        assert inside, f"fused function without layers: {func}"
        assert set(func.span.source_names()) >= inside
        assert call.span == func.span


@pytest.mark.parametrize("name", ["mobilenetv2", "resnet50"])
def test_layout_passes_keep_outputs_and_spans(name: str, onnx_model: Callable[[str], Path]
                                              ) -> None:
    """ConvertLayout to NHWC (depthwise convs get HWOI) and AlterOpLayout for an AVX2 CPU
    (NCHW8c blocked convs) on a whole model: same outputs, every expression spanned."""
    path = onnx_model(name)
    mod = relay.transform.InferType()(load(str(path)).mod)
    inputs = make_models.example_inputs(onnx.load(str(path), load_external_data=False))
    reference = evaluate(mod, inputs)
    prepare = [relay.transform.SimplifyInference(), relay.transform.FoldConstant(),
               relay.transform.FoldScaleAxis()]
    for layout_pass in (relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]}),
                        relay.transform.AlterOpLayout("llvm -mcpu=core-avx2")):
        with tvm.transform.PassContext(opt_level=3):
            out = tvm.transform.Sequential([*prepare, layout_pass,
                                            relay.transform.FoldConstant(),
                                            relay.transform.FuseOps()])(mod)
        assert span_coverage(out).ratio == 1.0
        assert "layout_transform" in out.astext(show_meta_data=False)
        _assert_close(reference, evaluate(out, inputs))
