"""Opset-aware ONNX graph building for bench/zoo_models.py.

`ZooBuilder` keeps nodes and seeded initializers and emits each layer the way an exporter
of the model's opset writes it: axes as attributes or as inputs (Squeeze/Unsqueeze/Split
at 13, ReduceMean/ReduceMax at 18), Clip and Pad bounds as inputs from 11, Upsample at 9,
Resize from 10, LayerNormalization from 17, Gelu from 20. Only onnx and numpy.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class ZooBuilder:
    """Nodes, initializers (seeded by the model name) and inputs/outputs of one graph."""

    def __init__(self, name: str, opset: int) -> None:
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._names: set[str] = set()
        self._domains: dict[str, int] = {}
        self._output_sources: dict[str, str] = {}

    # --- tensors ---------------------------------------------------------------------------
    def init(self, name: str, array: np.ndarray) -> str:
        if name not in self._names:
            self._names.add(name)
            self.inits.append(numpy_helper.from_array(np.asarray(array).copy(order="C"), name))
        return name

    def weight(self, name: str, shape: Sequence[int], fan_in: int) -> str:
        std = math.sqrt(2.0 / max(fan_in, 1))
        return self.init(name, self.rng.standard_normal(shape).astype(np.float32) * std)

    def small(self, name: str, shape: Sequence[int], std: float = 0.05) -> str:
        return self.init(name, self.rng.standard_normal(shape).astype(np.float32) * std)

    def f32(self, name: str, value: Any) -> str:
        return self.init(name, np.asarray(value, dtype=np.float32))

    def i64(self, name: str, values: Any) -> str:
        return self.init(name, np.asarray(values, dtype=np.int64))

    def add_input(self, name: str, shape: Sequence[int], elem: int = TensorProto.FLOAT) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def add_output(self, tensor: str, name: str) -> None:
        """Expose `tensor` as graph output `name` (through an Identity, as exporters do)."""
        self.nodes.append(helper.make_node("Identity", [tensor], [name], name=f"{name}/output"))
        self._output_sources[name] = tensor

    # --- nodes -----------------------------------------------------------------------------
    def node(self, op: str, inputs: Sequence[str], name: str, n_out: int = 1,
             domain: str = "", **attrs: Any) -> Any:
        assert name not in self._names, name
        self._names.add(name)
        outs = [f"{name}:{i}" if n_out > 1 else f"{name}:0" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, domain=domain,
                                           **attrs))
        if domain:
            self._domains[domain] = 1
        return outs[0] if n_out == 1 else outs

    def model(self, doc: str = "") -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                  initializer=self.inits)
        opsets = [helper.make_opsetid("", self.opset)]
        opsets += [helper.make_opsetid(d, v) for d, v in self._domains.items()]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="zoo_models.py",
                                  doc_string=doc)
        model.ir_version = 8 if self.opset <= 17 else 10
        self._type_outputs(model)
        onnx.checker.check_model(model, full_check=not self._domains)
        return model

    def _type_outputs(self, model: onnx.ModelProto) -> None:
        """Declare each output with the type shape inference gives its source tensor."""
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        probe.graph.output.extend(helper.make_empty_tensor_value_info(src)
                                  for src in self._output_sources.values())
        inferred = onnx.shape_inference.infer_shapes(probe, strict_mode=True)
        types = {v.name: v.type for v in inferred.graph.value_info}
        types.update({v.name: v.type for v in inferred.graph.output
                      if v.type.tensor_type.elem_type})
        for name, src in self._output_sources.items():
            info = onnx.ValueInfoProto(name=name)
            info.type.CopyFrom(types[src])
            model.graph.output.append(info)

    # --- opset-dependent forms -------------------------------------------------------------
    def axes_input_or_attr(self, op: str, inputs: list[str], name: str, axes: Sequence[int],
                           since: int, **attrs: Any) -> str:
        if self.opset >= since:
            return self.node(op, [*inputs, self.i64(f"{name}.axes", list(axes))], name, **attrs)
        return self.node(op, inputs, name, axes=list(axes), **attrs)

    def squeeze(self, x: str, name: str, axes: Sequence[int]) -> str:
        return self.axes_input_or_attr("Squeeze", [x], name, axes, 13)

    def unsqueeze(self, x: str, name: str, axes: Sequence[int]) -> str:
        return self.axes_input_or_attr("Unsqueeze", [x], name, axes, 13)

    def reduce(self, op: str, x: str, name: str, axes: Sequence[int], keepdims: int = 1) -> str:
        since = 13 if op == "ReduceSum" else 18
        return self.axes_input_or_attr(op, [x], name, axes, since, keepdims=keepdims)

    def split(self, x: str, name: str, sizes: Sequence[int], axis: int) -> list[str]:
        n = len(sizes)
        if self.opset >= 18 and len(set(sizes)) == 1:
            return self.node("Split", [x], name, n_out=n, axis=axis, num_outputs=n)
        if self.opset >= 13:
            return self.node("Split", [x, self.i64(f"{name}.split", list(sizes))], name,
                             n_out=n, axis=axis)
        return self.node("Split", [x], name, n_out=n, axis=axis, split=list(sizes))

    def clip(self, x: str, name: str, low: float, high: float) -> str:
        if self.opset >= 11:
            return self.node("Clip", [x, self.f32(f"{name}.min", low),
                                      self.f32(f"{name}.max", high)], name)
        return self.node("Clip", [x], name, min=low, max=high)

    def pad(self, x: str, name: str, pads: Sequence[int], value: float = 0.0) -> str:
        if self.opset >= 11:
            return self.node("Pad", [x, self.i64(f"{name}.pads", list(pads)),
                                     self.f32(f"{name}.value", value)], name, mode="constant")
        return self.node("Pad", [x], name, pads=list(pads), value=value, mode="constant")

    def slice(self, x: str, name: str, starts: Sequence[int], ends: Sequence[int],
              axes: Sequence[int], steps: Sequence[int] | None = None) -> str:
        if self.opset < 10:
            assert steps is None or all(s == 1 for s in steps)
            return self.node("Slice", [x], name, starts=list(starts), ends=list(ends),
                             axes=list(axes))
        ins = [x, self.i64(f"{name}.starts", starts), self.i64(f"{name}.ends", ends),
               self.i64(f"{name}.axes", axes)]
        if steps is not None:
            ins.append(self.i64(f"{name}.steps", steps))
        return self.node("Slice", ins, name)

    def upsample(self, x: str, name: str, scale: float, mode: str = "nearest",
                 align_corners: bool = False) -> str:
        """x2-style spatial upsampling of an NC... tensor as each opset exports it."""
        rank = 4
        scales = self.f32(f"{name}.scales", [1.0, 1.0] + [scale] * (rank - 2))
        if self.opset < 10:
            return self.node("Upsample", [x, scales], name, mode=mode)
        if self.opset < 11:
            return self.node("Resize", [x, scales], name, mode=mode)
        coord = "align_corners" if align_corners else (
            "asymmetric" if mode == "nearest" else "half_pixel")
        attrs: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": coord}
        if mode == "nearest":
            attrs["nearest_mode"] = "floor"
        roi = "" if self.opset >= 13 else self.f32(f"{name}.roi", [])
        return self.node("Resize", [x, roi, scales], name, **attrs)

    # --- layers ----------------------------------------------------------------------------
    def conv(self, x: str, name: str, cin: int, cout: int, kernel: Sequence[int],
             stride: Any = 1, pad: Any = 0, group: int = 1, bias: bool = True,
             dilation: Any = 1) -> str:
        nd = len(kernel)
        strides = _nlist(stride, nd)
        pads = _pads(pad, nd)
        fan_in = (cin // group) * math.prod(kernel)
        ins = [x, self.weight(f"{name}.weight", [cout, cin // group, *kernel], fan_in)]
        if bias:
            ins.append(self.small(f"{name}.bias", [cout], 0.01))
        return self.node("Conv", ins, name, kernel_shape=list(kernel), strides=strides,
                         pads=pads, dilations=_nlist(dilation, nd), group=group)

    def conv_transpose(self, x: str, name: str, cin: int, cout: int, kernel: Sequence[int],
                       stride: Any = 1, pad: Any = 0, output_padding: Any = 0) -> str:
        nd = len(kernel)
        ins = [x, self.weight(f"{name}.weight", [cin, cout, *kernel], cin),
               self.small(f"{name}.bias", [cout], 0.01)]
        return self.node("ConvTranspose", ins, name, kernel_shape=list(kernel),
                         strides=_nlist(stride, nd), pads=_pads(pad, nd),
                         output_padding=_nlist(output_padding, nd))

    def bn(self, x: str, name: str, c: int, gamma: float = 1.0) -> str:
        scale = (1.0 + 0.1 * self.rng.standard_normal(c)).astype(np.float32) * np.float32(gamma)
        ins = [x, self.init(f"{name}.weight", scale), self.small(f"{name}.bias", [c]),
               self.small(f"{name}.running_mean", [c]),
               self.init(f"{name}.running_var", self.rng.uniform(0.8, 1.2, c).astype("f"))]
        attrs: dict[str, Any] = {"epsilon": 1e-5, "momentum": 0.9}
        if self.opset >= 14:
            attrs["training_mode"] = 0
        return self.node("BatchNormalization", ins, name, **attrs)

    def pool(self, op: str, x: str, name: str, kernel: Sequence[int], stride: Any = None,
             pad: Any = 0, ceil_mode: bool = False, count_include_pad: bool = False) -> str:
        nd = len(kernel)
        attrs: dict[str, Any] = {"kernel_shape": list(kernel),
                                 "strides": _nlist(stride if stride is not None else kernel, nd),
                                 "pads": _pads(pad, nd)}
        if ceil_mode:
            assert self.opset >= 10, "ceil_mode needs opset 10"
            attrs["ceil_mode"] = 1
        if op == "AveragePool" and count_include_pad:
            attrs["count_include_pad"] = 1
        return self.node(op, [x], name, **attrs)

    def gemm(self, x: str, name: str, fin: int, fout: int) -> str:
        ins = [x, self.weight(f"{name}.weight", [fout, fin], fin // 2),
               self.small(f"{name}.bias", [fout], 0.01)]
        return self.node("Gemm", ins, name, alpha=1.0, beta=1.0, transB=1)

    def linear(self, x: str, name: str, fin: int, fout: int) -> str:
        """PyTorch nn.Linear on a >2-D tensor: MatMul by the transposed weight, then Add."""
        w = self.weight(f"{name}.weight.T", [fin, fout], fin // 2)
        y = self.node("MatMul", [x, w], f"{name}/MatMul")
        return self.node("Add", [y, self.small(f"{name}.bias", [fout], 0.01)], f"{name}/Add")

    def swish(self, x: str, name: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x], f"{name}/Sigmoid")],
                         f"{name}/Mul")

    def layer_norm(self, x: str, name: str, dim: int) -> str:
        gamma = self.init(f"{name}.weight", (1.0 + 0.1 * self.rng.standard_normal(dim))
                          .astype(np.float32))
        beta = self.small(f"{name}.bias", [dim])
        if self.opset >= 17:
            return self.node("LayerNormalization", [x, gamma, beta], name, axis=-1,
                             epsilon=1e-5)
        mean = self.reduce("ReduceMean", x, f"{name}/ReduceMean", [-1])
        centered = self.node("Sub", [x, mean], f"{name}/Sub")
        sq = self.node("Pow", [centered, self.f32(f"{name}.two", 2.0)], f"{name}/Pow")
        var = self.reduce("ReduceMean", sq, f"{name}/ReduceMean_1", [-1])
        std = self.node("Sqrt", [self.node("Add", [var, self.f32(f"{name}.eps", 1e-5)],
                                           f"{name}/Add")], f"{name}/Sqrt")
        normed = self.node("Div", [centered, std], f"{name}/Div")
        return self.node("Add", [self.node("Mul", [normed, gamma], f"{name}/Mul"), beta],
                         f"{name}/Add_1")

    def gelu(self, x: str, name: str, tanh: bool = False) -> str:
        if self.opset >= 20:
            return self.node("Gelu", [x], name, approximate="tanh" if tanh else "none")
        if tanh:  # GPT-2's gelu_new as torch exports it
            cube = self.node("Pow", [x, self.f32(f"{name}.three", 3.0)], f"{name}/Pow")
            inner = self.node("Add", [x, self.node("Mul", [cube, self.f32(
                f"{name}.c", 0.044715)], f"{name}/Mul")], f"{name}/Add")
            t = self.node("Tanh", [self.node("Mul", [inner, self.f32(
                f"{name}.k", math.sqrt(2 / math.pi))], f"{name}/Mul_1")], f"{name}/Tanh")
            one = self.node("Add", [t, self.f32(f"{name}.one", 1.0)], f"{name}/Add_1")
            half = self.node("Mul", [x, self.f32(f"{name}.half", 0.5)], f"{name}/Mul_2")
            return self.node("Mul", [half, one], f"{name}/Mul_3")
        scaled = self.node("Div", [x, self.f32(f"{name}.sqrt2", math.sqrt(2.0))], f"{name}/Div")
        erf = self.node("Add", [self.node("Erf", [scaled], f"{name}/Erf"),
                                self.f32(f"{name}.one", 1.0)], f"{name}/Add")
        prod = self.node("Mul", [x, erf], f"{name}/Mul")
        return self.node("Mul", [prod, self.f32(f"{name}.half", 0.5)], f"{name}/Mul_1")


def _nlist(value: Any, nd: int) -> list[int]:
    if isinstance(value, int):
        return [value] * nd
    return [int(v) for v in value]


def _pads(pad: Any, nd: int) -> list[int]:
    if isinstance(pad, int):
        return [pad] * (2 * nd)
    values = [int(p) for p in pad]
    return values + values if len(values) == nd else values


def scaled(channels: float, width: float) -> int:
    """A channel count scaled by the model's width multiplier (at least 4)."""
    return max(4, int(round(channels * width)))


def conv_bn_act(g: ZooBuilder, x: str, name: str, cin: int, cout: int, k: Any,
                stride: Any = 1, pad: Any = 0, act: str = "Relu", group: int = 1) -> str:
    """Conv (no bias) + BatchNormalization + activation, torchvision's BasicConv2d naming;
    N-d by the kernel's length (an int kernel means 2-D)."""
    kernel = [k, k] if isinstance(k, int) else list(k)
    y = g.conv(x, f"{name}.conv", cin, cout, kernel, stride, pad, group=group, bias=False)
    y = g.bn(y, f"{name}.bn", cout)
    if act == "LeakyRelu":
        return g.node("LeakyRelu", [y], f"{name}.act", alpha=0.1)
    if act == "Swish":
        return g.swish(y, f"{name}.act")
    if act == "":
        return y
    return g.node(act, [y], f"{name}.relu")
