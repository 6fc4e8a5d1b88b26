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
