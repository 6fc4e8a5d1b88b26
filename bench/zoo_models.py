#!/usr/bin/env python3
"""The common model zoos as ONNX graphs with seeded random weights (onnx + numpy only).

Each `make_<model>(opset, ...)` builds the real layer structure with exporter-style node
names (PyTorch `features.0.squeeze`, `/h.0/attn/MatMul`, ...) at a small input size, so
tests and benchmarks stay fast; `width` scales every channel / hidden count (1.0 is the
real model), `image` the input resolution. The MODELS table holds the variants the tests
use (several opsets from 9 to 21).

Usage:  python bench/zoo_models.py OUTDIR [--only NAME[,NAME...]] [--list]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_builder import ZooBuilder, conv_bn_act, scaled
from zoo_models_seq import SEQUENCE_MODELS
from zoo_models_vision import VISION_MODELS

_c = scaled
_conv_bn_relu = conv_bn_act


def _classifier(g: ZooBuilder, x: str, prefix: str, fin: int, classes: int) -> str:
    flat = g.node("Flatten", [x], f"{prefix}/Flatten", axis=1)
    return g.gemm(flat, f"{prefix}.fc", fin, classes)


# --- SqueezeNet 1.0 / 1.1 --------------------------------------------------------------------
def _fire(g: ZooBuilder, x: str, name: str, cin: int, s: int, e: int) -> tuple[str, int]:
    sq = g.node("Relu", [g.conv(x, f"{name}.squeeze", cin, s, [1, 1])], f"{name}.squeeze_act")
    e1 = g.node("Relu", [g.conv(sq, f"{name}.expand1x1", s, e, [1, 1])],
                f"{name}.expand1x1_act")
    e3 = g.node("Relu", [g.conv(sq, f"{name}.expand3x3", s, e, [3, 3], pad=1)],
                f"{name}.expand3x3_act")
    return g.node("Concat", [e1, e3], f"{name}/Concat", axis=1), 2 * e


def make_squeezenet(opset: int = 12, version: str = "1_0", image: int = 64,
                    width: float = 1.0, classes: int = 1000) -> onnx.ModelProto:
    g = ZooBuilder(f"squeezenet{version}", opset)
    x = g.add_input("data", [1, 3, image, image])
    first, k = (96, 7) if version == "1_0" else (64, 3)
    c = _c(first, width)
    h = g.node("Relu", [g.conv(x, "features.0", 3, c, [k, k], stride=2)], "features.1")
    fires = ([(16, 64), (16, 64), (32, 128), "pool", (32, 128), (48, 192), (48, 192),
              (64, 256), "pool", (64, 256)] if version == "1_0" else
             [(16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192),
              (64, 256), (64, 256)])
    h = g.pool("MaxPool", h, "features.2", [3, 3], 2, ceil_mode=opset >= 10)
    for i, spec in enumerate(fires, start=3):
        if spec == "pool":
            h = g.pool("MaxPool", h, f"features.{i}", [3, 3], 2, ceil_mode=opset >= 10)
            continue
        h, c = _fire(g, h, f"features.{i}", c, _c(spec[0], width), _c(spec[1], width))
    h = g.node("Dropout", [h], "classifier.0")
    h = g.node("Relu", [g.conv(h, "classifier.1", c, classes, [1, 1])], "classifier.2")
    h = g.node("GlobalAveragePool", [h], "classifier.3")
    g.add_output(g.node("Flatten", [h], "/Flatten", axis=1), "logits")
    return g.model(f"SqueezeNet {version} (torchvision), random weights")


# --- Inception v1 (GoogLeNet) and v3 ---------------------------------------------------------
def _inception_v1(g: ZooBuilder, x: str, name: str, cin: int, spec: tuple[int, ...],
                  width: float) -> tuple[str, int]:
    c1, r3, c3, r5, c5, pp = (_c(v, width) for v in spec)
    b1 = _conv_bn_relu(g, x, f"{name}.branch1", cin, c1, 1)
    b2 = _conv_bn_relu(g, x, f"{name}.branch2.0", cin, r3, 1)
    b2 = _conv_bn_relu(g, b2, f"{name}.branch2.1", r3, c3, 3, pad=1)
    b3 = _conv_bn_relu(g, x, f"{name}.branch3.0", cin, r5, 1)
    b3 = _conv_bn_relu(g, b3, f"{name}.branch3.1", r5, c5, 3, pad=1)
    b4 = g.pool("MaxPool", x, f"{name}.branch4.0", [3, 3], 1, pad=1, ceil_mode=g.opset >= 10)
    b4 = _conv_bn_relu(g, b4, f"{name}.branch4.1", cin, pp, 1)
    return g.node("Concat", [b1, b2, b3, b4], f"{name}/Concat", axis=1), c1 + c3 + c5 + pp


_V1_BLOCKS = [("inception3a", (64, 96, 128, 16, 32, 32)),
              ("inception3b", (128, 128, 192, 32, 96, 64)),
              "maxpool3", ("inception4a", (192, 96, 208, 16, 48, 64)),
              ("inception4b", (160, 112, 224, 24, 64, 64)),
              ("inception4c", (128, 128, 256, 24, 64, 64)),
              ("inception4d", (112, 144, 288, 32, 64, 64)),
              ("inception4e", (256, 160, 320, 32, 128, 128)), "maxpool4",
              ("inception5a", (256, 160, 320, 32, 128, 128)),
              ("inception5b", (384, 192, 384, 48, 128, 128))]


def make_inception_v1(opset: int = 13, image: int = 64, width: float = 1.0,
                      classes: int = 1000) -> onnx.ModelProto:
    g = ZooBuilder("googlenet", opset)
    x = g.add_input("data", [1, 3, image, image])
    ceil = opset >= 10
    h = _conv_bn_relu(g, x, "conv1", 3, _c(64, width), 7, stride=2, pad=3)
    h = g.pool("MaxPool", h, "maxpool1", [3, 3], 2, ceil_mode=ceil)
    h = _conv_bn_relu(g, h, "conv2", _c(64, width), _c(64, width), 1)
    h = _conv_bn_relu(g, h, "conv3", _c(64, width), _c(192, width), 3, pad=1)
    h = g.pool("MaxPool", h, "maxpool2", [3, 3], 2, ceil_mode=ceil)
    c = _c(192, width)
    for block in _V1_BLOCKS:
        if isinstance(block, str):
            h = g.pool("MaxPool", h, block, [3, 3] if block == "maxpool3" else [2, 2], 2,
                       ceil_mode=ceil)
            continue
        h, c = _inception_v1(g, h, block[0], c, block[1], width)
    h = g.node("GlobalAveragePool", [h], "avgpool")
    h = g.node("Dropout", [h], "dropout")
    g.add_output(_classifier(g, h, "", c, classes), "logits")
    return g.model("GoogLeNet / Inception v1 (torchvision), random weights")


def _v3_a(g: ZooBuilder, x: str, name: str, cin: int, pool: int, w: float) -> tuple[str, int]:
    b1 = _conv_bn_relu(g, x, f"{name}.branch1x1", cin, _c(64, w), 1)
    b5 = _conv_bn_relu(g, x, f"{name}.branch5x5_1", cin, _c(48, w), 1)
    b5 = _conv_bn_relu(g, b5, f"{name}.branch5x5_2", _c(48, w), _c(64, w), 5, pad=2)
    b3 = _conv_bn_relu(g, x, f"{name}.branch3x3dbl_1", cin, _c(64, w), 1)
    b3 = _conv_bn_relu(g, b3, f"{name}.branch3x3dbl_2", _c(64, w), _c(96, w), 3, pad=1)
    b3 = _conv_bn_relu(g, b3, f"{name}.branch3x3dbl_3", _c(96, w), _c(96, w), 3, pad=1)
    bp = g.pool("AveragePool", x, f"{name}/AveragePool", [3, 3], 1, pad=1,
                count_include_pad=True)
    bp = _conv_bn_relu(g, bp, f"{name}.branch_pool", cin, _c(pool, w), 1)
    out = _c(64, w) * 2 + _c(96, w) + _c(pool, w)
    return g.node("Concat", [b1, b5, b3, bp], f"{name}/Concat", axis=1), out


def _v3_c(g: ZooBuilder, x: str, name: str, cin: int, c7: int, w: float) -> tuple[str, int]:
    c7, c192 = _c(c7, w), _c(192, w)
    b1 = _conv_bn_relu(g, x, f"{name}.branch1x1", cin, c192, 1)
    b7 = _conv_bn_relu(g, x, f"{name}.branch7x7_1", cin, c7, 1)
    b7 = _conv_bn_relu(g, b7, f"{name}.branch7x7_2", c7, c7, (1, 7), pad=(0, 3))
    b7 = _conv_bn_relu(g, b7, f"{name}.branch7x7_3", c7, c192, (7, 1), pad=(3, 0))
    bd = _conv_bn_relu(g, x, f"{name}.branch7x7dbl_1", cin, c7, 1)
    bd = _conv_bn_relu(g, bd, f"{name}.branch7x7dbl_2", c7, c7, (7, 1), pad=(3, 0))
    bd = _conv_bn_relu(g, bd, f"{name}.branch7x7dbl_3", c7, c192, (1, 7), pad=(0, 3))
    bp = g.pool("AveragePool", x, f"{name}/AveragePool", [3, 3], 1, pad=1,
                count_include_pad=True)
    bp = _conv_bn_relu(g, bp, f"{name}.branch_pool", cin, c192, 1)
    return g.node("Concat", [b1, b7, bd, bp], f"{name}/Concat", axis=1), 4 * c192


def _v3_reduce(g: ZooBuilder, x: str, name: str, cin: int, c3: int, w: float
               ) -> tuple[str, int]:
    b3 = _conv_bn_relu(g, x, f"{name}.branch3x3", cin, _c(c3, w), 3, stride=2)
    bd = _conv_bn_relu(g, x, f"{name}.branch3x3dbl_1", cin, _c(64, w), 1)
    bd = _conv_bn_relu(g, bd, f"{name}.branch3x3dbl_2", _c(64, w), _c(96, w), 3, pad=1)
    bd = _conv_bn_relu(g, bd, f"{name}.branch3x3dbl_3", _c(96, w), _c(96, w), 3, stride=2)
    bp = g.pool("MaxPool", x, f"{name}/MaxPool", [3, 3], 2)
    return g.node("Concat", [b3, bd, bp], f"{name}/Concat", axis=1), _c(c3, w) + _c(96, w) + cin


def make_inception_v3(opset: int = 17, image: int = 75, width: float = 1.0,
                      classes: int = 1000) -> onnx.ModelProto:
    """Inception v3 stem, Mixed_5b-5d (A), Mixed_6a (reduction), Mixed_6b-6e (factorised 7x7
    as 1x7 / 7x1): the blocks that define the architecture (6e..7c repeat them)."""
    g = ZooBuilder("inception_v3", opset)
    w = width
    x = g.add_input("data", [1, 3, image, image])
    h = _conv_bn_relu(g, x, "Conv2d_1a_3x3", 3, _c(32, w), 3, stride=2)
    h = _conv_bn_relu(g, h, "Conv2d_2a_3x3", _c(32, w), _c(32, w), 3)
    h = _conv_bn_relu(g, h, "Conv2d_2b_3x3", _c(32, w), _c(64, w), 3, pad=1)
    h = g.pool("MaxPool", h, "maxpool1", [3, 3], 2)
    h = _conv_bn_relu(g, h, "Conv2d_3b_1x1", _c(64, w), _c(80, w), 1)
    h = _conv_bn_relu(g, h, "Conv2d_4a_3x3", _c(80, w), _c(192, w), 3)
    c = _c(192, w)
    for name, pool in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        h, c = _v3_a(g, h, name, c, pool, w)
    h, c = _v3_reduce(g, h, "Mixed_6a", c, 384, w)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        h, c = _v3_c(g, h, name, c, c7, w)
    h = g.node("GlobalAveragePool", [h], "avgpool")
    h = g.node("Dropout", [h], "dropout")
    g.add_output(_classifier(g, h, "", c, classes), "logits")
    return g.model("Inception v3 (torchvision) through Mixed_6e, random weights")


# --- DenseNet-121 ----------------------------------------------------------------------------
def make_densenet121(opset: int = 18, image: int = 64, width: float = 1.0,
                     classes: int = 1000, blocks: tuple[int, ...] = (6, 12, 24, 16)
                     ) -> onnx.ModelProto:
    g = ZooBuilder("densenet121", opset)
    growth, c = _c(32, width), _c(64, width)
    x = g.add_input("data", [1, 3, image, image])
    h = g.conv(x, "features.conv0", 3, c, [7, 7], 2, 3, bias=False)
    h = g.node("Relu", [g.bn(h, "features.norm0", c)], "features.relu0")
    h = g.pool("MaxPool", h, "features.pool0", [3, 3], 2, pad=1)
    for b, layers in enumerate(blocks, start=1):
        feats = [h]
        for i in range(1, layers + 1):
            p = f"features.denseblock{b}.denselayer{i}"
            cat = feats[0] if len(feats) == 1 else g.node("Concat", feats, f"{p}/Concat", axis=1)
            t = g.node("Relu", [g.bn(cat, f"{p}.norm1", c + (i - 1) * growth)], f"{p}.relu1")
            t = g.conv(t, f"{p}.conv1", c + (i - 1) * growth, 4 * growth, [1, 1], bias=False)
            t = g.node("Relu", [g.bn(t, f"{p}.norm2", 4 * growth)], f"{p}.relu2")
            feats.append(g.conv(t, f"{p}.conv2", 4 * growth, growth, [3, 3], pad=1, bias=False))
        h = g.node("Concat", feats, f"features.denseblock{b}/Concat", axis=1)
        c += layers * growth
        if b == len(blocks):
            break
        p = f"features.transition{b}"
        t = g.node("Relu", [g.bn(h, f"{p}.norm", c)], f"{p}.relu")
        t = g.conv(t, f"{p}.conv", c, c // 2, [1, 1], bias=False)
        h, c = g.pool("AveragePool", t, f"{p}.pool", [2, 2], 2), c // 2
    h = g.node("Relu", [g.bn(h, "features.norm5", c)], "/Relu")
    h = g.node("GlobalAveragePool", [h], "/GlobalAveragePool")
    g.add_output(_classifier(g, h, "classifier", c, classes), "logits")
    return g.model("DenseNet-121 (torchvision), random weights")


# --- VGG-16 / VGG-19, AlexNet ----------------------------------------------------------------
_VGG = {16: [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
             512, 512, 512, "M"],
        19: [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
             512, 512, 512, 512, "M"]}


def _fc_stack(g: ZooBuilder, h: str, fin: int, hidden: int, classes: int) -> str:
    h = g.node("Flatten", [h], "/Flatten", axis=1)
    for i, (a, b) in enumerate([(fin, hidden), (hidden, hidden)]):
        h = g.node("Relu", [g.gemm(h, f"classifier.{3 * i}", a, b)], f"classifier.{3 * i + 1}")
        h = g.node("Dropout", [h], f"classifier.{3 * i + 2}")
    return g.gemm(h, "classifier.6", hidden, classes)


def make_vgg(opset: int = 9, depth: int = 16, image: int = 64, width: float = 1.0,
             classes: int = 1000) -> onnx.ModelProto:
    g = ZooBuilder(f"vgg{depth}", opset)
    h = g.add_input("data", [1, 3, image, image])
    c, i, size = 3, 0, image
    for v in _VGG[depth]:
        if v == "M":
            h, size = g.pool("MaxPool", h, f"features.{i}", [2, 2], 2), size // 2
            i += 1
            continue
        h = g.conv(h, f"features.{i}", c, _c(v, width), [3, 3], pad=1)
        h, c, i = g.node("Relu", [h], f"features.{i + 1}"), _c(v, width), i + 2
    g.add_output(_fc_stack(g, h, c * size * size, _c(4096, width), classes), "logits")
    return g.model(f"VGG-{depth} (torchvision, no adaptive pool), random weights")


def make_alexnet(opset: int = 9, image: int = 64, width: float = 1.0,
                 classes: int = 1000) -> onnx.ModelProto:
    """BVLC AlexNet: LRN after the first two convs (torchvision drops them)."""
    g = ZooBuilder("alexnet", opset)
    h = g.add_input("data", [1, 3, image, image])
    spec = [(64, 11, 4, 2), "lrn", "M", (192, 5, 1, 2), "lrn", "M", (384, 3, 1, 1),
            (256, 3, 1, 1), (256, 3, 1, 1), "M"]
    c, size = 3, image
    for i, v in enumerate(spec):
        if v == "M":
            h, size = g.pool("MaxPool", h, f"features.{i}", [3, 3], 2), (size - 3) // 2 + 1
        elif v == "lrn":
            h = g.node("LRN", [h], f"features.{i}", size=5, alpha=1e-4, beta=0.75, bias=1.0)
        else:
            out, k, s, p = v
            h = g.conv(h, f"features.{i}", c, _c(out, width), [k, k], s, p)
            h, c = g.node("Relu", [h], f"features.{i}.relu"), _c(out, width)
            size = (size + 2 * p - k) // s + 1
    g.add_output(_fc_stack(g, h, c * size * size, _c(4096, width), classes), "logits")
    return g.model("AlexNet (BVLC, with LRN), random weights")


# --- ShuffleNet v2 ---------------------------------------------------------------------------
def _shuffle(g: ZooBuilder, x: str, name: str, c: int, size: int) -> str:
    r = g.node("Reshape", [x, g.i64(f"{name}.shape1", [1, 2, c // 2, size, size])],
               f"{name}/Reshape")
    t = g.node("Transpose", [r], f"{name}/Transpose", perm=[0, 2, 1, 3, 4])
    return g.node("Reshape", [t, g.i64(f"{name}.shape2", [1, c, size, size])],
                  f"{name}/Reshape_1")


def _shuffle_branch(g: ZooBuilder, x: str, name: str, cin: int, c: int, stride: int) -> str:
    t = g.node("Relu", [g.bn(g.conv(x, f"{name}.0", cin, c, [1, 1], bias=False),
                             f"{name}.1", c)], f"{name}.2")
    t = g.bn(g.conv(t, f"{name}.3", c, c, [3, 3], stride, 1, group=c, bias=False),
             f"{name}.4", c)
    return g.node("Relu", [g.bn(g.conv(t, f"{name}.5", c, c, [1, 1], bias=False),
                                f"{name}.6", c)], f"{name}.7")


def _shuffle_unit(g: ZooBuilder, x: str, name: str, cin: int, cout: int, stride: int,
                  size: int) -> str:
    half = cout // 2
    if stride == 1:
        a, b = g.split(x, f"{name}/Split", [cin // 2, cin // 2], 1)
        out = [a, _shuffle_branch(g, b, f"{name}.branch2", cin // 2, half, 1)]
    else:
        b1 = g.bn(g.conv(x, f"{name}.branch1.0", cin, cin, [3, 3], 2, 1, group=cin, bias=False),
                  f"{name}.branch1.1", cin)
        b1 = g.node("Relu", [g.bn(g.conv(b1, f"{name}.branch1.2", cin, half, [1, 1],
                                         bias=False), f"{name}.branch1.3", half)],
                    f"{name}.branch1.4")
        out = [b1, _shuffle_branch(g, x, f"{name}.branch2", cin, half, 2)]
    cat = g.node("Concat", out, f"{name}/Concat", axis=1)
    return _shuffle(g, cat, name, cout, size)


def make_shufflenet_v2(opset: int = 13, image: int = 64, width: float = 1.0,
                       classes: int = 1000) -> onnx.ModelProto:
    g = ZooBuilder("shufflenet_v2_x1_0", opset)
    x = g.add_input("data", [1, 3, image, image])
    c = _c(24, width)
    h = g.node("Relu", [g.bn(g.conv(x, "conv1.0", 3, c, [3, 3], 2, 1, bias=False), "conv1.1",
                             c)], "conv1.2")
    h = g.pool("MaxPool", h, "maxpool", [3, 3], 2, pad=1)
    size = image // 4
    for stage, (repeats, out) in enumerate(zip((4, 8, 4), (116, 232, 464)), start=2):
        out = 2 * (_c(out, width) // 2)
        size //= 2
        for i in range(repeats):
            h = _shuffle_unit(g, h, f"stage{stage}.{i}", c, out, 2 if i == 0 else 1, size)
            c = out
    last = _c(1024, width)
    h = g.node("Relu", [g.bn(g.conv(h, "conv5.0", c, last, [1, 1], bias=False), "conv5.1",
                             last)], "conv5.2")
    h = g.reduce("ReduceMean", h, "/ReduceMean", [2, 3], keepdims=0)
    g.add_output(g.gemm(h, "fc", last, classes), "logits")
    return g.model("ShuffleNet v2 x1.0 (torchvision), random weights")


# --- the table -------------------------------------------------------------------------------
Maker = Callable[[], onnx.ModelProto]

MODELS: dict[str, tuple[Maker, str]] = {
    "squeezenet1_0": (lambda: make_squeezenet(12, "1_0"), "SqueezeNet 1.0, opset 12"),
    "squeezenet1_1": (lambda: make_squeezenet(13, "1_1"), "SqueezeNet 1.1, opset 13"),
    "inception_v1": (lambda: make_inception_v1(13, width=0.5), "GoogLeNet, opset 13"),
    "inception_v3": (lambda: make_inception_v3(17, width=0.25), "Inception v3, opset 17"),
    "densenet121": (lambda: make_densenet121(18, width=0.5), "DenseNet-121, opset 18"),
    "vgg16": (lambda: make_vgg(9, 16, width=0.125), "VGG-16, opset 9"),
    "vgg19": (lambda: make_vgg(21, 19, width=0.125), "VGG-19, opset 21"),
    "alexnet": (lambda: make_alexnet(9, width=0.25), "AlexNet with LRN, opset 9"),
    "shufflenet_v2": (lambda: make_shufflenet_v2(13), "ShuffleNet v2, opset 13"),
    "shufflenet_v2_op18": (lambda: make_shufflenet_v2(18, width=0.5),
                           "ShuffleNet v2, opset 18 (Split num_outputs, ReduceMean axes input)"),
    **VISION_MODELS,
    **SEQUENCE_MODELS,
}


def example_feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs for every graph input: floats N(0,1), int64 token ids in [0, 100) and
    0/1 attention masks (names containing "mask": ones with the last quarter zero)."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for info in model.graph.input:
        shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
        elem = info.type.tensor_type.elem_type
        if elem == onnx.TensorProto.FLOAT:
            feeds[info.name] = rng.standard_normal(shape).astype(np.float32)
        elif "mask" in info.name:
            mask = np.ones(shape, dtype=np.int64)
            mask[..., shape[-1] - max(1, shape[-1] // 4):] = 0
            feeds[info.name] = mask
        else:
            feeds[info.name] = rng.integers(0, 100, size=shape).astype(np.int64)
    return feeds


def build(name: str) -> onnx.ModelProto:
    return MODELS[name][0]()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", nargs="?", default="bench/models/zoo")
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, (_, doc) in MODELS.items():
            print(f"{name:22s} {doc}")
        return 0
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; see --list")
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        model = build(name)
        onnx.save(model, str(out / f"{name}.onnx"))
        print(f"{name}: {len(model.graph.node)} nodes -> {out / f'{name}.onnx'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
