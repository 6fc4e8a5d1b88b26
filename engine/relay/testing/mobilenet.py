"""MobileNetV2 1.0 built with the relay API: inverted residuals, depthwise conv, ReLU6."""

from __future__ import annotations

from engine.ir.expr import Expr, Function
from engine.ir.module import IRModule
from engine.relay.analysis import free_vars
from engine.relay.expr import var
from engine.relay.op import nn
from engine.relay.testing.init import create_workload
from engine.relay.testing.layers import conv_bn, dense
from engine.runtime.ndarray import NDArray

# expansion t, output channels c, repeats n, first stride s
_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
             (6, 160, 3, 2), (6, 320, 1, 1)]


def _inverted_residual(x: Expr, name: str, cin: int, cout: int, stride: int, t: int) -> Expr:
    hidden = cin * t
    y = x if t == 1 else conv_bn(x, f"{name}_expand", cin, hidden, 1, act="relu6")
    y = conv_bn(y, f"{name}_dw", hidden, hidden, 3, stride, groups=hidden, act="relu6")
    y = conv_bn(y, f"{name}_project", hidden, cout, 1, act="")
    return y + x if stride == 1 and cin == cout else y


def get_net(batch_size: int, num_classes: int, image_shape: tuple[int, ...],
            dtype: str = "float32") -> Function:
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x = conv_bn(data, "conv0", image_shape[0], 32, 3, 2, act="relu6")
    cin = 32
    for i, (t, c, n, s) in enumerate(_SETTINGS):
        for j in range(n):
            x = _inverted_residual(x, f"block{i}_{j}", cin, c, s if j == 0 else 1, t)
            cin = c
    x = conv_bn(x, "conv_last", cin, 1280, 1, act="relu6")
    x = nn.batch_flatten(nn.global_avg_pool2d(x))
    x = dense(x, "classifier", num_classes, 1280)
    return Function(tuple(free_vars(x)), x)


def get_workload(batch_size: int = 1, num_classes: int = 1000,
                 image_shape: tuple[int, ...] = (3, 224, 224), dtype: str = "float32",
                 seed: int = 0) -> tuple[IRModule, dict[str, NDArray]]:
    """(mod, params) of MobileNetV2; the input is `data`."""
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype), seed=seed)
