"""Shape ops, slicing, gathering, reductions and layout_transform: types and values."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.relay.type_infer import infer_type

RNG = np.random.default_rng(1)


def shape_of(expr: relay.Expr) -> tuple:
    infer_type(expr)
    return expr.checked_type.shape


@pytest.mark.parametrize("src,newshape,want", [
    ((2, 3, 4), (6, 4), (6, 4)),
    ((2, 3, 4), (0, -1), (2, 12)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, 4), (2, 1, 3, 4)),
    ((1, 128, 768), (-1, 768), (128, 768)),
])
def test_reshape_special_values(src, newshape, want, run_expr) -> None:
    x = relay.var("x", shape=src)
    call = relay.reshape(x, newshape)
    assert shape_of(call) == want
    data = RNG.standard_normal(src).astype("float32")
    np.testing.assert_array_equal(run_expr(call, x=data), data.reshape(want))


def test_reverse_reshape_infers_from_the_right(run_expr) -> None:
    x = relay.var("x", shape=(10, 5, 4))
    call = relay.reverse_reshape(x, (-1, 0))
    assert shape_of(call) == (50, 4)
    assert run_expr(call, x=np.zeros((10, 5, 4), "float32")).shape == (50, 4)


def test_reshape_size_mismatch_is_clear() -> None:
    with pytest.raises(TypeInferenceError, match=r"reshape, argument 'data'.*12 elements"):
        infer_type(relay.reshape(relay.var("x", shape=(3, 4)), (5, 2)))


def test_transpose_negative_axes_and_default(run_expr) -> None:
    x = relay.var("x", shape=(2, 3, 4))
    data = RNG.standard_normal((2, 3, 4)).astype("float32")
    call = relay.transpose(x, (0, -1, 1))
    assert shape_of(call) == (2, 4, 3)
    np.testing.assert_array_equal(run_expr(call, x=data), data.transpose(0, 2, 1))
    assert shape_of(relay.transpose(x)) == (4, 3, 2)


def test_squeeze_expand_dims(run_expr) -> None:
    x = relay.var("x", shape=(1, 3, 1, 2))
    assert shape_of(relay.squeeze(x)) == (3, 2)
    assert shape_of(relay.squeeze(x, axis=[-2])) == (1, 3, 2)
    with pytest.raises(TypeInferenceError, match="squeeze.*size 3"):
        infer_type(relay.squeeze(x, axis=[1]))
    y = relay.var("y", shape=(3, 2))
    assert shape_of(relay.expand_dims(y, -1)) == (3, 2, 1)
    assert shape_of(relay.expand_dims(y, 0, num_newaxis=2)) == (1, 1, 3, 2)
    out = run_expr(relay.expand_dims(y, 1), y=np.zeros((3, 2), "float32"))
    assert out.shape == (3, 1, 2)


def test_concatenate_negative_axis(run_expr) -> None:
    a = relay.var("a", shape=(2, 3))
    b = relay.var("b", shape=(2, 5))
    call = relay.concatenate([a, b], axis=-1)
    assert shape_of(call) == (2, 8)
    da, db = np.ones((2, 3), "float32"), np.zeros((2, 5), "float32")
    np.testing.assert_array_equal(run_expr(call, a=da, b=db), np.concatenate([da, db], 1))
    with pytest.raises(TypeInferenceError, match="concatenate.*differ on axis 1"):
        infer_type(relay.concatenate([a, b], axis=0))


def test_split_sections_and_indices(run_expr) -> None:
    x = relay.var("x", shape=(2, 6))
    parts = relay.split(x, 3, axis=-1)
    tup = parts.astuple()
    infer_type(tup)
    assert [f.shape for f in tup.checked_type.fields] == [(2, 2)] * 3
    data = np.arange(12, dtype="float32").reshape(2, 6)
    out = run_expr(relay.Tuple(list(parts)), x=data)
    np.testing.assert_array_equal(out[1], data[:, 2:4])
    uneven = relay.split(x, (1, 4), axis=1).astuple()
    infer_type(uneven)
    assert [f.shape for f in uneven.checked_type.fields] == [(2, 1), (2, 3), (2, 2)]
    with pytest.raises(TypeInferenceError, match="split.*divisible by 4"):
        infer_type(relay.split(x, 4, axis=1).astuple())


@pytest.mark.parametrize("begin,end,strides,axes", [
    ((0, 1), (2, 3), None, None),
    ((-1,), (-4,), (-1,), None),
    ((1,), (100,), (2,), (1,)),
    ((0, 0, 1), (1, 3, -1), (1, 1, 1), None),
])
def test_strided_slice_matches_python_slicing(begin, end, strides, axes, run_expr) -> None:
    x = relay.var("x", shape=(2, 3, 5))
    data = RNG.standard_normal((2, 3, 5)).astype("float32")
    call = relay.strided_slice(x, begin, end, strides, axes)
    ax = axes or range(len(begin))
    st = strides or [1] * len(begin)
    idx = [slice(None)] * 3
    for a, b, e, s in zip(ax, begin, end, st):
        idx[a] = slice(b, e, s)
    want = data[tuple(idx)]
    assert shape_of(call) == want.shape
    np.testing.assert_array_equal(run_expr(call, x=data), want)


def test_take_gather_where(run_expr) -> None:
    table = relay.var("t", shape=(5, 4))
    ids = relay.var("i", shape=(2, 3), dtype="int32")
    call = relay.take(table, ids, axis=0)
    assert shape_of(call) == (2, 3, 4)
    td = RNG.standard_normal((5, 4)).astype("float32")
    idd = np.array([[0, 4, 2], [1, 1, 3]], "int32")
    np.testing.assert_array_equal(run_expr(call, t=td, i=idd), td[idd])
    assert shape_of(relay.take(table, ids, axis=-1)) == (5, 2, 3)
    assert shape_of(relay.take(table, ids)) == (2, 3)
    with pytest.raises(TypeInferenceError, match="take, argument 'indices'"):
        infer_type(relay.take(table, relay.var("f", shape=(2,)), axis=0))
    gi = relay.var("g", shape=(5, 2), dtype="int32")
    gidx = RNG.integers(0, 4, (5, 2)).astype("int32")
    np.testing.assert_array_equal(run_expr(relay.gather(table, -1, gi), t=td, g=gidx),
                                  np.take_along_axis(td, gidx, 1))
    c = relay.var("c", shape=(5, 1), dtype="bool")
    w = relay.where(c, table, relay.const(0.0))
    assert shape_of(w) == (5, 4)
    cd = np.array([[True], [False], [True], [False], [True]])
    np.testing.assert_array_equal(run_expr(w, c=cd, t=td), np.where(cd, td, 0))


def test_tile_one_hot_shape_of(run_expr) -> None:
    x = relay.var("x", shape=(2, 3))
    assert shape_of(relay.tile(x, (2, 1, 2))) == (2, 2, 6)
    np.testing.assert_array_equal(run_expr(relay.tile(x, (2,)), x=np.ones((2, 3), "float32")),
                                  np.ones((2, 6)))
    i = relay.var("i", shape=(3,), dtype="int32")
    oh = relay.one_hot(i, relay.const(1.0), relay.const(0.0), 4, -1, "float32")
    assert shape_of(oh) == (3, 4)
    np.testing.assert_array_equal(run_expr(oh, i=np.array([0, 3, 1], "int32")),
                                  np.eye(4)[[0, 3, 1]])
    s = relay.shape_of(x)
    assert shape_of(s) == (2,)
    np.testing.assert_array_equal(run_expr(s, x=np.ones((2, 3), "float32")), [2, 3])


@pytest.mark.parametrize("op,axis,keepdims,exclude", [
    ("sum", None, False, False), ("mean", (-1,), True, False), ("max", (0, 2), False, False),
    ("min", (1,), False, True), ("prod", -2, True, False),
])
def test_reductions(op, axis, keepdims, exclude, run_expr) -> None:
    x = relay.var("x", shape=(2, 3, 4))
    data = RNG.uniform(0.5, 1.5, (2, 3, 4)).astype("float32")
    call = getattr(relay, op)(x, axis, keepdims, exclude)
    axes = None if axis is None else tuple(np.atleast_1d(axis) % 3)
    if exclude:
        axes = tuple(a for a in range(3) if a not in axes)
    want = getattr(np, op)(data, axis=axes, keepdims=keepdims)
    assert shape_of(call) == want.shape
    np.testing.assert_allclose(run_expr(call, x=data), want, rtol=1e-6)


def test_argmax_variance(run_expr) -> None:
    x = relay.var("x", shape=(3, 4))
    data = RNG.standard_normal((3, 4)).astype("float32")
    am = relay.argmax(x, axis=-1)
    infer_type(am)
    assert am.checked_type == relay.TensorType((3,), "int32")
    np.testing.assert_array_equal(run_expr(am, x=data), data.argmax(-1))
    var = relay.variance(x, axis=[1], keepdims=True)
    assert shape_of(var) == (3, 1)
    np.testing.assert_allclose(run_expr(var, x=data), data.var(1, keepdims=True), rtol=1e-5)
    with pytest.raises(TypeInferenceError, match="axis 2 is out of range"):
        infer_type(relay.sum(x, axis=2))


def test_layout_transform_blocked_round_trip(run_expr) -> None:
    x = relay.var("x", shape=(1, 32, 5, 6))
    data = RNG.standard_normal((1, 32, 5, 6)).astype("float32")
    blocked = relay.layout_transform(x, "NCHW", "NCHW16c")
    assert shape_of(blocked) == (1, 2, 5, 6, 16)
    out = run_expr(blocked, x=data)
    np.testing.assert_array_equal(out, data.reshape(1, 2, 16, 5, 6).transpose(0, 1, 3, 4, 2))
    back = relay.layout_transform(relay.layout_transform(blocked, "NCHW16c", "NHWC"), "NHWC",
                                  "NCHW")
    np.testing.assert_array_equal(run_expr(back, x=data), data)
    nhwc = relay.layout_transform(x, "NCHW", "NHWC")
    assert shape_of(nhwc) == (1, 5, 6, 32)
    with pytest.raises(TypeInferenceError, match="layout_transform"):
        infer_type(relay.layout_transform(x, "NCHW", "NCHW5c"))
