"""nn.nll_loss against onnxruntime's NegativeLogLikelihoodLoss."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.relay.type_infer import infer_type

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_nll_loss_matches_ort(reduction, ignore_index, ort_run, run_expr):
    x = RNG.standard_normal((3, 5, 2)).astype("float32")
    t = RNG.integers(0, 5, (3, 2)).astype("int64")
    w = RNG.random(5).astype("float32")
    call = relay.nn.nll_loss(relay.var("x", shape=x.shape), relay.var("t", shape=t.shape,
                                                                      dtype="int64"),
                             relay.var("w", shape=w.shape), reduction, ignore_index)
    want = ort_run("NegativeLogLikelihoodLoss", {"x": x, "t": t, "w": w},
                   {"reduction": reduction, "ignore_index": ignore_index}, opset=13)[0]
    infer_type(call)
    assert call.checked_type == relay.TensorType(want.shape, "float32")
    np.testing.assert_allclose(run_expr(call, x=x, t=t, w=w), want, rtol=1e-5, atol=1e-6)


def test_nll_loss_rejects_a_weight_of_the_wrong_length():
    call = relay.nn.nll_loss(relay.var("x", shape=(2, 4)), relay.var("t", shape=(2,),
                                                                     dtype="int64"),
                             relay.var("w", shape=(3,)))
    with pytest.raises(TypeInferenceError, match="nn.nll_loss, argument 'weights'"):
        infer_type(call)


def test_nll_loss_rejects_an_unknown_reduction():
    x = relay.var("x", shape=(2, 4))
    with pytest.raises(ValueError, match="reduction"):
        relay.nn.nll_loss(x, x, x, reduction="avg")
