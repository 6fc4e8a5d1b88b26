"""The bundled demo model: a small ResNet-like CNN, generated as ONNX on first use.

Deterministic (seeded weights), named layers (`stem.conv`, `block1.conv1`,
...), about 100 KB; written to `<data>/demo/demo_cnn.onnx` and imported like
any upload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from explorer.protocol import Session
from explorer.sessions import SessionService

DEMO_NAME = "demo_cnn.onnx"
INPUT_SHAPE = (1, 3, 32, 32)
NUM_CLASSES = 10


class _Net:
    def __init__(self, seed: int = 2024) -> None:
        from onnx import helper

        self.helper = helper
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.2) -> str:
        from onnx import numpy_helper

        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def node(self, op: str, name: str, inputs: list[str], **attrs: Any) -> str:
        out = f"{name}.out"
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def conv_bn(self, x: str, name: str, cin: int, cout: int, stride: int = 1,
                groups: int = 1, relu: bool = True) -> str:
        w = self.weight(f"{name}.weight", (cout, cin // groups, 3, 3), 0.3)
        y = self.node("Conv", f"{name}.conv", [x, w], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                      strides=[stride, stride], group=groups)
        bn = [self.weight(f"{name}.bn.{p}", (cout,), s) for p, s in
              (("scale", 0.1), ("bias", 0.1), ("mean", 0.1))]
        var = f"{name}.bn.var"
        self.inits.append(_numpy_init(var, 1.0 + np.abs(self.rng.standard_normal(cout)) * 0.1))
        y = self.node("BatchNormalization", f"{name}.bn", [y, *bn, var], epsilon=1e-5)
        return self.node("Relu", f"{name}.relu", [y]) if relu else y

    def residual(self, x: str, name: str, channels: int) -> str:
        y = self.conv_bn(x, f"{name}.a", channels, channels)
        y = self.conv_bn(y, f"{name}.b", channels, channels, relu=False)
        y = self.node("Add", f"{name}.add", [x, y])
        return self.node("Relu", f"{name}.relu", [y])


def _numpy_init(name: str, data: np.ndarray) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(data.astype(np.float32), name)


def build_demo_model() -> bytes:
    """The demo CNN as serialized ONNX (opset 13), identical bytes on every call."""
    import onnx
    from onnx import TensorProto, helper

    net = _Net()
    x = net.conv_bn("image", "stem", 3, 16, stride=2)
    x = net.residual(x, "block1", 16)
    x = net.conv_bn(x, "down", 16, 32, stride=2)
    x = net.conv_bn(x, "dw", 32, 32, groups=32)
    x = net.residual(x, "block2", 32)
    x = net.node("GlobalAveragePool", "pool", [x])
    x = net.node("Flatten", "flatten", [x], axis=1)
    w = net.weight("classifier.weight", (NUM_CLASSES, 32), 0.3)
    b = net.weight("classifier.bias", (NUM_CLASSES,), 0.1)
    x = net.node("Gemm", "classifier", [x, w, b], transB=1)
    net.node("Softmax", "softmax", [x], axis=1)
    graph = helper.make_graph(
        net.nodes, "demo_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("softmax.out", TensorProto.FLOAT,
                                       [1, NUM_CLASSES])],
        initializer=net.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="ir-explorer-demo")
    model.ir_version = 8
    onnx.checker.check_model(model)
    data: bytes = model.SerializeToString()
    return data


def demo_path(data_dir: Path) -> Path:
    path = data_dir / "demo" / DEMO_NAME
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(build_demo_model())
        tmp.replace(path)
    return path


def demo_session(sessions: SessionService, data_dir: Path) -> Session:
    """The demo session, created on first use and reused afterwards."""
    for session in sessions.store.sessions():
        if session["name"] == DEMO_NAME and sessions.store.session_model_file(session["id"]):
            return session
    return sessions.create(DEMO_NAME, demo_path(data_dir).read_bytes())
