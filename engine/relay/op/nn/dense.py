"""nn.dense, nn.matmul, nn.batch_matmul, nn.bias_add, nn.batch_flatten."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ir.attrs import Attrs
from engine.ir.expr import Call, Expr
from engine.ir.type import TensorType, Type
from engine.relay.op._typing import (
    broadcast_shapes,
    check_arity,
    check_dim,
    check_ndim,
    normalize_axis,
    product,
    tensor_arg,
)
from engine.relay.op.op import BROADCAST, INJECTIVE, OUT_ELEMWISE_FUSABLE, define_op, make_call


def _dense_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, weight = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_ndim(weight, 1, 2)
    if data.ndim < 1:
        check_ndim(data, 0, (1, 2, 3, 4))
    check_dim(weight.shape[1], data.shape[-1], 1, "reduction dim", weight)
    if attrs.get("units") is not None:
        check_dim(weight.shape[0], int(attrs.units), 1, "units", weight)
    return TensorType([*data.shape[:-1], weight.shape[0]], attrs.get("out_dtype") or data.dtype)


def _dense_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    out = np.matmul(xs[0], xs[1].T)
    return out.astype(attrs.get("out_dtype") or xs[0].dtype, copy=False)


define_op("nn.dense", ("data", "weight"), _dense_rel, OUT_ELEMWISE_FUSABLE, _dense_compute,
          attrs_type_key="relay.attrs.DenseAttrs")


def dense(data: Expr, weight: Expr, units: int | None = None, out_dtype: str = "") -> Call:
    """`data @ weight.T` with weight (units, in) (TVM's relay.nn.dense)."""
    return make_call("nn.dense", (data, weight), {
        "units": None if units is None else int(units), "out_dtype": out_dtype},
        "relay.attrs.DenseAttrs")


def _matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    a, b = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_ndim(b, 1, 2)
    k_a = a.shape[-2] if attrs.get("transpose_a") else a.shape[-1]
    k_b, n = (b.shape[1], b.shape[0]) if attrs.get("transpose_b") else (b.shape[0], b.shape[1])
    check_dim(k_b, k_a, 1, "reduction dim", b)
    lead: tuple = ()
    if a.ndim >= 2:
        lead = (*a.shape[:-2], a.shape[-1] if attrs.get("transpose_a") else a.shape[-2])
    return TensorType([*lead, n], attrs.get("out_dtype") or a.dtype)


def _matmul_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    a, b = xs
    if attrs.get("transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transpose_b"):
        b = b.T
    return np.matmul(a, b).astype(attrs.get("out_dtype") or xs[0].dtype, copy=False)


define_op("nn.matmul", ("tensor_a", "tensor_b"), _matmul_rel, OUT_ELEMWISE_FUSABLE,
          _matmul_compute, attrs_type_key="relay.attrs.MatmulAttrs")


def matmul(tensor_a: Expr, tensor_b: Expr, units: int | None = None, out_dtype: str = "",
           transpose_a: bool = False, transpose_b: bool = False) -> Call:
    return make_call("nn.matmul", (tensor_a, tensor_b), {
        "units": None if units is None else int(units), "out_dtype": out_dtype,
        "transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)},
        "relay.attrs.MatmulAttrs")


def _batch_matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    x, y = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    check_ndim(x, 0, 3)
    check_ndim(y, 1, 3)
    m, kx = (x.shape[2], x.shape[1]) if attrs.get("transpose_a") else (x.shape[1], x.shape[2])
    n, ky = (y.shape[1], y.shape[2]) if attrs.get("transpose_b") else (y.shape[2], y.shape[1])
    check_dim(ky, kx, 1, "reduction dim", y)
    batch = broadcast_shapes(x.shape[:1], y.shape[:1], arg_types)
    return TensorType([batch[0], m, n], attrs.get("out_dtype") or x.dtype)


def _batch_matmul_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, y = xs
    if attrs.get("transpose_a"):
        x = np.swapaxes(x, 1, 2)
    if attrs.get("transpose_b"):
        y = np.swapaxes(y, 1, 2)
    return np.matmul(x, y).astype(attrs.get("out_dtype") or xs[0].dtype, copy=False)


define_op("nn.batch_matmul", ("tensor_a", "tensor_b"), _batch_matmul_rel, OUT_ELEMWISE_FUSABLE,
          _batch_matmul_compute, attrs_type_key="relay.attrs.BatchMatmulAttrs")


def batch_matmul(tensor_a: Expr, tensor_b: Expr, out_dtype: str = "", transpose_a: bool = False,
                 transpose_b: bool = True) -> Call:
    """Batched matmul; by default y is (batch, N, K) as in TVM (transpose_b=True)."""
    return make_call("nn.batch_matmul", (tensor_a, tensor_b), {
        "out_dtype": out_dtype, "transpose_a": bool(transpose_a),
        "transpose_b": bool(transpose_b)}, "relay.attrs.BatchMatmulAttrs")


def _bias_add_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 2)
    data, bias = tensor_arg(arg_types, 0), tensor_arg(arg_types, 1)
    axis = normalize_axis(int(attrs.axis), data.ndim, 0, data)
    check_ndim(bias, 1, 1)
    check_dim(bias.shape[0], data.shape[axis], 1, f"length (data axis {axis})", bias)
    return data


def _bias_add_compute(xs: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, bias = xs
    axis = int(attrs.axis) % data.ndim
    shape = [1] * data.ndim
    shape[axis] = bias.shape[0]
    return data + bias.reshape(shape)


define_op("nn.bias_add", ("data", "bias"), _bias_add_rel, BROADCAST, _bias_add_compute,
          attrs_type_key="relay.attrs.BiasAddAttrs")


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    return make_call("nn.bias_add", (data, bias), {"axis": int(axis)}, "relay.attrs.BiasAddAttrs")


def _batch_flatten_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    check_arity(arg_types, 1)
    data = tensor_arg(arg_types, 0)
    rest = product(data.shape[1:])
    return TensorType([data.shape[0] if data.ndim else 1, rest], data.dtype)


define_op("nn.batch_flatten", ("data",), _batch_flatten_rel, INJECTIVE,
          lambda xs, attrs: xs[0].reshape(xs[0].shape[0], -1))


def batch_flatten(data: Expr) -> Call:
    return make_call("nn.batch_flatten", (data,))


__all__ = ["batch_flatten", "batch_matmul", "bias_add", "dense", "matmul"]
