"""Acceptance: `.pt2` files of real architectures import, keep their spans and match PyTorch.

torchvision ResNet-18, MobileNetV3-Small, EfficientNet-B0, ConvNeXt-T, Swin-T, ViT and
DeepLabV3 (1x3x64x64), and small Hugging Face BERT, DistilBERT, GPT-2, Llama, Qwen2, T5
encoder and Whisper encoder (2 layers, hidden 64), seeded random weights (see
engine/relay/testing/pt2_models.py). Each is exported once per session with
`torch.export.export` and saved with `torch.export.save`, as is (training IR) and after
`run_decompositions()` (Core ATen); the file is loaded by `frontend.load` (no unpickling).
Each form
- imports, its outputs (a ModelOutput's or OrderedDict's leaves) named by the output spec,
  and the interpreter matches PyTorch (rtol 1e-3);
- names layers by module path: every Linear and Conv module whose forward runs is a layer;
- goes through relay.build at O3 with 100 % span coverage after every pass, and the built
  graph matches PyTorch too.
All fourteen models in both forms take about 2 minutes on a 2-core machine.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from frontend_helpers import assert_fully_spanned, assert_matches

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.relay.frontend import load
from engine.relay.frontend.result import ImportResult
from engine.relay.interpreter import evaluate
from engine.relay.testing import pt2_models
from engine.relay.testing.coverage import CoverageCheck

torch = pytest.importorskip("torch")
for _package in ("torchvision", "transformers"):  # imported through pt2_models' shim
    if importlib.util.find_spec(_package) is None:
        pytest.skip(f"{_package} is not installed", allow_module_level=True)

pytestmark = pytest.mark.torch

FORMS = ("export", "decomposed")
# module classes each of whose instances must be a layer (Conv1D: GPT-2's projections)
ANCHORS = ("Linear", "Conv1d", "Conv2d", "Conv1D")
CASES = [pytest.param((name, form), id=f"{name}-{form}")
         for name in pt2_models.MODELS for form in FORMS]


@dataclass
class Exported:
    module: Any
    inputs: tuple[Any, ...]
    expected: list[np.ndarray]
    paths: dict[str, Path]
    called: set[str]  # the modules whose forward runs (Swin's attention calls F.linear on
    # its qkv Linear's weight: that module itself never runs)


@dataclass
class Case:
    exported: Exported
    result: ImportResult

    @property
    def feeds(self) -> dict[str, np.ndarray]:
        names = [p.name_hint for p in self.result.mod["main"].params]
        return dict(zip(names, (x.numpy() for x in self.exported.inputs)))


def _called_modules(module: Any, inputs: tuple[Any, ...]) -> set[str]:
    called: set[str] = set()
    hooks = [m.register_forward_pre_hook(lambda *_, name=name: called.add(name))
             for name, m in module.named_modules()]
    module(*inputs)
    for hook in hooks:
        hook.remove()
    return called


@pytest.fixture(scope="session")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cache: dict[str, Exported] = {}
    root = tmp_path_factory.mktemp("pt2")

    def get(name: str) -> Exported:
        if name not in cache:
            module, inputs = pt2_models.build(name)
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the exporters' own deprecations
                called = _called_modules(module, inputs)
                out = module(*inputs)
                program = torch.export.export(module, inputs)
                paths = {"export": root / f"{name}.pt2", "decomposed": root / f"{name}.core.pt2"}
                torch.export.save(program, str(paths["export"]))
                torch.export.save(program.run_decompositions(), str(paths["decomposed"]))
            expected = [t.numpy() for t in torch.utils._pytree.tree_leaves(out)]
            cache[name] = Exported(module, inputs, expected, paths, called)
        return cache[name]

    return get


@pytest.fixture(scope="module", params=CASES)
def case(request: pytest.FixtureRequest, exports: Any) -> Case:
    name, form = request.param
    exported = exports(name)
    return Case(exported, load(str(exported.paths[form])))


def test_import_matches_pytorch(case: Case) -> None:
    assert case.result.format == "pytorch"
    assert_matches(evaluate(case.result.mod, case.feeds), case.exported.expected)


def test_layers_are_module_paths(case: Case) -> None:
    assert_fully_spanned(case.result)
    layers = {layer["name"] for layer in case.result.graph["layers"]}
    anchors = {name for name, m in case.exported.module.named_modules()
               if type(m).__name__ in ANCHORS and name in case.exported.called}
    assert anchors and anchors <= layers, sorted(anchors - layers)[:5]


def test_outputs_are_named_by_the_output_spec(case: Case) -> None:
    names = [o["name"] for o in case.result.graph["outputs"]]
    assert len(names) == len(case.exported.expected)
    if hasattr(case.exported.module, "config"):  # a Hugging Face ModelOutput
        assert names[0] == "last_hidden_state"


def test_build_keeps_every_span_and_matches(case: Case) -> None:
    check = CoverageCheck()
    with tvm.transform.PassContext(opt_level=3, instruments=[check]):
        lib = relay.build(case.result.mod, target="llvm", params=case.result.params)
    assert {"SimplifyInference", "FoldConstant", "FuseOps", "LowerTE"} <= set(check.passes)
    assert check.failures == []
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in case.feeds.items():
        module.set_input(name, value)
    module.run()
    outputs = [module.get_output(i).numpy() for i in range(module.get_num_outputs())]
    assert_matches(outputs, case.exported.expected)
