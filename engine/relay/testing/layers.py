"""Building blocks for the test workloads: parameters are vars named after their layer."""

from __future__ import annotations

from engine.ir.expr import Expr
from engine.ir.span import layer_span
from engine.relay.expr import var
from engine.relay.op import nn
from engine.relay.op.tensor import clip


def conv_bn(data: Expr, name: str, cin: int, cout: int, kernel: int, stride: int = 1,
            groups: int = 1, act: str = "relu") -> Expr:
    """conv2d (no bias) + batch_norm + activation ("relu", "relu6" or "")."""
    pad = kernel // 2
    weight = var(f"{name}_weight", shape=(cout, cin // groups, kernel, kernel))
    conv: Expr = nn.conv2d(data, weight, strides=(stride, stride), padding=(pad, pad), groups=groups,
                     channels=cout, kernel_size=(kernel, kernel))
    conv = _named(conv, name)
    bn = nn.batch_norm(conv, var(f"{name}_bn_gamma", shape=(cout,)),
                       var(f"{name}_bn_beta", shape=(cout,)),
                       var(f"{name}_bn_moving_mean", shape=(cout,)),
                       var(f"{name}_bn_moving_var", shape=(cout,)))[0]
    if act == "relu":
        return nn.relu(bn)
    if act == "relu6":
        return clip(bn, 0.0, 6.0)
    return bn


def dense(data: Expr, name: str, units: int, fin: int) -> Expr:
    out = nn.dense(data, var(f"{name}_weight", shape=(units, fin)), units=units)
    return nn.bias_add(_named(out, name), var(f"{name}_bias", shape=(units,)), axis=-1)


def _named(expr: Expr, name: str) -> Expr:
    from dataclasses import replace

    return replace(expr, span=layer_span(name))
