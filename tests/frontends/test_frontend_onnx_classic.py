"""Classic and data-dependent ONNX ops with their shape-like operands known at import time
(initializers, as exported models have them): static ops come out (no relay.dyn), and the
values match onnx's reference implementation. The node suite covers the run-time operands."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from engine.ir.expr import Call
from engine.ir.op import Op
from engine.ir.traversal import post_order_visit
from engine.relay.frontend.onnx import from_onnx
from engine.relay.interpreter import evaluate
from engine.relay.transform import InferType

RNG = np.random.default_rng(3)


def _model(op: str, x: np.ndarray, consts: dict[str, np.ndarray], opset: int, **attrs):
    node = helper.make_node(op, ["x", *consts], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(
            x.dtype), x.shape)], [helper.make_tensor_value_info("y", 1, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ops(mod) -> list[str]:
    names: list[str] = []
    post_order_visit(mod["main"].body, lambda e: names.append(e.op.name)
                     if isinstance(e, Call) and isinstance(e.op, Op) else None)
    return names


@pytest.mark.parametrize("op, x, consts, opset, attrs", [
    ("CenterCropPad", RNG.standard_normal((5, 4, 3)).astype("float32"),
     {"shape": np.array([3, 7], "int64")}, 18, {"axes": [0, 1]}),
    ("Col2Im", RNG.standard_normal((1, 8, 6)).astype("float32"),
     {"image_shape": np.array([3, 4], "int64"), "block_shape": np.array([2, 2], "int64")}, 18,
     {}),
    ("AffineGrid", RNG.standard_normal((2, 2, 3)).astype("float32"),
     {"size": np.array([2, 1, 3, 4], "int64")}, 20, {"align_corners": 1}),
    ("AffineGrid", RNG.standard_normal((1, 3, 4)).astype("float32"),
     {"size": np.array([1, 1, 2, 3, 1], "int64")}, 20, {}),
    ("ReverseSequence", RNG.standard_normal((4, 3, 2)).astype("float32"),
     {"lens": np.array([4, 1, 2], "int64")}, 10, {}),
    ("Compress", RNG.standard_normal((3, 4)).astype("float32"),
     {"condition": np.array([True, False, True])}, 11, {"axis": 0}),
])
def test_known_operands_give_static_ops(op, x, consts, opset, attrs) -> None:
    model = _model(op, x, consts, opset, **attrs)
    mod, params = from_onnx(model)
    assert not [n for n in _ops(mod) if n.startswith("dyn.") or n == "argwhere"]
    assert InferType()(mod)["main"].body.checked_type.is_static
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = evaluate(mod, {"x": x, **{k: v.numpy() for k, v in params.items()}})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_tfidf_with_strings_is_refused_by_name() -> None:
    x = np.zeros((4,), "int64")
    model = _model("TfIdfVectorizer", x, {}, 9, mode="TF", min_gram_length=1,
                   max_gram_length=1, max_skip_count=0, ngram_counts=[0], ngram_indexes=[0],
                   pool_strings=["a"])
    with pytest.raises(Exception, match="pool_strings"):
        from_onnx(model)
