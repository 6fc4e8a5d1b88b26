"""Normalisation and activations: batch_norm, layer_norm, lrn, softmax, relu family, dropout."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr, TupleGetItem
from engine.ir.op import register_op_attr
from engine.ir.type import TensorType, TupleType, Type
from engine.relay.op._typing import (
    check_arity,
    check_dim,
    check_ndim,
    normalize_axis,
    tensor_arg,
)
from engine.relay.op.indexing import TupleWrapper
from engine.relay.op.nn.epilogue import ChannelAffine
from engine.relay.op.op import (
    ELEMWISE,
    OPAQUE,
    OUT_ELEMWISE_FUSABLE,
    define_op,
    make_call,
    register_inplace,
)
from engine.relay.op.tensor import identity_rel


def _channel_params(arg_types: Sequence[Type], attrs: Attrs, count: int) -> TensorType:
    """data, then `count - 1` vectors as long as data's `axis`."""
    check_arity(arg_types, count)
    data = tensor_arg(arg_types, 0)
    axis = normalize_axis(int(attrs.axis), data.ndim, 0, data)
    for i in range(1, count):
        vec = tensor_arg(arg_types, i)
        check_ndim(vec, i, 1)
        check_dim(vec.shape[0], data.shape[axis], i, f"length (data axis {axis})", vec)
    return data


def _batch_norm_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = _channel_params(arg_types, attrs, 5)
    vec = tensor_arg(arg_types, 3)
    return TupleType([data, vec, vec])


def _channel_shape(ndim: int, axis: int, size: int) -> list[int]:
    shape = [1] * ndim
    shape[axis % ndim] = size
    return shape


def batch_norm_affine(params: list[np.ndarray], attrs: Attrs, dtype: np.dtype | None = None
                      ) -> ChannelAffine:
    """Inference batch_norm as a per-channel map, from gamma, beta, mean and var, with
    vectors in `dtype` (the data's; default: the parameters')."""
    gamma, beta, mean, var = params
    root = np.sqrt(var + var.dtype.type(attrs.epsilon))  # a scalar: np.asarray costs more
    scale = gamma / root if attrs.get("scale", True) else 1.0 / root
    shift = beta - mean * scale if attrs.get("center", True) else -mean * scale
    dtype = scale.dtype if dtype is None else dtype
    return ChannelAffine(scale.astype(dtype, copy=False), shift.astype(dtype, copy=False),
                         int(attrs.axis))


def _batch_norm_into(xs: list[np.ndarray], attrs: Attrs, out: np.ndarray | None,
                     clamp: tuple[float, float] | None = None) -> tuple[np.ndarray, ...]:
    """The batch_norm tuple, its data written into `out` (a new array when None) and
    clamped to `clamp` (float data)."""
    data = xs[0]
    affine = batch_norm_affine(xs[1:], attrs, data.dtype).clamped(clamp)
    if out is None:
        out = np.empty(data.shape, data.dtype)
    return affine.apply(data, out), xs[3], xs[4]


def _batch_norm_compute(xs: list[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    return _batch_norm_into(xs, attrs, None)


def _batch_norm_inplace(xs: list[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...] | None:
    if xs[0].dtype.kind != "f":
        return None
    return _batch_norm_into(xs, attrs, xs[0])


def _batch_norm_clamped(xs: list[np.ndarray], attrs: Attrs, clamp: tuple[float, float],
                        donated: bool) -> tuple[np.ndarray, ...]:
    """batch_norm with the clip or relu after it (the interpreter's fusion): field 0
    clamped to `clamp`, in place when `donated` (and float)."""
    in_place = donated and xs[0].dtype.kind == "f"
    return _batch_norm_into(xs, attrs, xs[0] if in_place else None, clamp)


define_op("nn.batch_norm", ("data", "gamma", "beta", "moving_mean", "moving_var"),
          _batch_norm_rel, OPAQUE, _batch_norm_compute,
          attrs_type_key="relay.attrs.BatchNormAttrs")
register_inplace("nn.batch_norm", _batch_norm_inplace)
register_op_attr("nn.batch_norm", "FNumpyClamped", _batch_norm_clamped)
register_op_attr("nn.batch_norm", "FNumpyChannelAffine", batch_norm_affine)
register_op_attr("nn.batch_norm", "FChannelAffineFusable",
                 lambda call, data_index, via_field0: via_field0 and data_index == 0)


def batch_norm(data: Expr, gamma: Expr, beta: Expr, moving_mean: Expr, moving_var: Expr,
               axis: int = 1, epsilon: float = 1e-5, center: bool = True,
               scale: bool = True) -> TupleWrapper:
    """Inference batch norm; returns (out, moving_mean, moving_var) as a TupleWrapper."""
    call = make_call("nn.batch_norm", (data, gamma, beta, moving_mean, moving_var), {
        "axis": int(axis), "epsilon": float(epsilon), "center": bool(center),
        "scale": bool(scale)}, "relay.attrs.BatchNormAttrs")
    return TupleWrapper(call, 3)


def _layer_norm_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    return _channel_params(arg_types, attrs, 3)


def _layer_norm_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, gamma, beta = xs
    axis = int(attrs.axis) % data.ndim
    mean = data.mean(axis=axis, keepdims=True)
    dev = data - mean
    var = (dev * dev).mean(axis=axis, keepdims=True)
    out = dev / np.sqrt(var + np.asarray(attrs.epsilon, data.dtype))
    shape = _channel_shape(data.ndim, axis, data.shape[axis])
    if attrs.get("scale", True):
        out = out * gamma.reshape(shape)
    if attrs.get("center", True):
        out = out + beta.reshape(shape)
    return out.astype(data.dtype, copy=False)


define_op("nn.layer_norm", ("data", "gamma", "beta"), _layer_norm_rel, OPAQUE,
          _layer_norm_compute, attrs_type_key="relay.attrs.LayerNormAttrs")


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axis: int = -1, epsilon: float = 1e-5,
               center: bool = True, scale: bool = True) -> Call:
    return make_call("nn.layer_norm", (data, gamma, beta), {
        "axis": int(axis), "epsilon": float(epsilon), "center": bool(center),
        "scale": bool(scale)}, "relay.attrs.LayerNormAttrs")


# --- softmax / log_softmax ---------------------------------------------------------------
def _softmax_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    normalize_axis(int(attrs.axis), data.ndim, 0, data)
    return data


def _softmax_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    axis = int(attrs.axis)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _log_softmax_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    axis = int(attrs.axis)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


define_op("nn.softmax", ("data",), _softmax_rel, OUT_ELEMWISE_FUSABLE, _softmax_compute,
          attrs_type_key="relay.attrs.SoftmaxAttrs")
define_op("nn.log_softmax", ("data",), _softmax_rel, OUT_ELEMWISE_FUSABLE, _log_softmax_compute,
          attrs_type_key="relay.attrs.SoftmaxAttrs")


def softmax(data: Expr, axis: int = -1) -> Call:
    return make_call("nn.softmax", (data,), {"axis": int(axis)}, "relay.attrs.SoftmaxAttrs")


def log_softmax(data: Expr, axis: int = -1) -> Call:
    return make_call("nn.log_softmax", (data,), {"axis": int(axis)}, "relay.attrs.SoftmaxAttrs")


# --- lrn -----------------------------------------------------------------------------------
def _lrn_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    axis = int(attrs.axis) % x.ndim
    size = int(attrs.size)
    sq = np.moveaxis(x * x, axis, 0)
    padded = np.pad(sq, [(size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 1))
    csum = np.concatenate([np.zeros_like(padded[:1]), np.cumsum(padded, axis=0)])
    window = np.moveaxis(csum[size:] - csum[:-size], 0, axis)
    div = (attrs.bias + attrs.alpha / size * window) ** attrs.beta
    return (x / div).astype(x.dtype, copy=False)


define_op("nn.lrn", ("data",), identity_rel, OPAQUE, _lrn_compute,
          attrs_type_key="relay.attrs.LRNAttrs")


def lrn(data: Expr, size: int = 5, axis: int = 1, bias: float = 2, alpha: float = 0.00001,
        beta: float = 0.75) -> Call:
    return make_call("nn.lrn", (data,), {"size": int(size), "axis": int(axis),
                                         "bias": float(bias), "alpha": float(alpha),
                                         "beta": float(beta)}, "relay.attrs.LRNAttrs")


# --- activations ---------------------------------------------------------------------------
define_op("nn.relu", ("data",), identity_rel, ELEMWISE,
          lambda xs, attrs: np.maximum(xs[0], np.zeros((), xs[0].dtype)))
register_inplace("nn.relu", lambda xs, attrs: np.maximum(xs[0], np.zeros((), xs[0].dtype),
                                                         out=xs[0]))
define_op("nn.leaky_relu", ("data",), identity_rel, ELEMWISE,
          lambda xs, attrs: np.where(xs[0] > 0, xs[0],
                                     xs[0] * np.asarray(attrs.alpha, xs[0].dtype)),
          attrs_type_key="relay.attrs.LeakyReluAttrs")


def relu(data: Expr) -> Call:
    return make_call("nn.relu", (data,))


def leaky_relu(data: Expr, alpha: float = 0.01) -> Call:
    return make_call("nn.leaky_relu", (data,), {"alpha": float(alpha)},
                     "relay.attrs.LeakyReluAttrs")


def _prelu_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    return _channel_params(arg_types, attrs, 2)


def _prelu_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, alpha = xs
    alpha = alpha.reshape(_channel_shape(data.ndim, int(attrs.axis), alpha.shape[0]))
    return np.where(data > 0, data, data * alpha)


define_op("nn.prelu", ("data", "alpha"), _prelu_rel, 1, _prelu_compute,
          attrs_type_key="relay.attrs.PReluAttrs")


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    return make_call("nn.prelu", (data, alpha), {"axis": int(axis)}, "relay.attrs.PReluAttrs")


# --- dropout -------------------------------------------------------------------------------
def _dropout_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = identity_rel(arg_types, attrs)
    return TupleType([data, data])


define_op("nn.dropout", ("data",), _dropout_rel, OPAQUE,
          lambda xs, attrs: (xs[0], np.ones_like(xs[0])),
          attrs_type_key="relay.attrs.DropoutAttrs")


def dropout_raw(data: Expr, rate: float = 0.5) -> Call:
    return make_call("nn.dropout", (data,), {"rate": float(rate)}, "relay.attrs.DropoutAttrs")


def dropout(data: Expr, rate: float = 0.5) -> TupleGetItem:
    """Inference dropout: the identity, as the first field of nn.dropout's (out, mask)."""
    return TupleGetItem(dropout_raw(data, rate), 0)


__all__ = ["batch_norm", "dropout", "dropout_raw", "layer_norm", "leaky_relu", "log_softmax",
           "lrn", "prelu", "relu", "softmax"]
