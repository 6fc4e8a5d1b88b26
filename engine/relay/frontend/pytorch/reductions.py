"""Reductions, scans, softmax, sorting and top-k."""

from __future__ import annotations

from typing import Any

import engine.relay as relay
from engine.ir.expr import Expr
from engine.relay.frontend.pytorch.ops import (
    AtenCall,
    axis_of,
    cast,
    const,
    converter,
    dims_of,
    operand,
    tensor,
)

_REDUCE = {"sum": relay.sum, "mean": relay.mean, "amax": relay.max, "amin": relay.min,
           "prod": relay.prod, "any": relay.any, "all": relay.all, "max": relay.max,
           "min": relay.min, "nansum": relay.sum}


_WHOLE = ("sum", "mean", "prod", "any", "all", "max", "min", "nansum")


def _whole(call: AtenCall) -> bool:
    """`sum.default` and friends: the whole tensor, with no dim or keepdim argument."""
    return call.target.endswith(".default") and call.target.split(".")[1] in _WHOLE


@converter("aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim", "aten.mean.default",
           "aten.amax.default", "aten.amin.default", "aten.prod.default", "aten.prod.dim_int",
           "aten.any.default", "aten.any.dim", "aten.any.dims", "aten.all.default",
           "aten.all.dim", "aten.all.dims", "aten.max.default", "aten.min.default",
           "aten.nansum.default")
def reduce(call: AtenCall) -> Expr:
    op = call.target.split(".")[1]
    dtype = call.out_dtype
    x = operand(call, 0, "bool" if op in ("any", "all") else dtype)
    if op == "nansum":
        x = relay.where(relay.isnan(x), relay.zeros_like(x), x)
    whole = _whole(call) or not call.shape(0)
    keepdim = False if _whole(call) else bool(call.arg(2, "keepdim", False))
    dims = None if whole else dims_of(call.arg(1, "dim"), len(call.shape(0)))
    out = _REDUCE[op](x, axis=dims, keepdims=keepdim)
    return cast(out, "bool" if op in ("any", "all") else dtype, dtype)


def _arg_reduce(call: AtenCall, fn: Any, dim: Any, keepdim: bool) -> Expr:
    x = tensor(call, 0)
    rank = len(call.shape(0))
    if dim is None:
        flat = relay.reshape(x, newshape=[-1])
        out = fn(flat, axis=[0], keepdims=False)
        if keepdim:
            out = relay.reshape(out, newshape=[1] * rank)
    else:
        out = fn(x, axis=[axis_of(dim, rank)], keepdims=keepdim)
    return cast(out, "int32", "int64")


@converter("aten.argmax.default", "aten.argmin.default")
def arg_reduce(call: AtenCall) -> Expr:
    fn = relay.argmax if "argmax" in call.target else relay.argmin
    return _arg_reduce(call, fn, call.arg(1, "dim"), bool(call.arg(2, "keepdim", False)))


@converter("aten.max.dim", "aten.min.dim")
def max_dim(call: AtenCall) -> list[Expr]:
    is_max = call.target.startswith("aten.max")
    dim, keepdim = call.args[1], bool(call.arg(2, "keepdim", False))
    rank = len(call.shape(0))
    values = (relay.max if is_max else relay.min)(tensor(call, 0), axis=[axis_of(dim, rank)],
                                                   keepdims=keepdim)
    index = _arg_reduce(call, relay.argmax if is_max else relay.argmin, dim, keepdim)
    return [values, index]


def _correction(call: AtenCall) -> float:
    if call.target.endswith(".correction"):
        value = call.kwargs.get("correction")
        return 1.0 if value is None else float(value)
    unbiased = call.arg(2, "unbiased", True) if call.target.endswith(".dim") else call.arg(
        1, "unbiased", True)
    return 1.0 if unbiased else 0.0


def _variance(call: AtenCall) -> tuple[Expr, Expr]:
    """(variance, mean) over the call's dims with torch's correction."""
    x = operand(call, 0, call.out_dtype)
    shape = call.shape(0)
    dims = dims_of(call.arg(1, "dim"), len(shape)) if not call.target.endswith(
        ".default") else None
    keepdim = bool(call.kwargs.get("keepdim", call.args[3] if len(call.args) > 3 else False))
    counted = [shape[d] for d in (dims if dims is not None else range(len(shape)))]
    count = 1
    for n in counted:
        count *= n
    mean = relay.mean(x, axis=dims, keepdims=True)
    var = relay.variance(x, axis=dims, keepdims=keepdim, with_mean=mean)
    correction = _correction(call)
    if correction:
        var = relay.multiply(var, const(count / max(count - correction, 0), call.out_dtype))
    return var, mean if keepdim else relay.squeeze(mean, axis=dims) if dims else relay.reshape(
        mean, newshape=[])


@converter("aten.var.correction", "aten.var.dim", "aten.var.default")
def var(call: AtenCall) -> Expr:
    return _variance(call)[0]


@converter("aten.std.correction", "aten.std.dim", "aten.std.default")
def std(call: AtenCall) -> Expr:
    return relay.sqrt(_variance(call)[0])


@converter("aten.var_mean.correction", "aten.var_mean.dim")
def var_mean(call: AtenCall) -> list[Expr]:
    return list(_variance(call))


@converter("aten.logsumexp.default")
def logsumexp(call: AtenCall) -> Expr:
    x = operand(call, 0, call.out_dtype)
    dims = dims_of(call.args[1], len(call.shape(0)))
    keepdim = bool(call.arg(2, "keepdim", False))
    peak = relay.max(x, axis=dims, keepdims=True)
    total = relay.sum(relay.exp(relay.subtract(x, peak)), axis=dims, keepdims=True)
    out = relay.add(relay.log(total), peak)
    return out if keepdim else relay.squeeze(out, axis=dims)


@converter("aten.linalg_vector_norm.default", "aten.norm.ScalarOpt_dim")
def vector_norm(call: AtenCall) -> Expr:
    x = operand(call, 0, call.out_dtype)
    order = float(call.arg(1, "ord", 2) or 2)
    dims = dims_of(call.arg(2, "dim"), len(call.shape(0)))
    keepdim = bool(call.arg(3, "keepdim", False))
    magnitude = relay.abs(x)
    if order == float("inf"):
        return relay.max(magnitude, axis=dims, keepdims=keepdim)
    if order == 1:
        return relay.sum(magnitude, axis=dims, keepdims=keepdim)
    powered = relay.sum(relay.power(magnitude, const(order, call.out_dtype)), axis=dims,
                        keepdims=keepdim)
    return relay.power(powered, const(1 / order, call.out_dtype))


# --- scans, softmax ----------------------------------------------------------------------------
@converter("aten.cumsum.default", "aten.cumprod.default")
def scan(call: AtenCall) -> Expr:
    fn = relay.cumsum if "cumsum" in call.target else relay.cumprod
    rank = max(len(call.shape(0)), 1)
    x = operand(call, 0, call.out_dtype)
    return fn(x, axis=axis_of(call.args[1], rank))


@converter("aten.softmax.int", "aten._softmax.default", "aten.log_softmax.int",
           "aten._log_softmax.default", "aten._safe_softmax.default")
def softmax(call: AtenCall) -> Expr:
    x = operand(call, 0, call.out_dtype)
    axis = axis_of(call.args[1], max(len(call.shape(0)), 1))
    if "log_softmax" in call.target:
        return relay.nn.log_softmax(x, axis=axis)
    out = relay.nn.softmax(x, axis=axis)
    if "_safe_softmax" in call.target:  # rows that are all -inf give 0, not NaN
        out = relay.where(relay.isnan(out), relay.zeros_like(out), out)
    return out


# --- sorting -------------------------------------------------------------------------------
@converter("aten.topk.default")
def topk(call: AtenCall) -> list[Expr]:
    rank = len(call.shape(0))
    out = relay.topk(tensor(call, 0), k=int(call.args[1]),
                     axis=axis_of(call.arg(2, "dim", -1), rank),
                     is_ascend=not bool(call.arg(3, "largest", True)), dtype="int64")
    return [out[0], out[1]]


def _sort(call: AtenCall, dim: Any, descending: bool) -> list[Expr]:
    rank = len(call.shape(0))
    axis = axis_of(dim, rank)
    out = relay.topk(tensor(call, 0), k=call.shape(0)[axis] if rank else 1, axis=axis,
                     is_ascend=not descending, dtype="int64")
    return [out[0], out[1]]


@converter("aten.sort.default", "aten.sort.stable")
def sort(call: AtenCall) -> list[Expr]:
    if call.target.endswith("stable"):
        return _sort(call, call.kwargs.get("dim", -1), bool(call.kwargs.get("descending")))
    return _sort(call, call.arg(1, "dim", -1), bool(call.arg(2, "descending", False)))


@converter("aten.argsort.default", "aten.argsort.stable")
def argsort(call: AtenCall) -> Expr:
    if call.target.endswith("stable"):
        return _sort(call, call.kwargs.get("dim", -1), bool(call.kwargs.get("descending")))[1]
    return _sort(call, call.arg(1, "dim", -1), bool(call.arg(2, "descending", False)))[1]
