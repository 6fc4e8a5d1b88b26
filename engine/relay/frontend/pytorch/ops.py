"""ATen op converters for torch.export graphs (table keyed by the op's overload name)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.common import ConversionError

Converter = Callable[["AtenCall"], Any]
CONVERTERS: dict[str, Converter] = {}


def converter(*targets: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for target in targets:
            CONVERTERS[target] = fn
        return fn
    return register


@dataclass
class AtenCall:
    """One fx node: converted args (Expr for tensors, Python values otherwise)."""

    name: str
    target: str
    args: list[Any]
    kwargs: dict[str, Any]
    out_shape: tuple[int, ...] | None = None
    out_dtype: str | None = None
    shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def arg(self, index: int, key: str, default: Any = None) -> Any:
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(key, default)

    def fail(self, message: str) -> ConversionError:
        return ConversionError(self.name, self.target, message)


def _pair(value: Any, n: int = 2) -> list[int]:
    if isinstance(value, int):
        return [value] * n
    values = [int(v) for v in value]
    return values * n if len(values) == 1 else values


def _operand(value: Any, like: Expr | None, call: AtenCall) -> Expr:
    if isinstance(value, Expr):
        return value
    dtype = call.out_dtype or "float32"
    return relay.const(np.array(value, dtype=dtype), dtype)


def _conv(call: AtenCall, x: Expr, w: Expr, b: Any, stride: Any, padding: Any, dilation: Any,
          groups: int) -> Expr:
    w_shape = call.shapes[1]
    if len(w_shape) != 4:
        raise call.fail("only 2-D convolutions are supported")
    if isinstance(padding, str):
        if padding != "valid":
            raise call.fail(f"padding={padding!r} is not supported")
        padding = [0, 0]
    pad = _pair(padding)
    out = relay.nn.conv2d(x, w, strides=_pair(stride), padding=(pad[0], pad[1], pad[0], pad[1]),
                          dilation=_pair(dilation), groups=int(groups), channels=w_shape[0],
                          kernel_size=w_shape[2:])
    return relay.nn.bias_add(out, b, axis=1) if isinstance(b, Expr) else out


@converter("aten.conv2d.default")
def conv2d(call: AtenCall) -> Expr:
    return _conv(call, call.args[0], call.args[1], call.arg(2, "bias"), call.arg(3, "stride", 1),
                 call.arg(4, "padding", 0), call.arg(5, "dilation", 1), call.arg(6, "groups", 1))


@converter("aten.convolution.default")
def convolution(call: AtenCall) -> Expr:
    if call.args[6]:
        raise call.fail("transposed convolution is not supported")
    return _conv(call, call.args[0], call.args[1], call.args[2], call.args[3], call.args[4],
                 call.args[5], call.args[8])


def _dense(call: AtenCall, x: Expr, w: Expr, bias: Any, x_shape: tuple[int, ...]) -> Expr:
    units = call.shapes[1][0]
    if len(x_shape) != 2:
        x = relay.reshape(x, newshape=[int(np.prod(x_shape[:-1])), x_shape[-1]])
    out = relay.nn.dense(x, w, units=units)
    if isinstance(bias, Expr):
        out = relay.nn.bias_add(out, bias, axis=-1)
    if len(x_shape) != 2:
        out = relay.reshape(out, newshape=[*x_shape[:-1], units])
    return out


@converter("aten.linear.default")
def linear(call: AtenCall) -> Expr:
    return _dense(call, call.args[0], call.args[1], call.arg(2, "bias"), call.shapes[0])


@converter("aten.addmm.default")
def addmm(call: AtenCall) -> Expr:
    out = relay.nn.dense(call.args[1], relay.transpose(call.args[2], axes=[1, 0]))
    return relay.add(out, call.args[0])


@converter("aten.mm.default", "aten.matmul.default", "aten.bmm.default")
def matmul(call: AtenCall) -> Expr:
    a, b = call.shapes[0], call.shapes[1]
    if len(a) == 2 and len(b) == 2:
        return relay.nn.dense(call.args[0], relay.transpose(call.args[1], axes=[1, 0]))
    if len(a) == 3 and len(b) == 3:
        return relay.nn.batch_matmul(call.args[0], call.args[1], transpose_b=False)
    raise call.fail(f"matmul of shapes {a} x {b} is not supported")


@converter("aten.t.default")
def t(call: AtenCall) -> Expr:
    return relay.transpose(call.args[0], axes=[1, 0])


@converter("aten.batch_norm.default")
def batch_norm(call: AtenCall) -> Expr:
    x, w, b, mean, var = call.args[:5]
    eps = float(call.arg(7, "eps", 1e-5))
    return relay.nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=eps)[0]


@converter("aten._native_batch_norm_legit_no_training.default")
def batch_norm_no_training(call: AtenCall) -> list[Expr | None]:
    x, w, b, mean, var = call.args[:5]
    eps = float(call.arg(6, "eps", 1e-5))
    return [relay.nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=eps)[0], None, None]


@converter("aten.layer_norm.default")
def layer_norm(call: AtenCall) -> Expr:
    x, shape = call.args[0], list(call.args[1])
    if len(shape) != 1:
        raise call.fail("layer_norm over more than the last dimension is not supported")
    return relay.nn.layer_norm(x, call.arg(2, "weight"), call.arg(3, "bias"), axis=-1,
                               epsilon=float(call.arg(4, "eps", 1e-5)))


_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "aten.relu.default": lambda x: relay.nn.relu(x),
    "aten.relu_.default": lambda x: relay.nn.relu(x),
    "aten.sigmoid.default": lambda x: relay.sigmoid(x),
    "aten.tanh.default": lambda x: relay.tanh(x),
    "aten.exp.default": lambda x: relay.exp(x),
    "aten.sqrt.default": lambda x: relay.sqrt(x),
    "aten.neg.default": lambda x: relay.negative(x),
    "aten.silu.default": lambda x: relay.multiply(x, relay.sigmoid(x)),
}


@converter(*_UNARY)
def unary(call: AtenCall) -> Expr:
    return _UNARY[call.target](call.args[0])


@converter("aten.dropout.default", "aten.clone.default", "aten.contiguous.default",
           "aten.alias.default", "aten.detach.default")
def identity(call: AtenCall) -> Expr:
    return call.args[0]


@converter("aten.hardtanh.default", "aten.clamp.default")
def clamp(call: AtenCall) -> Expr:
    default_lo, default_hi = (-1.0, 1.0) if "hardtanh" in call.target else (-math.inf, math.inf)
    lo, hi = call.arg(1, "min_val", default_lo), call.arg(2, "max_val", default_hi)
    lo = -math.inf if lo is None else lo
    hi = math.inf if hi is None else hi
    return relay.clip(call.args[0], float(lo), float(hi))


@converter("aten.gelu.default")
def gelu(call: AtenCall) -> Expr:
    x = call.args[0]
    if call.kwargs.get("approximate", "none") == "tanh":
        inner = relay.multiply(relay.const(math.sqrt(2 / math.pi)), relay.add(
            x, relay.multiply(relay.const(0.044715), relay.multiply(relay.multiply(x, x), x))))
        return relay.multiply(relay.multiply(relay.const(0.5), x),
                              relay.add(relay.const(1.0), relay.tanh(inner)))
    erf = relay.erf(relay.multiply(x, relay.const(0.5 ** 0.5)))
    return relay.multiply(relay.multiply(x, relay.const(0.5)), relay.add(relay.const(1.0), erf))


_BINARY = {"aten.add.Tensor": "add", "aten.sub.Tensor": "subtract",
           "aten.mul.Tensor": "multiply", "aten.div.Tensor": "divide"}


@converter(*_BINARY)
def binary(call: AtenCall) -> Expr:
    lhs, rhs = call.args[0], call.args[1]
    lhs_e = _operand(lhs, None, call)
    rhs_e = _operand(rhs, None, call)
    alpha = call.kwargs.get("alpha", 1)
    if alpha != 1:
        rhs_e = relay.multiply(rhs_e, _operand(alpha, None, call))
    return getattr(relay, _BINARY[call.target])(lhs_e, rhs_e)


@converter("aten.softmax.int", "aten._softmax.default")
def softmax(call: AtenCall) -> Expr:
    return relay.nn.softmax(call.args[0], axis=int(call.args[1]))


@converter("aten.log_softmax.int", "aten._log_softmax.default")
def log_softmax(call: AtenCall) -> Expr:
    return relay.nn.log_softmax(call.args[0], axis=int(call.args[1]))


def _pool_geometry(call: AtenCall) -> tuple[list[int], list[int], tuple[int, ...]]:
    kernel = _pair(call.args[1])
    stride = call.arg(2, "stride", []) or kernel
    pad = _pair(call.arg(3, "padding", 0))
    return kernel, _pair(stride), (pad[0], pad[1], pad[0], pad[1])


@converter("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default")
def max_pool(call: AtenCall) -> Any:
    kernel, stride, pad = _pool_geometry(call)
    out = relay.nn.max_pool2d(call.args[0], pool_size=kernel, strides=stride, padding=pad,
                              dilation=_pair(call.arg(4, "dilation", 1)),
                              ceil_mode=bool(call.arg(5, "ceil_mode", False)))
    return [out, None] if call.target.endswith("with_indices.default") else out


@converter("aten.avg_pool2d.default")
def avg_pool(call: AtenCall) -> Expr:
    kernel, stride, pad = _pool_geometry(call)
    if call.arg(6, "divisor_override") is not None:
        raise call.fail("divisor_override is not supported")
    return relay.nn.avg_pool2d(call.args[0], pool_size=kernel, strides=stride, padding=pad,
                               ceil_mode=bool(call.arg(4, "ceil_mode", False)),
                               count_include_pad=bool(call.arg(5, "count_include_pad", True)))


@converter("aten.adaptive_avg_pool2d.default")
def adaptive_avg_pool(call: AtenCall) -> Expr:
    size = _pair(call.args[1])
    if size == [1, 1]:
        return relay.nn.global_avg_pool2d(call.args[0])
    return relay.nn.adaptive_avg_pool2d(call.args[0], output_size=size)


@converter("aten.mean.dim", "aten.sum.dim_IntList", "aten.amax.default")
def reduce(call: AtenCall) -> Expr:
    fn = {"aten.mean.dim": relay.mean, "aten.sum.dim_IntList": relay.sum,
          "aten.amax.default": relay.max}[call.target]
    dims = call.arg(1, "dim")
    axis = None if dims is None else [int(d) for d in (dims if isinstance(dims, Sequence)
                                                       else [dims])]
    return fn(call.args[0], axis=axis, keepdims=bool(call.arg(2, "keepdim", False)))


@converter("aten.view.default", "aten.reshape.default", "aten.flatten.using_ints",
           "aten._unsafe_view.default", "aten.unsqueeze.default", "aten.squeeze.dim")
def reshape(call: AtenCall) -> Expr:
    if call.out_shape is None:
        raise call.fail("the output shape is unknown")
    return relay.reshape(call.args[0], newshape=list(call.out_shape))


@converter("aten.cat.default")
def cat(call: AtenCall) -> Expr:
    return relay.concatenate(list(call.args[0]), axis=int(call.arg(1, "dim", 0)))


@converter("aten.permute.default")
def permute(call: AtenCall) -> Expr:
    return relay.transpose(call.args[0], axes=[int(a) for a in call.args[1]])


@converter("aten.transpose.int")
def transpose(call: AtenCall) -> Expr:
    rank = len(call.shapes[0])
    axes = list(range(rank))
    a, b = int(call.args[1]) % rank, int(call.args[2]) % rank
    axes[a], axes[b] = axes[b], axes[a]
    return relay.transpose(call.args[0], axes=axes)


@converter("_operator.getitem")
def getitem(call: AtenCall) -> Any:
    value = call.args[0]
    if isinstance(value, (list, tuple)):
        return value[int(call.args[1])]
    return relay.TupleGetItem(value, int(call.args[1]))
