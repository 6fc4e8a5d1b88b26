"""ResNet v1 (18/34/50/101/152) built with the relay API (TVM's relay.testing.resnet)."""

from __future__ import annotations

from engine.ir.expr import Expr, Function
from engine.ir.module import IRModule
from engine.relay.analysis import free_vars
from engine.relay.expr import var
from engine.relay.op import nn
from engine.relay.testing.init import create_workload
from engine.relay.testing.layers import conv_bn, dense
from engine.runtime.ndarray import NDArray

_UNITS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
          152: [3, 8, 36, 3]}


def _block(x: Expr, name: str, cin: int, cout: int, stride: int, bottleneck: bool) -> Expr:
    if bottleneck:
        mid = cout // 4
        y = conv_bn(x, f"{name}_conv1", cin, mid, 1)
        y = conv_bn(y, f"{name}_conv2", mid, mid, 3, stride)
        y = conv_bn(y, f"{name}_conv3", mid, cout, 1, act="")
    else:
        y = conv_bn(x, f"{name}_conv1", cin, cout, 3, stride)
        y = conv_bn(y, f"{name}_conv2", cout, cout, 3, act="")
    short = x if cin == cout and stride == 1 else conv_bn(x, f"{name}_down", cin, cout, 1,
                                                          stride, act="")
    return nn.relu(y + short)


def get_net(batch_size: int, num_classes: int, num_layers: int, image_shape: tuple[int, ...],
            dtype: str = "float32") -> Function:
    bottleneck = num_layers >= 50
    widths = [256, 512, 1024, 2048] if bottleneck else [64, 128, 256, 512]
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x = conv_bn(data, "conv0", image_shape[0], 64, 7, 2)
    x = nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    cin = 64
    for stage, (units, width) in enumerate(zip(_UNITS[num_layers], widths)):
        for unit in range(units):
            stride = 2 if unit == 0 and stage > 0 else 1
            x = _block(x, f"stage{stage + 1}_unit{unit + 1}", cin, width, stride, bottleneck)
            cin = width
    x = nn.batch_flatten(nn.global_avg_pool2d(x))
    x = nn.softmax(dense(x, "fc1", num_classes, cin))
    return Function(tuple(free_vars(x)), x)


def get_workload(batch_size: int = 1, num_classes: int = 1000, num_layers: int = 50,
                 image_shape: tuple[int, ...] = (3, 224, 224), dtype: str = "float32",
                 seed: int = 0) -> tuple[IRModule, dict[str, NDArray]]:
    """(mod, params) of a ResNet; the input is `data`."""
    return create_workload(get_net(batch_size, num_classes, num_layers, image_shape, dtype),
                           seed=seed)
