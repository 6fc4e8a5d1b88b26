"""Every make_models model through each of these passes (in build order): span coverage
stays 100% and the interpreter's outputs are unchanged (rtol 1e-3). One import per model."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from passes_helpers import assert_same_outputs, evaluate

from engine import relay
from engine.relay.analysis import span_coverage
from engine.relay.frontend import load

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import make_models

T = relay.transform
PASSES: list[Callable[[], Any]] = [
    T.SimplifyInference, T.EliminateCommonSubexpr, T.FoldConstant, T.SimplifyExpr,
    T.CanonicalizeOps, T.FoldConstant, T.DeadCodeElimination, T.ToANormalForm,
    lambda: T.DeadCodeElimination(inline_once=True), T.ToGraphNormalForm, T.LambdaLift,
    T.RemoveUnusedFunctions,
]
SLOW = pytest.mark.slow
MODELS = ["mlp", "mobilenetv2", "bert2", "bert2_ln17", "chain_1000",
          pytest.param("resnet50", marks=SLOW), pytest.param("bert12", marks=SLOW),
          pytest.param("chain_50000", marks=SLOW)]


@pytest.mark.parametrize("name", MODELS)
def test_each_pass_keeps_spans_and_numerics(name: str, onnx_model: Callable[[str], Path]) -> None:
    path = onnx_model(name)
    mod = T.InferType()(load(str(path)).mod)
    inputs = make_models.example_inputs(onnx.load(str(path), load_external_data=False))
    reference = evaluate(mod, inputs)
    assert span_coverage(mod).ratio == 1.0, "the frontend leaves spans out"
    changed = []
    for make in PASSES:
        pass_ = make()
        new = pass_(mod)
        cov = span_coverage(new)
        assert cov.ratio == 1.0, f"{pass_.info.name} lost spans on {cov.missing[:5]}"
        if new is not mod:
            changed.append(pass_.info.name)
            assert_same_outputs(reference, evaluate(new, inputs))
        mod = T.InferType()(new)
    if name in ("resnet50", "mobilenetv2"):
        text = mod.astext(show_meta_data=False)
        assert "nn.batch_norm" not in text and "nn.bias_add" not in text
        assert "SimplifyInference" in changed and "FoldConstant" in changed
