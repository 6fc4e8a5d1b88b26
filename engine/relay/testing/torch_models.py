"""PyTorch models exported with `torch.onnx.export`, for tests and benchmarks.

torchvision's ResNet-18, MobileNetV3-Small, EfficientNet-B0 and ConvNeXt-Tiny, and small
Hugging Face BERT and GPT-2 configurations, with seeded random weights (nothing is
downloaded), exported by either of torch's two exporters (`Export`):

- `dynamo=False`: the TorchScript exporter;
- `dynamo=True`: the torch.export + onnxscript exporter, saved self-contained (its
  default writes the weights to an external data file).

`export(name, directory, Export(...))` writes `<name>.<tag>.onnx` and, beside it,
`<same>.npz` holding the example inputs and PyTorch's outputs for them (`in:<name>` and
`out:<k>` entries), so a reader needs neither torch nor the model to check numerics.

torch, torchvision, transformers and onnxscript are imported lazily: importing this module
needs none of them.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.util
import inspect
import shutil
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

IMAGE = (1, 3, 64, 64)
SEQ = 16
VOCAB = 100


def import_torchvision() -> ModuleType:
    """`import torchvision`, also where its compiled ops cannot load.

    PyPI's torchvision wheel is built against CUDA: on a CPU-only torch its `_C` library
    fails to load (libtorch_cuda is missing), torchvision then runs without its custom ops,
    and its import still calls `torch.library.register_fake("torchvision::nms")` (and
    `qnms`), which fails with "operator torchvision::nms does not exist". The model
    definitions are pure Python and need none of those ops (they serve detection:
    NMS, RoI pooling), so when the library cannot load we declare the two schemas the
    import registers fakes for -- schemas only, with no kernel: calling them still fails.
    Every other torchvision op is registered only when the library loaded.
    """
    _prepare_torchvision()
    import torchvision

    return torchvision


def import_transformers() -> ModuleType:
    """`import transformers`: its model modules import torchvision when it is installed,
    so the same schemas are declared first (see `import_torchvision`)."""
    _prepare_torchvision()
    import transformers

    return transformers


def _prepare_torchvision() -> None:
    if "torchvision" not in sys.modules and not _torchvision_ops_load():
        _declare_torchvision_nms_schemas()


def _torchvision_ops_load() -> bool:
    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return True  # not installed: let the import itself fail
    libraries = sorted(Path(next(iter(spec.submodule_search_locations))).glob("_C*.so"))
    if not libraries:
        return False
    try:
        torch.ops.load_library(str(libraries[0]))
    except (OSError, RuntimeError):
        return False
    return True


def _declare_torchvision_nms_schemas() -> None:
    import torch

    if hasattr(torch.ops.torchvision, "nms"):
        return
    library = torch.library.Library("torchvision", "DEF")
    for name in ("nms", "qnms"):
        library.define(f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _KEEP.append(library)  # a Library's definitions live as long as the object


_KEEP: list[Any] = []


# --- models ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TorchModel:
    """A model in eval mode returning a tensor or a tuple of tensors, its example inputs
    (forward's positional arguments, by ONNX input name) and its ONNX output names."""

    module: Any
    inputs: dict[str, Any]
    outputs: tuple[str, ...]


def _vision(factory: str) -> Callable[[int], TorchModel]:
    def build(batch: int) -> TorchModel:
        import torch

        models = import_torchvision().models
        torch.manual_seed(0)
        module = getattr(models, factory)(weights=None).eval()
        randomize_batch_norm_statistics(module)
        image = torch.randn(batch, *IMAGE[1:])
        return TorchModel(module, {"image": image}, ("logits",))

    return build


def randomize_batch_norm_statistics(module: Any) -> None:
    """Fresh BatchNorm layers have mean 0, variance 1: an importer that dropped them
    would still match. Seeded running statistics make every normalization count."""
    import torch

    with torch.no_grad():
        for layer in module.modules():
            if not isinstance(layer, torch.nn.modules.batchnorm._BatchNorm):
                continue
            if layer.running_mean is not None and layer.running_var is not None:
                layer.running_mean.uniform_(-0.2, 0.2)
                layer.running_var.uniform_(0.5, 1.5)


def _text_inputs(batch: int, seed: int) -> dict[str, Any]:
    """Token ids and an attention mask of ones but for the last 3 + row tokens (right
    padding, so the mask matters and the rows differ)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    mask = torch.ones(batch, SEQ, dtype=torch.int64)
    for row in range(batch):
        mask[row, SEQ - 3 - row:] = 0
    return {"input_ids": torch.randint(0, VOCAB, (batch, SEQ), generator=generator),
            "attention_mask": mask}


@functools.cache
def _named_outputs_class() -> type:
    import torch

    class NamedOutputs(torch.nn.Module):
        """A Hugging Face model called with positional inputs (in `keys` order), returning
        its `names` outputs as a tuple instead of a ModelOutput."""

        def __init__(self, model: Any, keys: tuple[str, ...], names: tuple[str, ...]) -> None:
            super().__init__()
            self.model = model
            self.keys = keys
            self.names = names

        def forward(self, *args: Any) -> tuple[Any, ...]:
            out = self.model(**dict(zip(self.keys, args)))
            return tuple(out[name] for name in self.names)

    NamedOutputs.__qualname__ = "NamedOutputs"
    return NamedOutputs


def _hugging_face(model: Any, inputs: dict[str, Any], outputs: tuple[str, ...]) -> TorchModel:
    wrapper = _named_outputs_class()(model.eval(), tuple(inputs), outputs)
    return TorchModel(wrapper.eval(), inputs, outputs)


def _bert(batch: int) -> TorchModel:
    import torch

    transformers = import_transformers()
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128,
                                     max_position_embeddings=64)
    inputs = _text_inputs(batch, seed=1)
    inputs["token_type_ids"] = (torch.arange(SEQ) >= SEQ // 2).long().expand(batch, SEQ)
    return _hugging_face(transformers.BertModel(config), inputs,
                         ("last_hidden_state", "pooler_output"))


def _gpt2(batch: int) -> TorchModel:
    import torch

    transformers = import_transformers()
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2,
                                     n_head=4, use_cache=False,
                                     bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    return _hugging_face(transformers.GPT2LMHeadModel(config), _text_inputs(batch, seed=2),
                         ("logits",))


MODELS: dict[str, Callable[[int], TorchModel]] = {
    "resnet18": _vision("resnet18"),
    "mobilenet_v3_small": _vision("mobilenet_v3_small"),
    "efficientnet_b0": _vision("efficientnet_b0"),
    "convnext_tiny": _vision("convnext_tiny"),
    "bert_tiny": _bert,
    "gpt2_tiny": _gpt2,
}


# --- export ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Export:
    """How to export: `exporter` "torchscript" (dynamo=False) or "dynamo"; `opset` None for
    the exporter's default (20 in torch 2.13); `dynamic_batch` makes the batch dimension of
    every input and output symbolic."""

    exporter: str
    opset: int | None = None
    dynamic_batch: bool = False

    def __post_init__(self) -> None:
        if self.exporter not in ("torchscript", "dynamo"):
            raise ValueError(f"exporter is 'torchscript' or 'dynamo', not {self.exporter!r}")

    @property
    def tag(self) -> str:
        dynamic = "-dynbatch" if self.dynamic_batch else ""
        return f"{self.exporter}-opset{self.opset or 'default'}{dynamic}"


# what the tests and the benchmark export every model with: the TorchScript exporter at
# opset 17 (LayerNormalization's first opset, where many exports are pinned) and the
# dynamo exporter at its default
EXPORTS = (Export("torchscript", 17), Export("dynamo"))


def export_path(directory: Path, name: str, how: Export) -> Path:
    return Path(directory) / f"{name}.{how.tag}.onnx"


def reference_path(onnx_path: Path) -> Path:
    return Path(onnx_path).with_suffix(".npz")


def cached_export(root: Path, name: str, how: Export) -> Path:
    """`export` into `root/<versions>/` unless it is there already (file-locked, so
    concurrent runs export each model once). The folder is named after the versions of
    torch, torchvision, transformers and onnxscript and a hash of this file, so a change
    to any of them exports afresh (and removes the folders of other versions)."""
    path = cache_path(root, name, how)
    if path.exists() and reference_path(path).exists():
        return path
    directory = path.parent
    if not directory.exists():
        _remove_stale_caches(Path(root))
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path.exists() and reference_path(path).exists()):
            export(name, directory, how)
    return path


def cache_path(root: Path, name: str, how: Export) -> Path:
    """Where `cached_export` keeps this export (it may not be there yet)."""
    return export_path(Path(root) / _cache_key(), name, how)


def _remove_stale_caches(root: Path) -> None:
    """Exports made for other versions or an older form of this file (a few hundred MB
    each): a new cache replaces them."""
    if root.is_dir():
        for old in root.iterdir():
            if old.is_dir() and old.name != _cache_key():
                shutil.rmtree(old, ignore_errors=True)


def _cache_key() -> str:
    versions = "-".join(f"{package}{metadata.version(package)}"
                        for package in ("torch", "torchvision", "transformers", "onnxscript"))
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:10]
    return f"{versions}-{digest}"


def export(name: str, directory: Path, how: Export) -> Path:
    """Export model `name` into `directory` as `how` says, with the reference `.npz`
    beside it; returns the `.onnx` path."""
    import onnx
    import torch

    # torch.export specializes a dim of size 1: a dynamic batch is exported from a batch of 2
    model = MODELS[name](2 if how.dynamic_batch else 1)
    path = export_path(directory, name, how)
    path.parent.mkdir(parents=True, exist_ok=True)
    args = tuple(model.inputs.values())
    inputs, outputs = list(model.inputs), list(model.outputs)
    # the exporters warn about their own deprecations and tracing details, which is
    # theirs to fix; a warning-as-error test session must not fail on them
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = model.module(*args)
        if how.exporter == "dynamo":
            program = torch.onnx.export(model.module, args, dynamo=True, opset_version=how.opset,
                                        input_names=inputs, output_names=outputs,
                                        dynamic_shapes=_dynamo_batch(model, how.dynamic_batch),
                                        verbose=False)
            assert program is not None  # dynamo=True always returns the program
            onnx.save(program.model_proto, str(path))  # self-contained: no external data
        else:
            torchscript_export(model.module, args, path, how.opset, inputs, outputs,
                               _torchscript_batch(model, how.dynamic_batch))
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    arrays = {f"in:{k}": v.numpy() for k, v in model.inputs.items()}
    arrays.update({f"out:{i}": t.numpy() for i, t in enumerate(expected)})
    np.savez(reference_path(path), **arrays)
    return path


def _dynamo_batch(model: TorchModel, dynamic: bool) -> tuple[Any, ...] | None:
    if not dynamic:
        return None
    from torch.export import Dim

    batch = Dim("batch", min=1, max=64)
    specs = tuple({0: batch} for _ in model.inputs)
    params = inspect.signature(model.module.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return (specs,)  # forward(*args): one entry, the tuple of arguments
    return specs


def _torchscript_batch(model: TorchModel, dynamic: bool) -> dict[str, dict[int, str]] | None:
    if not dynamic:
        return None
    return {name: {0: "batch"} for name in (*model.inputs, *model.outputs)}


def load_reference(onnx_path: Path) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """(inputs by name, PyTorch's outputs) saved beside an exported model."""
    with np.load(reference_path(onnx_path)) as data:
        inputs = {k[3:]: data[k] for k in data.files if k.startswith("in:")}
        outs = sorted((int(k[4:]), data[k]) for k in data.files if k.startswith("out:"))
    return inputs, [v for _, v in outs]


def torchscript_export(module: Any, args: tuple[Any, ...], path: Path, opset: int | None,
                       input_names: list[str], output_names: list[str],
                       dynamic_axes: dict[str, Any] | None = None) -> None:
    """`module` written by torch.onnx's TorchScript exporter, its warnings silenced (its own
    deprecation notice among them: theirs to fix, and a warning-as-error test session must
    not fail on them)."""
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), dynamo=False, opset_version=opset,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes)


def exported_opset(path: Path) -> int:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
