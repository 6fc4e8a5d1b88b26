"""The 1-D / 3-D conv and pool ops, arange with expression bounds, gather_nd with batch dims,
cumsum and topk: type relations and numpy results against onnxruntime (one-node graphs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper
from zoo_helpers import ort_outputs

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.ir.expr import Constant
from engine.ir.module import IRModule
from engine.relay.interpreter import evaluate
from engine.relay.transform import FoldConstant, InferType
from engine.relay.type_infer import infer_type

RNG = np.random.default_rng(12)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def ort_node(op: str, inputs: dict[str, np.ndarray], opset: int = 13, n_out: int = 1,
             **attrs: Any) -> list[np.ndarray]:
    node = helper.make_node(op, list(inputs), [f"y{i}" for i in range(n_out)], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(f"y{i}") for i in range(n_out)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return ort_outputs(model, inputs)


def typed(expr: relay.Expr) -> relay.Type:
    infer_type(expr)
    return expr.checked_type


def variables(**arrays: np.ndarray) -> dict[str, relay.Var]:
    return {k: relay.var(k, shape=v.shape, dtype=str(v.dtype)) for k, v in arrays.items()}


def check(call: relay.Expr, want: np.ndarray, **arrays: np.ndarray) -> None:
    assert typed(call) == relay.TensorType(want.shape, str(want.dtype))
    np.testing.assert_allclose(evaluate(call, arrays), want, rtol=1e-4, atol=1e-4)


CONV1D = [  # (cin, cout, k, stride, pad(l, r), dilation, groups)
    (3, 8, 3, 1, (1, 1), 1, 1), (4, 6, 5, 2, (0, 2), 1, 2), (8, 8, 3, 1, (2, 2), 2, 8),
    (6, 4, 1, 3, (0, 0), 1, 1),
]


@pytest.mark.parametrize("cin,cout,k,stride,pad,dil,groups", CONV1D)
def test_conv1d_matches_ort(cin, cout, k, stride, pad, dil, groups) -> None:
    x, w = rand(2, cin, 17), rand(cout, cin // groups, k)
    v = variables(x=x, w=w)
    call = relay.nn.conv1d(v["x"], v["w"], strides=stride, padding=pad, dilation=dil,
                           groups=groups, channels=cout, kernel_size=k)
    want = ort_node("Conv", {"x": x, "w": w}, strides=[stride], pads=list(pad),
                    dilations=[dil], group=groups)[0]
    check(call, want, x=x, w=w)


@pytest.mark.parametrize("stride,pad,groups", [(1, 1, 1), (2, (0, 1, 1, 1, 0, 0), 1),
                                               ((1, 2, 2), 1, 4)])
def test_conv3d_matches_ort(stride, pad, groups) -> None:
    x, w = rand(1, 4, 5, 7, 6), rand(8, 4 // groups, 3, 3, 2)
    v = variables(x=x, w=w)
    call = relay.nn.conv3d(v["x"], v["w"], strides=stride, padding=pad, groups=groups)
    pads = list(call.attrs.padding)
    want = ort_node("Conv", {"x": x, "w": w}, strides=list(call.attrs.strides), pads=pads,
                    group=groups)[0]
    check(call, want, x=x, w=w)


def test_conv1d_and_conv3d_channels_last_layouts_agree() -> None:
    x, w = rand(1, 4, 11), rand(6, 4, 3)
    ref = evaluate(relay.nn.conv1d(relay.const(x), relay.const(w), padding=1), {})
    nwc = relay.nn.conv1d(relay.const(x.transpose(0, 2, 1)), relay.const(w.transpose(2, 1, 0)),
                          padding=1, data_layout="NWC", kernel_layout="WIO")
    assert typed(nwc) == relay.TensorType((1, 11, 6), "float32")
    np.testing.assert_allclose(evaluate(nwc, {}), ref.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    x3, w3 = rand(1, 3, 4, 5, 5), rand(2, 3, 3, 3, 3)
    ref3 = evaluate(relay.nn.conv3d(relay.const(x3), relay.const(w3), padding=1), {})
    ndhwc = relay.nn.conv3d(relay.const(x3.transpose(0, 2, 3, 4, 1)),
                            relay.const(w3.transpose(2, 3, 4, 1, 0)), padding=1,
                            data_layout="NDHWC", kernel_layout="DHWIO")
    np.testing.assert_allclose(evaluate(ndhwc, {}), ref3.transpose(0, 2, 3, 4, 1), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("nd,stride,pad,out_pad,groups", [
    (1, 2, (1, 0), 1, 1), (1, 3, (0, 0), 0, 2), (3, 2, 0, 0, 1), (3, (1, 2, 2), 1, (0, 1, 1), 1)])
def test_conv_transpose_nd_matches_ort(nd, stride, pad, out_pad, groups) -> None:
    spatial = (9,) if nd == 1 else (3, 4, 4)
    x, w = rand(1, 4, *spatial), rand(4, 6 // groups, *([3] * nd))
    v = variables(x=x, w=w)
    fn = relay.nn.conv1d_transpose if nd == 1 else relay.nn.conv3d_transpose
    call = fn(v["x"], v["w"], strides=stride, padding=pad, output_padding=out_pad,
              groups=groups)
    want = ort_node("ConvTranspose", {"x": x, "w": w}, strides=list(call.attrs.strides),
                    pads=list(call.attrs.padding), group=groups,
                    output_padding=list(call.attrs.output_padding))[0]
    check(call, want, x=x, w=w)


POOLS = [  # (nd, kernel, stride, pads, ceil_mode, count_include_pad)
    (1, [3], [2], [1, 1], 0, 0), (1, [4], [4], [0, 0], 0, 0), (1, [3], [2], [0, 0], 1, 0),
    (1, [3], [1], [1, 1], 0, 1), (3, [2, 2, 2], [2, 2, 2], [0] * 6, 0, 0),
    (3, [1, 3, 3], [1, 2, 2], [0, 1, 1, 0, 1, 1], 0, 1),
    (3, [3, 3, 3], [2, 2, 2], [0] * 6, 1, 0),
    (1, [3], [3], [0, 2], 1, 1),  # ceil_mode: the window that would start in the pad is dropped
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("nd,kernel,stride,pads,ceil,include", POOLS)
def test_pool_nd_matches_ort(kind, nd, kernel, stride, pads, ceil, include) -> None:
    x = rand(2, 3, 12) if nd == 1 else rand(1, 2, 6, 9, 8)
    fn = getattr(relay.nn, f"{kind}_pool{nd}d")
    extra = {"count_include_pad": bool(include)} if kind == "avg" else {}
    call = fn(relay.var("x", shape=x.shape), pool_size=kernel, strides=stride, padding=pads,
              ceil_mode=bool(ceil), **extra)
    attrs = {"kernel_shape": kernel, "strides": stride, "pads": pads, "ceil_mode": ceil}
    if kind == "avg":
        attrs["count_include_pad"] = include
    want = ort_node("MaxPool" if kind == "max" else "AveragePool", {"x": x}, **attrs)[0]
    check(call, want, x=x)


def test_pool_nd_channels_last_and_adaptive() -> None:
    x = rand(1, 3, 4, 6, 6)
    ref = evaluate(relay.nn.max_pool3d(relay.const(x), pool_size=2, strides=2), {})
    cl = relay.nn.max_pool3d(relay.const(x.transpose(0, 2, 3, 4, 1)), pool_size=2, strides=2,
                             layout="NDHWC")
    np.testing.assert_allclose(evaluate(cl, {}), ref.transpose(0, 2, 3, 4, 1))
    ada = relay.nn.adaptive_avg_pool3d(relay.const(x), output_size=(1, 2, 3))
    assert typed(ada) == relay.TensorType((1, 3, 1, 2, 3), "float32")
    want = x.reshape(1, 3, 1, 4, 2, 3, 3, 2).mean(axis=(3, 5, 7))
    np.testing.assert_allclose(evaluate(ada, {}), want, rtol=1e-5)
    y = rand(2, 4, 10)
    ada1 = relay.nn.adaptive_max_pool1d(relay.const(y), output_size=3)
    bins = [slice(0, 4), slice(3, 7), slice(6, 10)]
    np.testing.assert_allclose(evaluate(ada1, {}), np.stack([y[..., b].max(-1) for b in bins], -1))


def test_conv_nd_type_errors_name_the_argument() -> None:
    x, w = relay.var("x", shape=(1, 4, 9)), relay.var("w", shape=(8, 3, 3))
    with pytest.raises(TypeInferenceError, match=r"nn.conv1d, argument 'weight'.*input channels"):
        typed(relay.nn.conv1d(x, w))
    with pytest.raises(TypeInferenceError, match=r"nn.max_pool3d, argument 'data'"):
        typed(relay.nn.max_pool3d(relay.var("v", shape=(1, 2, 3, 4)), pool_size=2))
    with pytest.raises(TypeInferenceError, match="kernel larger than padded input"):
        typed(relay.nn.conv3d(relay.var("a", shape=(1, 1, 2, 8, 8)),
                              relay.var("b", shape=(1, 1, 3, 3, 3))))


def test_arange_takes_expressions_and_folds() -> None:
    n = relay.var("n", shape=(), dtype="int64")
    dynamic = relay.arange(relay.const(2, "int64"), n, relay.const(3, "int64"), dtype="int64")
    assert [str(d) for d in typed(dynamic).shape] == ["?"]
    np.testing.assert_array_equal(evaluate(dynamic, {"n": np.array(11)}), [2, 5, 8])
    static = relay.arange(relay.const(1.0), relay.const(2.0), relay.const(0.25))
    assert typed(static) == relay.TensorType((4,), "float32")
    mod = FoldConstant()(InferType()(IRModule.from_expr(relay.add(static, relay.const(1.0)))))
    body = mod["main"].body
    assert isinstance(body, Constant)
    np.testing.assert_allclose(body.data.numpy(), [2.0, 2.25, 2.5, 2.75])
    assert typed(relay.arange(5, dtype="int32")) == relay.TensorType((5,), "int32")


@pytest.mark.parametrize("batch_dims", [0, 1, 2])
def test_gather_nd_batch_dims_matches_ort(batch_dims) -> None:
    data = rand(2, 3, 4, 5)
    grid = data.shape[:batch_dims]
    depth = 2
    idx = np.stack([RNG.integers(0, data.shape[batch_dims + i], size=(*grid, 3))
                    for i in range(depth)], -1).astype("int64")
    want = ort_node("GatherND", {"d": data, "i": idx}, batch_dims=batch_dims)[0]
    moved = np.moveaxis(idx, -1, 0)
    call = relay.gather_nd(relay.var("d", shape=data.shape),
                           relay.var("i", shape=moved.shape, dtype="int64"),
                           batch_dims=batch_dims)
    assert typed(call) == relay.TensorType(want.shape, "float32")
    np.testing.assert_array_equal(evaluate(call, {"d": data, "i": moved}), want)


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_matches_ort(exclusive, reverse) -> None:
    x = rand(3, 5)
    want = ort_node("CumSum", {"x": x, "axis": np.array(1, "int64")}, exclusive=exclusive,
                    reverse=reverse)[0]
    v = relay.var("x", shape=x.shape)
    data = relay.reverse(v, axis=1) if reverse else v
    out = relay.cumsum(data, axis=1, exclusive=bool(exclusive))
    out = relay.reverse(out, axis=1) if reverse else out
    check(out, want, x=x)
    flat = relay.cumprod(relay.const(np.arange(1, 5, dtype="int64").reshape(2, 2)))
    assert typed(flat) == relay.TensorType((4,), "int64")
    np.testing.assert_array_equal(evaluate(flat, {}), [1, 2, 6, 24])


@pytest.mark.parametrize("largest,axis", [(1, -1), (0, 0)])
def test_topk_matches_ort(largest, axis) -> None:
    x = np.round(rand(4, 6), 1)
    values, indices = ort_node("TopK", {"x": x, "k": np.array([3], "int64")}, n_out=2,
                               axis=axis, largest=largest)
    out = relay.topk(relay.var("x", shape=x.shape), k=3, axis=axis, is_ascend=not largest,
                     dtype="int64")
    tup = relay.Tuple([out[0], out[1]])
    got = evaluate(tup, {"x": x})
    np.testing.assert_array_equal(got[0], values)
    np.testing.assert_array_equal(got[1], indices)
    only = relay.topk(relay.var("y", shape=(2, 5)), k=2, ret_type="indices")
    assert typed(only) == relay.TensorType((2, 2), "int32")
