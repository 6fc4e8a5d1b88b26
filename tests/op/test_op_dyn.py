"""relay.dyn reductions: axes as a run-time tensor, `?` dims in the type, values from numpy."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.ir.type import AnyDim
from engine.relay.interpreter import evaluate
from engine.relay.type_infer import infer_type

ANY = AnyDim()


@pytest.mark.parametrize("keepdims,count,want", [
    (True, 1, (ANY, 1, ANY)),
    (False, 1, (ANY, ANY)),
    (False, 2, (ANY,)),
    (True, 0, (1, 1, 1)),
    (False, 0, ()),
])
def test_dyn_reduce_type_carries_unknown_dims(keepdims, count, want) -> None:
    x = relay.var("x", shape=(2, 1, 4))
    axes = relay.var("axes", shape=(count,), dtype="int64")
    call = relay.dyn.sum(x, axes, keepdims=keepdims)
    infer_type(call)
    assert tuple(call.checked_type.shape) == want


def test_dyn_reduce_noop_with_empty_axes_is_the_input_type() -> None:
    x = relay.var("x", shape=(2, 3))
    call = relay.dyn.max(x, relay.var("axes", shape=(0,), dtype="int64"),
                         noop_with_empty_axes=True)
    infer_type(call)
    assert tuple(call.checked_type.shape) == (2, 3)


def test_dyn_reduce_needs_a_static_number_of_axes() -> None:
    x = relay.var("x", shape=(2, 3))
    call = relay.dyn.mean(x, relay.var("axes", shape=(ANY,), dtype="int64"))
    with pytest.raises(TypeInferenceError, match="static length"):
        infer_type(call)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
def test_dyn_reduce_values(name) -> None:
    data = np.arange(24, dtype="float32").reshape(2, 3, 4) / 7
    x = relay.var("x", shape=data.shape)
    axes = relay.var("axes", shape=(2,), dtype="int64")
    f = relay.Function([x, axes], getattr(relay.dyn, name)(x, axes, keepdims=False))
    got = evaluate(f, {"x": data, "axes": np.array([0, -1], "int64")})
    want = getattr(np, name)(data, axis=(0, 2))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_dyn_max_of_an_empty_set_is_minus_infinity() -> None:
    x = relay.var("x", shape=(2, 0))
    axes = relay.var("axes", shape=(1,), dtype="int64")
    f = relay.Function([x, axes], relay.dyn.max(x, axes, keepdims=False))
    got = evaluate(f, {"x": np.zeros((2, 0), "float32"), "axes": np.array([1], "int64")})
    np.testing.assert_array_equal(got, np.full(2, -np.inf, "float32"))


# --- shape-like operands: the rank is static, the dims are `?` -------------------------------
def _typed(call):
    infer_type(call)
    return call.checked_type


DATA = np.arange(24, dtype="float32").reshape(2, 3, 4)


@pytest.mark.parametrize("make,rank", [
    (lambda x: relay.dyn.reshape(x, relay.var("s", shape=(2,), dtype="int64")), 2),
    (lambda x: relay.dyn.squeeze(x, relay.var("a", shape=(1,), dtype="int64")), 2),
    (lambda x: relay.dyn.expand_dims(x, relay.var("a", shape=(2,), dtype="int64")), 5),
    (lambda x: relay.dyn.broadcast_to(x, relay.var("s", shape=(4,), dtype="int64")), 4),
    (lambda x: relay.dyn.tile(x, relay.var("r", shape=(2,), dtype="int64")), 3),
    (lambda x: relay.dyn.nn.pad(x, relay.var("p", shape=(3, 2), dtype="int64"),
                                relay.const(0.0)), 3),
    (lambda x: relay.dyn.full(relay.const(1.0), relay.var("s", shape=(2,), dtype="int64")), 2),
])
def test_dyn_shape_ops_keep_the_rank_and_not_the_dims(make, rank) -> None:
    ty = _typed(make(relay.var("x", shape=(2, 3, 4))))
    assert tuple(ty.shape) == (ANY,) * rank


@pytest.mark.parametrize("make,feeds,want", [
    (lambda x, v: relay.dyn.reshape(x, v), {"v": np.array([0, -1], "int64")},
     DATA.reshape(2, 12)),
    (lambda x, v: relay.dyn.squeeze(relay.expand_dims(x, 0), v), {"v": np.array([0], "int64")},
     DATA),
    (lambda x, v: relay.dyn.expand_dims(x, v), {"v": np.array([-1, 0], "int64")},
     DATA[None, ..., None]),
    (lambda x, v: relay.dyn.tile(x, v), {"v": np.array([1, 2, 1], "int64")},
     np.tile(DATA, (1, 2, 1))),
    (lambda x, v: relay.dyn.broadcast_to(x, v), {"v": np.array([2, 2, 3, 4], "int64")},
     np.broadcast_to(DATA, (2, 2, 3, 4))),
    (lambda x, v: relay.dyn.cumsum(x, v, reverse=True), {"v": np.array(1, "int64")},
     np.flip(np.cumsum(np.flip(DATA, 1), 1), 1)),
    (lambda x, v: relay.dyn.trilu(x, v, upper=False), {"v": np.array(-1, "int64")},
     np.tril(DATA, -1)),
    (lambda x, v: relay.dyn.nn.pad(x, v, relay.const(9.0)),
     {"v": np.array([[0, 0], [1, -1], [0, 2]], "int64")},
     np.pad(DATA[:, :2], [(0, 0), (1, 0), (0, 2)], constant_values=9.0)),
])
def test_dyn_shape_op_values(make, feeds, want) -> None:
    x = relay.var("x", shape=DATA.shape)
    v = relay.var("v", shape=feeds["v"].shape, dtype="int64")
    got = evaluate(relay.Function([x, v], make(x, v)), {"x": DATA, **feeds})
    np.testing.assert_array_equal(got, want)


def test_dyn_strided_slice_clamps_as_python_slices() -> None:
    x = relay.var("x", shape=DATA.shape)
    b, e, s, a = (relay.var(n, shape=(2,), dtype="int64") for n in "best")
    call = relay.dyn.strided_slice(x, b, e, s, a)
    assert tuple(_typed(call).shape) == (ANY,) * 3
    feeds = {"x": DATA, "b": np.array([-1, 0]), "e": np.array([-10**9, 10**9]),
             "s": np.array([-1, 2]), "t": np.array([2, 0])}
    got = evaluate(relay.Function([x, b, e, s, a], call), feeds)
    np.testing.assert_array_equal(got, DATA[0:10**9:2, :, -1:-10**9:-1])


def test_dyn_topk_and_one_hot_put_a_question_mark_on_their_axis() -> None:
    x = relay.var("x", shape=(3, 4))
    k = relay.var("k", shape=(1,), dtype="int64")
    out = relay.dyn.topk(x, k, axis=1, dtype="int64")
    infer_type(out.astuple())
    assert tuple(out.astuple().checked_type.fields[0].shape) == (3, ANY)
    data = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [0, 0, 7, 1]], "float32")
    values = evaluate(relay.Function([x, k], out[0]), {"x": data, "k": np.array([2])})
    np.testing.assert_array_equal(values, -np.sort(-data, axis=1)[:, :2])
    idx = relay.var("i", shape=(3,), dtype="int64")
    depth = relay.var("d", shape=(), dtype="int64")
    hot = relay.dyn.one_hot(idx, relay.const(1.0), relay.const(0.0), depth, axis=0,
                            dtype="float32")
    assert tuple(_typed(hot).shape) == (ANY, 3)
    got = evaluate(relay.Function([idx, depth], hot), {"i": np.array([0, 2, 1]),
                                                       "d": np.array(4)})
    np.testing.assert_array_equal(got, np.eye(4, dtype="float32")[[0, 2, 1]].T)


def test_dyn_ops_are_opaque_to_fusion() -> None:
    from engine.ir.op import Op, list_ops
    from engine.relay.op.op import OPAQUE

    names = [n for n in list_ops() if n.startswith("dyn.")]
    assert len(names) >= 20
    assert all(Op.get(n).get_attr("TOpPattern") == OPAQUE for n in names)
