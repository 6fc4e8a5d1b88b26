"""FoldConstant keeps folded arrays without copying them (read-only views), except a small
view into a much bigger array, which is copied so the big base can be freed."""

from __future__ import annotations

import numpy as np

from engine import relay
from engine.ir import IRModule
from engine.relay.transform.fold_constant import _constant_array, fold_constant


def test_big_folded_view_is_kept_not_copied() -> None:
    weight = np.arange(256 * 512, dtype="float32").reshape(256, 512)
    const = relay.const(weight)
    folded = fold_constant(relay.transpose(const, axes=(1, 0)))
    assert isinstance(folded, relay.Constant)
    out = folded.data.numpy()
    assert np.array_equal(out, weight.T)
    assert np.shares_memory(out, const.data.numpy())  # a view of the weight, no copy
    assert not out.flags.writeable


def test_small_view_of_a_big_array_is_copied() -> None:
    big = np.zeros((1024, 1024), dtype="float32")
    small = big[:2, :2]
    kept = _constant_array(small)
    assert not np.shares_memory(kept, big) and np.array_equal(kept, small)
    assert np.shares_memory(_constant_array(big[:600]), big)  # most of the base: kept


def test_scalars_keep_rank_zero() -> None:
    assert _constant_array(np.float32(2.5)).shape == ()
    assert _constant_array(3.0).dtype == np.float64


def test_folded_module_still_evaluates() -> None:
    x = relay.var("x", shape=(2, 3))
    w = relay.const(np.ones((3, 2), dtype="float32"))
    body = relay.add(x, relay.transpose(w, axes=(1, 0)))
    mod = IRModule.from_expr(relay.Function([x], body))
    mod = relay.transform.InferType()(mod)
    mod = relay.transform.FoldConstant()(mod)
    add = mod["main"].body
    assert isinstance(add.args[1], relay.Constant)
    assert add.args[1].data.numpy().shape == (2, 3)
