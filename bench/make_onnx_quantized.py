#!/usr/bin/env python3
"""ONNX models quantized by onnxruntime's own quantizer, made once and cached.

The float models are torch.onnx exports with seeded random weights (TorchScript exporter,
opset 17; engine/relay/testing/torch_models.py): torchvision ResNet-18, ResNet-50,
MobileNetV2, MobileNetV3-Small and EfficientNet-B0 at 1x3x64x64 (ResNet-50 and MobileNetV2,
which torch_models does not list, exported here the same way: torch.manual_seed(0), batch
norm statistics randomized), and small Hugging Face BERT (2 layers)
and GPT-2 configurations (16 tokens). Each goes through onnxruntime's `quant_pre_process`
(shape inference and graph optimization, as onnxruntime recommends before static
quantization) and then, as `VARIANTS` lists:

- `quantize_static` calibrated (MinMax) on seeded random data, in QuantFormat.QDQ
  (QuantizeLinear/DequantizeLinear pairs around float ops) and QuantFormat.QOperator
  (QLinearConv, QLinearMatMul and the com.microsoft QLinear* ops), per tensor and with
  per_channel=True; QDQ with onnxruntime's default int8 activations, QOperator with uint8
  activations (its other common form);
- `quantize_dynamic` (int8 weights, activations quantized at run time by
  DynamicQuantizeLinear: MatMulInteger / ConvInteger) for BERT, GPT-2, ResNet-18 and
  ResNet-50.

Weights are int8 with reduce_range=True (7 bits, [-64, 63]), as onnxruntime advises for
machines without VNNI: its AVX2 u8s8 kernels (vpmaddubsw) add pairs of products in
saturating int16, so with full 8-bit weights its MatMulInteger, ConvInteger and QLinearConv
results depend on the CPU (off by 1e5 in an int32 accumulator on this machine's AVX2).
With uint8 activations (u8s8, the QOperator and dynamic files) onnxruntime 1.32's x86
QLinearConv was up to 54 LSB away from exact integer arithmetic on a small conv net with
full 8-bit weights (found by the explorer's numerics work); bench/bench_onnx_quantized.py
measures it again on one seeded 3x3 convolution of 64 channels: 11 LSB (653 of 1600
outputs differ) with 8-bit weights, 0 with 7-bit ones, and 0 with int8 activations either
way (bench/results/onnx_quantized.md). With 7-bit weights a pair of products stays within
int16 and every CPU computes the ONNX definition exactly, which is what our integer ops
compute.

Files are kept in bench/models/quantized/<key>/<model>.<variant>.<hash>.onnx, the key
naming onnxruntime's version and a hash of the generating code, the hash the float
export's, so any change makes them afresh (and removes the other keys' folders); beside each, <same>.npz holds seeded test inputs (`in:<name>` entries).

The measuring functions below (onnxruntime's outputs in either session, the error in
output quantization steps, `run_stages`: the interpreter before and after relay.build's
O3 pipeline and the built graph) serve bench/bench_onnx_quantized.py and the acceptance
test tests/frontends/test_frontend_onnx_quantized.py.

    .venv/bin/python bench/make_onnx_quantized.py [--models resnet18,...] [--variants ...]
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import inspect
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.relay.testing import torch_models  # noqa: E402
from engine.relay.testing.torch_models import Export  # noqa: E402

MODEL_DIR = ROOT / "bench" / "models"
CACHE = MODEL_DIR / "quantized"
FLOAT_CACHE = MODEL_DIR / "torch_export"
FLOAT_EXPORT = Export("torchscript", 17)
CNNS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0")
TRANSFORMERS = ("bert_tiny", "gpt2_tiny")
MODELS = (*CNNS, *TRANSFORMERS)
CALIBRATION_SAMPLES = 4


@dataclass(frozen=True, slots=True)
class Variant:
    """One way of quantizing: `static` (calibrated) or `dynamic`; for static ones the
    format ("QDQ" or "QOperator"), the activation type and whether weights are per
    output channel."""

    name: str
    static: bool
    quant_format: str = "QDQ"
    activation: str = "QInt8"
    per_channel: bool = False


VARIANTS = {v.name: v for v in (
    Variant("qdq", True, "QDQ", "QInt8"),
    Variant("qdq_per_channel", True, "QDQ", "QInt8", per_channel=True),
    Variant("qoperator", True, "QOperator", "QUInt8"),
    Variant("qoperator_per_channel", True, "QOperator", "QUInt8", per_channel=True),
    Variant("dynamic", False),
)}
DYNAMIC_MODELS = ("resnet18", "resnet50", *TRANSFORMERS)


def cases() -> list[tuple[str, str]]:
    """Every (model, variant) this script makes."""
    return [(model, variant) for model in MODELS for variant in VARIANTS
            if VARIANTS[variant].static or model in DYNAMIC_MODELS]


# --- float models ----------------------------------------------------------------------
def float_model(name: str) -> Path:
    """The float export of `name` (cached by torch_models; MobileNetV2, which torch_models
    does not list, is exported here the same way)."""
    if name in torch_models.MODELS:
        return torch_models.cached_export(FLOAT_CACHE, name, FLOAT_EXPORT)
    path = CACHE / "float" / f"{name}.{FLOAT_EXPORT.tag}.onnx"
    if not path.exists():
        _locked(path, lambda: _export_torchvision(name, path))
    return path


def _export_torchvision(name: str, path: Path) -> None:
    import torch

    torch.manual_seed(0)
    module = getattr(torch_models.import_torchvision().models, name)(weights=None).eval()
    torch_models.randomize_batch_norm_statistics(module)
    image = torch.randn(*torch_models.IMAGE)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch_models.torchscript_export(module, (image,), path, FLOAT_EXPORT.opset, ["image"],
                                    ["logits"])


# --- inputs ----------------------------------------------------------------------------
def sample_inputs(name: str, seed: int) -> dict[str, np.ndarray]:
    """Seeded random inputs of model `name`: an image of N(0, 1) values, or token ids with
    an attention mask (right padding of 3 tokens; BERT also takes token types)."""
    rng = np.random.default_rng(seed)
    if name in CNNS:
        return {"image": rng.standard_normal(torch_models.IMAGE).astype("float32")}
    seq = torch_models.SEQ
    mask = np.ones((1, seq), dtype="int64")
    mask[0, seq - 3:] = 0
    inputs = {"input_ids": rng.integers(0, torch_models.VOCAB, (1, seq), dtype="int64"),
              "attention_mask": mask}
    if name == "bert_tiny":
        inputs["token_type_ids"] = (np.arange(seq) >= seq // 2).astype("int64")[None]
    return inputs


def _reader(name: str) -> Any:
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        """CALIBRATION_SAMPLES seeded random inputs (seeds 100, 101, ...)."""

        def __init__(self) -> None:
            self.samples = iter([sample_inputs(name, 100 + k)
                                 for k in range(CALIBRATION_SAMPLES)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.samples, None)

    return Reader()


# --- quantization ----------------------------------------------------------------------
def quantized_model(name: str, variant: str) -> Path:
    """The quantized file of (`name`, `variant`), made on first use (file-locked)."""
    if variant not in VARIANTS or (not VARIANTS[variant].static and name not in DYNAMIC_MODELS):
        raise ValueError(f"no variant {variant!r} of {name!r}; cases(): {cases()}")
    source = float_model(name)
    source_hash = hashlib.sha256(source.read_bytes()).hexdigest()[:10]
    path = CACHE / _cache_key() / f"{name}.{variant}.{source_hash}.onnx"
    if not (path.exists() and path.with_suffix(".npz").exists()):
        _remove_stale_caches()
        _locked(path, lambda: _quantize(name, source, VARIANTS[variant], path))
    return path


def test_inputs(path: Path) -> dict[str, np.ndarray]:
    """The seeded test inputs saved beside a quantized file."""
    with np.load(path.with_suffix(".npz")) as data:
        return {k[3:]: data[k] for k in data.files if k.startswith("in:")}


def _cache_key() -> str:
    """onnxruntime's version and a hash of what makes a file: the generating code of this
    module (not its measuring code), the variants and the calibration; a file's name
    carries a hash of the float export it came from."""
    made_by = (_prepare_float_model, _quantize, sample_inputs, _reader, _export_torchvision)
    digest = hashlib.sha256("".join(inspect.getsource(fn) for fn in made_by).encode())
    digest.update(repr((VARIANTS, CALIBRATION_SAMPLES)).encode())
    version = metadata.version("onnxruntime")
    return f"ort{version}-{digest.hexdigest()[:12]}"


def _remove_stale_caches() -> None:
    """Files made by another onnxruntime or an older form of this script."""
    if CACHE.is_dir():
        for old in CACHE.glob("ort*"):
            if old.is_dir() and old.name != _cache_key():
                shutil.rmtree(old, ignore_errors=True)


def _locked(path: Path, make: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            make()


def _quantize(name: str, source: Path, variant: Variant, path: Path) -> None:
    from onnxruntime.quantization import (
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unshared, prepared = Path(tmp) / "unshared.onnx", Path(tmp) / "prepared.onnx"
        _prepare_float_model(source, unshared)
        quant_pre_process(str(unshared), str(prepared))
        out = Path(tmp) / "quantized.onnx"
        if variant.static:
            quantize_static(str(prepared), str(out), _reader(name),
                            quant_format=getattr(QuantFormat, variant.quant_format),
                            per_channel=variant.per_channel,
                            activation_type=getattr(QuantType, variant.activation),
                            weight_type=QuantType.QInt8, reduce_range=True)
        else:
            quantize_dynamic(str(prepared), str(out), weight_type=QuantType.QInt8,
                             reduce_range=True)
        np.savez(path.with_suffix(".npz"),
                 **{f"in:{k}": v for k, v in sample_inputs(name, 7).items()})
        out.replace(path)


def _prepare_float_model(source: Path, path: Path) -> None:
    """`source` made fit for onnxruntime 1.32's quantizer, written to `path`:

    - no initializer feeds two nodes (each further use gets its own copy). The TorchScript
      exporter merges equal initializers: a fresh BERT's zero biases become one tensor
      feeding LayerNormalization and the Linear layers' Add, which the QOperator quantizer
      quantizes once, as a uint8 activation, and hands to QGemm as its int32 bias (an
      invalid model);
    - infinite constants become float32's extremes. The exports build the attention mask
      from a -inf constant; MinMax calibration then gives the mask tensors an infinite
      scale, and the QDQ model turns every unmasked score into NaN (0 * inf), an
      attention that means nothing. transformers' own masks use float32's lowest value.
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    initializers = {t.name: t for t in model.graph.initializer}
    seen: dict[str, int] = {}
    for node in model.graph.node:
        for k, name in enumerate(node.input):
            if name not in initializers:
                continue
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                copy = onnx.TensorProto()
                copy.CopyFrom(initializers[name])
                copy.name = f"{name}.use{seen[name]}"
                model.graph.initializer.append(copy)
                node.input[k] = copy.name
    tensors = [*model.graph.initializer,
               *(a.t for n in model.graph.node for a in n.attribute if a.HasField("t"))]
    for tensor in tensors:
        value = numpy_helper.to_array(tensor)
        if value.dtype == np.float32 and np.isinf(value).any():
            finfo = np.finfo(np.float32)
            tensor.CopyFrom(numpy_helper.from_array(
                np.clip(value, finfo.min, finfo.max).astype("float32"), tensor.name))
    onnx.save(model, str(path))


def op_census(path: Path) -> dict[str, int]:
    """How many nodes of each (domain-qualified) op type the file has."""
    import onnx

    counts: dict[str, int] = {}
    for node in onnx.load(str(path)).graph.node:
        key = f"{node.domain}.{node.op_type}" if node.domain else node.op_type
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


# --- measuring against onnxruntime -----------------------------------------------------
def output_steps(model: Any) -> list[float | None]:
    """Each output's quantization step: the scale of the DequantizeLinear making it (None
    for an output no per-tensor DequantizeLinear makes)."""
    from onnx import numpy_helper

    producer = {out: node for node in model.graph.node for out in node.output}
    constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    steps: list[float | None] = []
    for output in model.graph.output:
        node = producer.get(output.name)
        scale = constants.get(node.input[1]) if node and node.op_type == "DequantizeLinear" \
            else None
        steps.append(None if scale is None or scale.size != 1 else float(scale))
    return steps


def onnxruntime_outputs(path: Path, inputs: dict[str, np.ndarray], optimized: bool
                        ) -> list[np.ndarray]:
    """onnxruntime's outputs: the default session (`optimized`, ORT_ENABLE_ALL: QDQ fused
    into integer kernels) or the file's literal semantics (ORT_DISABLE_ALL)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def output_error(actual: np.ndarray, expected: np.ndarray, step: float | None) -> float:
    """The largest difference: in quantization steps (LSBs) for a dequantized output, as
    an integer difference for an integer one, as a float otherwise."""
    diff = np.abs(actual.astype("float64") - expected.astype("float64"))
    if not diff.size:
        return 0.0
    worst = float(diff.max())
    return round(worst / step, 3) if step else worst


def as_arrays(value: Any) -> list[np.ndarray]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return [np.asarray(v.numpy() if hasattr(v, "numpy") else v) for v in items]


@dataclass
class Stages:
    """A model's outputs at each stage of relay.build at O3, and the pass instrument that
    checked span coverage after every pass; `lib` is the built factory module."""

    before: list[np.ndarray]
    after: list[np.ndarray]
    built: list[np.ndarray]
    coverage: Any
    lib: Any
    seconds: dict[str, float]


def run_stages(result: Any, inputs: dict[str, np.ndarray]) -> Stages:
    """The interpreter on the import, relay.build's passes one by one (the optimized
    module evaluated before LowerTE), code generation and the graph runtime."""
    import engine as tvm
    from engine.contrib import graph_executor
    from engine.relay.backend.build_module import build_passes, codegen
    from engine.relay.interpreter import evaluate
    from engine.relay.testing.coverage import CoverageCheck
    from engine.relay.transform.pipeline import bind_params

    clock, seconds = time.perf_counter(), {}
    before = as_arrays(evaluate(result.mod, inputs))
    seconds["interpret_s"], clock = time.perf_counter() - clock, time.perf_counter()
    check = CoverageCheck()
    with tvm.transform.PassContext(opt_level=3, instruments=[check]):
        pipeline, *lowering = build_passes("llvm")
        mod = pipeline(bind_params(result.mod, result.params))
        seconds["pipeline_s"] = time.perf_counter() - clock
        after = as_arrays(evaluate(mod, inputs))
        clock = time.perf_counter()
        for stage in lowering:
            mod = stage(mod)
        lib = codegen(mod, "llvm")
        seconds["lower_s"] = time.perf_counter() - clock
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in inputs.items():
        module.set_input(name, value)
    module.run()
    built = [module.get_output(i).numpy() for i in range(module.get_num_outputs())]
    return Stages(before, after, built, check, lib, seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    for name, variant in picked_cases(args.models, args.variants):
        path = quantized_model(name, variant)
        print(f"{name}.{variant}: {path.relative_to(ROOT)}")
        print("   ", ", ".join(f"{k} {v}" for k, v in op_census(path).items()))
    return 0


def picked_cases(models: str, variants: str) -> list[tuple[str, str]]:
    """The cases among comma-separated `models` and `variants`."""
    chosen = set(models.split(",")), set(variants.split(","))
    return [c for c in cases() if c[0] in chosen[0] and c[1] in chosen[1]]


if __name__ == "__main__":
    raise SystemExit(main())
