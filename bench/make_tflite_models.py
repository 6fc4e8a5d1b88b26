#!/usr/bin/env python3
"""Keras applications converted by TensorFlow's TFLiteConverter, with their reference outputs.

Runs in the TensorFlow venv (`make tflite-models` creates `.venv-tf` and calls this script).
Each model is built with seeded random weights (`weights=None`; batch-norm statistics are
randomised too, so no layer is an identity), at a small input size, and converted six
ways: float32, float16 weights, dynamic-range ("hybrid": int8 weights, float activations),
full-integer (`int8`: int8 kernels, float input and output; `uint8io`: the same kernels
with a uint8 input and output, `inference_input_type`), and `int16x8` (int16 activations,
int8 weights; float kernels where TFLite has no 16x8 one, as for MobileNetV3's HARD_SWISH). The integer ones are calibrated on a seeded representative dataset (eight
scaled copies of the example input). The batch dimension is left
dynamic, as `from_keras_model` leaves it, so the files carry the SHAPE / STRIDED_SLICE /
PACK arithmetic real conversions carry.

For every `NAME_VARIANT.tflite` it writes `NAME_VARIANT.npz` holding a seeded input
(`in:<tensor>`; for an integer input, the float example quantized with the input's
parameters) and TFLite's own interpreter's outputs for it: `out:<tensor>` from the builtin
kernels (TFLite's "generic optimized" kernels, what an interpreter without delegates runs:
the reference the tests compare to), `ref:<tensor>` from the builtin reference kernels
(`OpResolverType.BUILTIN_REF`; they compute some int8 ops differently, e.g. LOGISTIC in
fixed point where the optimized kernel uses a float-built lookup table), and
`xnnpack:<tensor>` with the default XNNPACK delegate.

Usage:  python bench/make_tflite_models.py OUTDIR [--only NAME[,NAME...]]
                                          [--variants VARIANT[,VARIANT...]] [--list]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "0")

import tensorflow as tf

keras = tf.keras
VARIANTS = ("float32", "float16", "dynamic", "int8", "uint8io", "int16x8")
INTEGER_VARIANTS = ("int8", "uint8io", "int16x8")
SEED = 0
# conversions TFLite's own interpreter cannot run (no reference outputs): left out
UNRUNNABLE = {("transformer_block", "int16x8"): "TFLite 2.21's converter emits an int16 "
              "SQUARED_DIFFERENCE (the layer norms) that its interpreter has no kernel for"}


def _image(size: int) -> tuple[int, int, int]:
    return (size, size, 3)


def mobilenet_v2() -> keras.Model:
    return keras.applications.MobileNetV2(input_shape=_image(96), weights=None,
                                          classifier_activation=None)


def mobilenet_v3_small() -> keras.Model:
    return keras.applications.MobileNetV3Small(input_shape=_image(96), weights=None,
                                               classifier_activation=None)


def efficientnet_b0() -> keras.Model:
    return keras.applications.EfficientNetB0(input_shape=_image(96), weights=None,
                                             classifier_activation=None)


def resnet50() -> keras.Model:
    return keras.applications.ResNet50(input_shape=_image(64), weights=None,
                                       classifier_activation=None)


def transformer_block() -> keras.Model:
    """A pre-norm encoder block: multi-head self-attention and a GELU MLP, with residuals."""
    tokens, width, heads = 16, 64, 4
    x = keras.Input((tokens, width), name="tokens")
    h = keras.layers.LayerNormalization(epsilon=1e-6, name="ln_1")(x)
    h = keras.layers.MultiHeadAttention(heads, width // heads, name="attention")(h, h)
    x1 = keras.layers.Add(name="residual_1")([x, h])
    h = keras.layers.LayerNormalization(epsilon=1e-6, name="ln_2")(x1)
    h = keras.layers.Dense(4 * width, activation="gelu", name="mlp_fc")(h)
    h = keras.layers.Dense(width, name="mlp_proj")(h)
    out = keras.layers.Add(name="residual_2")([x1, h])
    return keras.Model(x, out, name="transformer_block")


MODELS: dict[str, Callable[[], keras.Model]] = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "efficientnet_b0": efficientnet_b0,
    "resnet50": resnet50,
    "transformer_block": transformer_block,
}


def _randomise_batch_norms(model: keras.Model, rng: np.random.Generator) -> None:
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            weights = []
            for w in layer.weights:
                shape = tuple(w.shape)
                if "moving_variance" in w.name:
                    weights.append(rng.uniform(0.5, 1.5, shape).astype("float32"))
                elif "moving_mean" in w.name:
                    weights.append(rng.normal(0.0, 0.1, shape).astype("float32"))
                elif "gamma" in w.name:
                    weights.append(rng.uniform(0.8, 1.2, shape).astype("float32"))
                else:
                    weights.append(rng.normal(0.0, 0.1, shape).astype("float32"))
            layer.set_weights(weights)


def build(name: str) -> keras.Model:
    keras.utils.set_random_seed(SEED)
    model = MODELS[name]()
    _randomise_batch_norms(model, np.random.default_rng(SEED))
    return model


def example_input(model: keras.Model, rng: np.random.Generator) -> np.ndarray:
    shape = [1, *model.input_shape[1:]]
    if len(shape) == 4:  # an image: the applications rescale 0..255 themselves (or expect -1..1)
        return rng.uniform(0, 255 if _has_rescaling(model) else 1, shape).astype("float32")
    return rng.normal(0, 1, shape).astype("float32")


def _has_rescaling(model: keras.Model) -> bool:
    return any(isinstance(layer, keras.layers.Rescaling) for layer in model.layers)


def _representative(sample: np.ndarray) -> Callable[[], Iterator[list[np.ndarray]]]:
    def batches() -> Iterator[list[np.ndarray]]:
        rng = np.random.default_rng(SEED + 1)
        for _ in range(8):
            yield [(sample * rng.uniform(0.5, 1.0)).astype("float32")]
    return batches


def convert(model: keras.Model, variant: str, sample: np.ndarray) -> bytes:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if variant in INTEGER_VARIANTS:
        converter.representative_dataset = _representative(sample)
        # 16x8 falls back to float kernels where TFLite has no 16x8 one (HARD_SWISH)
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS] if variant == "int16x8" else [
            tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if variant == "uint8io":
        converter.inference_input_type = tf.uint8
        converter.inference_output_type = tf.uint8
    return bytes(converter.convert())


_RESOLVERS = {
    "out": tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    "ref": tf.lite.experimental.OpResolverType.BUILTIN_REF,
    "xnnpack": None,
}


def _interpreter(flatbuffer: bytes, kind: str) -> tf.lite.Interpreter:
    resolver = _RESOLVERS[kind]
    options = {} if resolver is None else {"experimental_op_resolver_type": resolver}
    interpreter = tf.lite.Interpreter(model_content=flatbuffer, **options)
    interpreter.allocate_tensors()
    return interpreter


def model_input(flatbuffer: bytes, sample: np.ndarray) -> tuple[str, np.ndarray]:
    """The input tensor's name and the example as it takes it (quantized if integer)."""
    (detail,) = _interpreter(flatbuffer, "out").get_input_details()
    if detail["dtype"] == np.float32:
        return detail["name"], sample
    scale, zero = detail["quantization"]
    info = np.iinfo(detail["dtype"])
    q = np.clip(np.round(sample / scale) + zero, info.min, info.max)
    return detail["name"], q.astype(detail["dtype"])


def _run(flatbuffer: bytes, feed: np.ndarray, kind: str) -> dict[str, np.ndarray]:
    interpreter = _interpreter(flatbuffer, kind)
    (detail,) = interpreter.get_input_details()
    interpreter.set_tensor(detail["index"], feed)
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"])
            for d in interpreter.get_output_details()}


def reference(flatbuffer: bytes, sample: np.ndarray) -> dict[str, np.ndarray]:
    """`out:` TFLite's builtin kernels (the reference); `ref:` its reference kernels;
    `xnnpack:` the default interpreter, whose XNNPACK delegate quantizes dynamic-range
    activations its own way."""
    name, feed = model_input(flatbuffer, sample)
    out = {f"in:{name}": feed}
    for kind in _RESOLVERS:
        out.update({f"{kind}:{k}": v for k, v in _run(flatbuffer, feed, kind).items()})
    return out


def make(name: str, outdir: Path, variants: list[str]) -> None:
    model = build(name)
    feed = example_input(model, np.random.default_rng(SEED))
    for variant in variants:
        if (name, variant) in UNRUNNABLE:
            print(f"{name}_{variant}: skipped: {UNRUNNABLE[name, variant]}", flush=True)
            continue
        start = time.perf_counter()
        flatbuffer = convert(model, variant, feed)
        stem = outdir / f"{name}_{variant}"
        np.savez(stem.with_suffix(".npz"), **reference(flatbuffer, feed))
        stem.with_suffix(".tflite").write_bytes(flatbuffer)  # last: marks the pair complete
        print(f"{stem.name}: {len(flatbuffer) / 1e6:.1f} MB in "
              f"{time.perf_counter() - start:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--variants", default="", help="comma-separated variants "
                        f"(default: all of {', '.join(VARIANTS)})")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(MODELS))
        return 0
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)}")
    variants = [v for v in args.variants.split(",") if v] or list(VARIANTS)
    if any(v not in VARIANTS for v in variants):
        parser.error(f"unknown variants: {', '.join(v for v in variants if v not in VARIANTS)}")
    args.outdir.mkdir(parents=True, exist_ok=True)
    for name in names:
        make(name, args.outdir, variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
