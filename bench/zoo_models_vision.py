"""Zoo models, part 2: EfficientNet-B0 (PyTorch and TF2ONNX exports), tiny YOLOv3 with its
box decoding, U-Net (transposed-conv and bilinear), and the 1-D / 3-D convnets (M5 audio,
R3D-style video, a 3-D U-Net). See bench/zoo_models.py."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto
from zoo_builder import ZooBuilder, conv_bn_act, scaled

# --- EfficientNet-B0 -------------------------------------------------------------------------
# (expand ratio, kernel, stride, output channels, repeats) of the seven MBConv stages
_B0 = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
       (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


def _same_pad(g: ZooBuilder, x: str, name: str, k: int, stride: int, tf: bool) -> tuple[str, int]:
    """TF exports pad strided convs explicitly (ZeroPadding2D -> Pad); PyTorch pads in Conv."""
    if not tf or stride == 1:
        return x, k // 2
    lo, hi = (k - 1) // 2, k // 2
    return g.pad(x, f"{name}/Pad", [0, 0, lo, lo, 0, 0, hi, hi]), 0


def _squeeze_excite(g: ZooBuilder, x: str, name: str, c: int, reduced: int, tf: bool) -> str:
    if tf:
        s = g.reduce("ReduceMean", x, f"{name}/ReduceMean", [2, 3], keepdims=1)
    else:
        s = g.node("GlobalAveragePool", [x], f"{name}.avgpool")
    s = g.swish(g.conv(s, f"{name}.fc1", c, reduced, [1, 1]), f"{name}.activation")
    gate = g.node("Sigmoid", [g.conv(s, f"{name}.fc2", reduced, c, [1, 1])],
                  f"{name}.scale_activation")
    return g.node("Mul", [gate, x], f"{name}/Mul")


def _mbconv(g: ZooBuilder, x: str, name: str, cin: int, cout: int, expand: int, k: int,
            stride: int, tf: bool) -> str:
    mid = cin * expand
    h, i = x, 0
    if expand != 1:
        h, i = conv_bn_act(g, h, f"{name}.block.0", cin, mid, 1, act="Swish"), 1
    h, pad = _same_pad(g, h, f"{name}.block.{i}", k, stride, tf)
    h = conv_bn_act(g, h, f"{name}.block.{i}", mid, mid, k, stride, pad, "Swish", group=mid)
    h = _squeeze_excite(g, h, f"{name}.block.{i + 1}", mid, max(1, cin // 4), tf)
    h = conv_bn_act(g, h, f"{name}.block.{i + 2}", mid, cout, 1, act="")
    if stride == 1 and cin == cout:
        h = g.node("Add", [h, x], f"{name}/Add")
    return h


def _tf_flatten(g: ZooBuilder, x: str) -> str:
    """TF2ONNX's flatten: Squeeze with an axes input, and a Shape -> Cast chain."""
    h = g.squeeze(x, "head/Squeeze", [2, 3])
    dims = g.node("Cast", [g.node("Shape", [h], "head/Shape")], "head/Cast", to=TensorProto.INT32)
    dims = g.node("Cast", [dims], "head/Cast_1", to=TensorProto.INT64)
    batch = g.slice(dims, "head/strided_slice", [0], [1], [0])
    shape = g.node("Concat", [batch, g.i64("head.minus_one", [-1])], "head/concat", axis=0)
    return g.node("Reshape", [h, shape], "head/Reshape")


def make_efficientnet_b0(opset: int = 13, image: int = 64, width: float = 1.0,
                         classes: int = 1000, tf: bool = False) -> onnx.ModelProto:
    """torchvision's EfficientNet-B0; `tf=True` writes it as TF2ONNX exports Keras' model:
    NHWC input and a Transpose, explicit Pads, ReduceMean squeeze-excite, Squeeze head."""
    g = ZooBuilder("efficientnet_b0_tf" if tf else "efficientnet_b0", opset)
    if tf:
        x = g.node("Transpose", [g.add_input("input_1", [1, image, image, 3])],
                   "input_1/Transpose", perm=[0, 3, 1, 2])
    else:
        x = g.add_input("data", [1, 3, image, image])
    c = scaled(32, width)
    x, pad = _same_pad(g, x, "features.0", 3, 2, tf)
    h = conv_bn_act(g, x, "features.0", 3, c, 3, 2, pad, act="Swish")
    for stage, (expand, k, stride, out, repeats) in enumerate(_B0, start=1):
        out = scaled(out, width)
        for i in range(repeats):
            h = _mbconv(g, h, f"features.{stage}.{i}", c, out, expand, k,
                        stride if i == 0 else 1, tf)
            c = out
    last = scaled(1280, width)
    h = conv_bn_act(g, h, "features.8", c, last, 1, act="Swish")
    if tf:
        h = _tf_flatten(g, g.reduce("ReduceMean", h, "head/ReduceMean", [2, 3], keepdims=1))
    else:
        h = g.node("Flatten", [g.node("GlobalAveragePool", [h], "avgpool")], "/Flatten", axis=1)
        h = g.node("Dropout", [h], "classifier.0")
    g.add_output(g.gemm(h, "classifier.1", last, classes), "logits")
    return g.model("EfficientNet-B0, random weights" + (" (TF2ONNX style)" if tf else ""))


# --- tiny YOLOv3 -----------------------------------------------------------------------------
def _yolo_decode(g: ZooBuilder, head: str, name: str, size: int, stride: int,
                 anchors: list[tuple[int, int]], classes: int) -> str:
    """YOLOv5-style decoding in the graph: sigmoid, grid offsets, anchor scaling."""
    no = 5 + classes
    r = g.node("Reshape", [head, g.i64(f"{name}.shape", [1, 3, no, size, size])],
               f"{name}/Reshape")
    p = g.node("Sigmoid", [g.node("Transpose", [r], f"{name}/Transpose", perm=[0, 1, 3, 4, 2])],
               f"{name}/Sigmoid")
    xy = g.slice(p, f"{name}/Slice", [0], [2], [4])
    wh = g.slice(p, f"{name}/Slice_1", [2], [4], [4])
    rest = g.slice(p, f"{name}/Slice_2", [4], [no], [4])
    yy, xx = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    grid = np.stack([xx, yy], -1).reshape(1, 1, size, size, 2).astype(np.float32) - 0.5
    two = g.f32(f"{name}.two", 2.0)
    xy = g.node("Mul", [g.node("Add", [g.node("Mul", [xy, two], f"{name}/Mul"),
                                        g.f32(f"{name}.grid", grid)], f"{name}/Add"),
                        g.f32(f"{name}.stride", float(stride))], f"{name}/Mul_1")
    anchor = np.asarray(anchors, np.float32).reshape(1, 3, 1, 1, 2)
    wh = g.node("Pow", [g.node("Mul", [wh, two], f"{name}/Mul_2"), two], f"{name}/Pow")
    wh = g.node("Mul", [wh, g.f32(f"{name}.anchor_grid", anchor)], f"{name}/Mul_3")
    cat = g.node("Concat", [xy, wh, rest], f"{name}/Concat", axis=4)
    return g.node("Reshape", [cat, g.i64(f"{name}.out_shape", [1, -1, no])], f"{name}/Reshape_1")


def make_tiny_yolov3(opset: int = 13, image: int = 96, width: float = 1.0,
                     classes: int = 80) -> onnx.ModelProto:
    g = ZooBuilder("tiny_yolov3", opset)
    h = g.add_input("images", [1, 3, image, image])
    c, i, route = 3, 0, ""
    for out in (16, 32, 64, 128, 256, 512):
        h = conv_bn_act(g, h, f"module_list.{i}", c, scaled(out, width), 3, pad=1,
                        act="LeakyRelu")
        c, i = scaled(out, width), i + 1
        if out == 256:
            route, route_c = h, c
        if out == 512:  # darknet's size-2 stride-1 max pool keeps the grid
            h = g.pool("MaxPool", h, f"module_list.{i}", [2, 2], 1, pad=[0, 0, 1, 1])
        else:
            h = g.pool("MaxPool", h, f"module_list.{i}", [2, 2], 2)
        i += 1
    h = conv_bn_act(g, h, f"module_list.{i}", c, scaled(1024, width), 3, pad=1, act="LeakyRelu")
    b = conv_bn_act(g, h, f"module_list.{i + 1}", scaled(1024, width), scaled(256, width), 1,
                    act="LeakyRelu")
    h1 = conv_bn_act(g, b, f"module_list.{i + 2}", scaled(256, width), scaled(512, width), 3,
                     pad=1, act="LeakyRelu")
    head1 = g.conv(h1, f"module_list.{i + 3}", scaled(512, width), 3 * (5 + classes), [1, 1])
    u = conv_bn_act(g, b, f"module_list.{i + 5}", scaled(256, width), scaled(128, width), 1,
                    act="LeakyRelu")
    u = g.upsample(u, f"module_list.{i + 6}", 2.0)
    cat = g.node("Concat", [u, route], f"module_list.{i + 7}", axis=1)
    h2 = conv_bn_act(g, cat, f"module_list.{i + 8}", scaled(128, width) + route_c,
                     scaled(256, width), 3, pad=1, act="LeakyRelu")
    head2 = g.conv(h2, f"module_list.{i + 9}", scaled(256, width), 3 * (5 + classes), [1, 1])
    small, big = image // 32, image // 16
    d1 = _yolo_decode(g, head1, "yolo.0", small, 32, [(81, 82), (135, 169), (344, 319)], classes)
    d2 = _yolo_decode(g, head2, "yolo.1", big, 16, [(10, 14), (23, 27), (37, 58)], classes)
    g.add_output(g.node("Concat", [d1, d2], "yolo/Concat", axis=1), "detections")
    return g.model("tiny YOLOv3 with YOLOv5-style decoding, random weights")


# --- U-Net -----------------------------------------------------------------------------------
def _double_conv(g: ZooBuilder, x: str, name: str, cin: int, cout: int, nd: int = 2) -> str:
    k = [3] * nd
    h = conv_bn_act(g, x, f"{name}.double_conv.0", cin, cout, k, pad=1)
    return conv_bn_act(g, h, f"{name}.double_conv.3", cout, cout, k, pad=1)


def make_unet(opset: int = 17, image: int = 64, width: float = 0.25, classes: int = 2,
              bilinear: bool = False) -> onnx.ModelProto:
    """milesial/Pytorch-UNet: ConvTranspose up-sampling, or bilinear Resize
    (align_corners) with `bilinear=True`."""
    g = ZooBuilder("unet_bilinear" if bilinear else "unet", opset)
    chans = [scaled(c, width) for c in (64, 128, 256, 512, 1024)]
    h = _double_conv(g, g.add_input("data", [1, 3, image, image]), "inc", 3, chans[0])
    skips = [h]
    for d in range(1, 5):
        h = g.pool("MaxPool", h, f"down{d}.maxpool_conv.0", [2, 2], 2)
        h = _double_conv(g, h, f"down{d}.maxpool_conv.1", chans[d - 1], chans[d])
        skips.append(h)
    c = chans[4]
    for u in range(1, 5):
        skip, sc = skips[4 - u], chans[4 - u]
        if bilinear:
            h = g.upsample(h, f"up{u}.up", 2.0, mode="linear", align_corners=True)
            h, cin = g.node("Concat", [skip, h], f"up{u}/Concat", axis=1), sc + c
        else:
            h = g.conv_transpose(h, f"up{u}.up", c, c // 2, [2, 2], 2)
            h, cin = g.node("Concat", [skip, h], f"up{u}/Concat", axis=1), sc + c // 2
        h, c = _double_conv(g, h, f"up{u}.conv", cin, sc), sc
    g.add_output(g.conv(h, "outc.conv", c, classes, [1, 1]), "mask")
    return g.model("U-Net, random weights")


# --- 1-D and 3-D convnets --------------------------------------------------------------------
def make_m5_audio(opset: int = 13, samples: int = 4000, width: float = 0.25,
                  classes: int = 35) -> onnx.ModelProto:
    """M5 (Dai et al. 2017) raw-waveform classifier, as the torchaudio tutorial writes it."""
    g = ZooBuilder("m5_audio", opset)
    h = g.add_input("waveform", [1, 1, samples])
    c, length = 1, samples
    for i, (out, k, s) in enumerate([(128, 80, 4), (128, 3, 1), (256, 3, 1), (512, 3, 1)],
                                    start=1):
        h = conv_bn_act(g, h, f"block{i}", c, scaled(out, width), [k], s)
        h = g.pool("MaxPool", h, f"pool{i}", [4], 4)
        c, length = scaled(out, width), ((length - k) // s + 1) // 4
    h = g.pool("AveragePool", h, "/AveragePool", [length], 1)
    h = g.node("Transpose", [h], "/Transpose", perm=[0, 2, 1])
    h = g.linear(h, "fc1", c, classes)
    g.add_output(g.node("LogSoftmax", [h], "/LogSoftmax", axis=2), "log_probs")
    return g.model("M5 audio classifier (Conv1d/MaxPool1d), random weights")


def _block3d(g: ZooBuilder, x: str, name: str, cin: int, cout: int, stride: int) -> str:
    h = conv_bn_act(g, x, f"{name}.conv1.0", cin, cout, [3, 3, 3], stride, 1)
    h = conv_bn_act(g, h, f"{name}.conv2.0", cout, cout, [3, 3, 3], 1, 1, act="")
    short = x
    if stride != 1 or cin != cout:
        short = conv_bn_act(g, x, f"{name}.downsample", cin, cout, [1, 1, 1], stride, act="")
    return g.node("Relu", [g.node("Add", [h, short], f"{name}/Add")], f"{name}.relu")


def make_r3d_video(opset: int = 17, frames: int = 8, image: int = 32, width: float = 0.25,
                   classes: int = 400) -> onnx.ModelProto:
    """R3D-style video net: Conv3d stem, MaxPool3d, residual 3-D blocks, AvgPool3d, fc."""
    g = ZooBuilder("r3d_video", opset)
    x = g.add_input("clip", [1, 3, frames, image, image])
    c = scaled(64, width)
    h = conv_bn_act(g, x, "stem", 3, c, [3, 7, 7], [1, 2, 2], [1, 3, 3])
    h = g.pool("MaxPool", h, "stem.pool", [1, 3, 3], [1, 2, 2], [0, 1, 1])
    for i, (out, stride) in enumerate([(64, 1), (128, 2), (256, 2)], start=1):
        h = _block3d(g, h, f"layer{i}.0", c, scaled(out, width), stride)
        c = scaled(out, width)
    t, s = frames // 4, image // 16
    h = g.pool("AveragePool", h, "avgpool", [t, s, s], 1)
    g.add_output(g.gemm(g.node("Flatten", [h], "/Flatten", axis=1), "fc", c, classes),
                 "logits")
    return g.model("R3D-style video classifier (Conv3d/MaxPool3d/AvgPool3d), random weights")


def make_unet3d(opset: int = 13, frames: int = 8, image: int = 16, width: float = 0.25
                ) -> onnx.ModelProto:
    """A two-level 3-D U-Net: Conv3d, MaxPool3d, ConvTranspose3d, skip Concat."""
    g = ZooBuilder("unet3d", opset)
    c1, c2 = scaled(32, width), scaled(64, width)
    e1 = _double_conv(g, g.add_input("volume", [1, 1, frames, image, image]), "enc1", 1, c1, 3)
    b = g.pool("MaxPool", e1, "pool1", [2, 2, 2], 2)
    b = _double_conv(g, b, "bottleneck", c1, c2, 3)
    u = g.conv_transpose(b, "up1", c2, c1, [2, 2, 2], 2)
    d = _double_conv(g, g.node("Concat", [e1, u], "up1/Concat", axis=1), "dec1", 2 * c1, c1, 3)
    g.add_output(g.conv(d, "final", c1, 2, [1, 1, 1]), "segmentation")
    return g.model("3-D U-Net (two levels), random weights")


VISION_MODELS: dict[str, tuple[Callable[[], onnx.ModelProto], str]] = {
    "efficientnet_b0": (lambda: make_efficientnet_b0(13, width=0.5),
                        "EfficientNet-B0 (PyTorch export), opset 13"),
    "efficientnet_b0_tf": (lambda: make_efficientnet_b0(18, width=0.5, tf=True),
                           "EfficientNet-B0 (TF2ONNX style, NHWC), opset 18"),
    "tiny_yolov3_op9": (lambda: make_tiny_yolov3(9, width=0.25), "tiny YOLOv3, opset 9 (Upsample)"),
    "tiny_yolov3": (lambda: make_tiny_yolov3(13, width=0.25), "tiny YOLOv3, opset 13 (Resize)"),
    "unet": (lambda: make_unet(17), "U-Net (ConvTranspose), opset 17"),
    "unet_bilinear": (lambda: make_unet(11, bilinear=True),
                      "U-Net (bilinear Resize, align_corners), opset 11"),
    "m5_audio": (lambda: make_m5_audio(13), "M5 audio Conv1d net, opset 13"),
    "r3d_video": (lambda: make_r3d_video(17), "R3D-style Conv3d video net, opset 17"),
    "unet3d": (lambda: make_unet3d(13), "3-D U-Net (ConvTranspose3d), opset 13"),
}
