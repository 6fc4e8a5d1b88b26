"""scatter_elements, scatter_nd and einsum against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.relay.type_infer import infer_type

RNG = np.random.default_rng(11)
ONNX_REDUCTION = {"update": "none", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _check(call: relay.Expr, want: np.ndarray, got: np.ndarray) -> None:
    infer_type(call)
    assert call.checked_type == relay.TensorType(want.shape, str(want.dtype))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max"])
def test_scatter_elements_matches_ort(reduction, ort_run, run_expr):
    data = RNG.standard_normal((4, 5)).astype("float32")
    indices = np.array([[0, 3, -1], [2, 0, 1]], dtype="int64")  # unique per column
    updates = RNG.standard_normal((2, 3)).astype("float32")
    call = relay.scatter_elements(relay.var("d", shape=data.shape),
                                  relay.var("i", shape=indices.shape, dtype="int64"),
                                  relay.var("u", shape=updates.shape), axis=1,
                                  reduction=reduction)
    want = ort_run("ScatterElements", {"d": data, "i": indices, "u": updates},
                   {"axis": 1, "reduction": ONNX_REDUCTION[reduction]}, opset=18)[0]
    _check(call, want, run_expr(call, d=data, i=indices, u=updates))


@pytest.mark.parametrize("reduction", ["update", "add", "mul"])
def test_scatter_nd_matches_ort(reduction, ort_run, run_expr):
    data = RNG.standard_normal((4, 3, 2)).astype("float32")
    indices = np.array([[[0, 1]], [[3, 2]]], dtype="int64")  # (2, 1, 2): ONNX layout
    updates = RNG.standard_normal((2, 1, 2)).astype("float32")
    tvm_indices = indices.transpose(2, 0, 1)
    call = relay.scatter_nd(relay.var("d", shape=data.shape),
                            relay.var("i", shape=tvm_indices.shape, dtype="int64"),
                            relay.var("u", shape=updates.shape), mode=reduction)
    want = ort_run("ScatterND", {"d": data, "i": indices, "u": updates},
                   {"reduction": ONNX_REDUCTION[reduction]}, opset=18)[0]
    _check(call, want, run_expr(call, d=data, i=tvm_indices, u=updates))


@pytest.mark.parametrize("equation,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(3, 3)]), ("ij->", [(3, 4)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 2)]), ("i,j->ij", [(3,), (4,)]),
])
def test_einsum_matches_ort(equation, shapes, ort_run, run_expr):
    arrays = {f"x{i}": RNG.standard_normal(s).astype("float32") for i, s in enumerate(shapes)}
    call = relay.einsum([relay.var(k, shape=v.shape) for k, v in arrays.items()], equation)
    want = ort_run("Einsum", arrays, {"equation": equation}, opset=13)[0]
    _check(call, want, run_expr(call, **arrays))


def test_scatter_nd_rejects_updates_of_the_wrong_shape():
    call = relay.scatter_nd(relay.var("d", shape=(4, 3)), relay.var("i", shape=(1, 2),
                                                                   dtype="int64"),
                            relay.var("u", shape=(2, 4)))
    with pytest.raises(TypeInferenceError, match="scatter_nd, argument 'updates'"):
        infer_type(call)


def test_einsum_rejects_an_equation_that_does_not_fit():
    call = relay.einsum([relay.var("a", shape=(2, 3)), relay.var("b", shape=(4, 5))],
                        "ij,jk->ik")
    with pytest.raises(TypeInferenceError, match="einsum"):
        infer_type(call)
