"""Ops whose output shape depends on their input's values: argwhere, unique and
vision.all_class_non_max_suppression. `?` dims in the type, hand-computed values, the
standard pipeline, and a build that names the op it cannot size (or builds once the input
is a constant)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.ir.module import IRModule
from engine.ir.type import AnyDim
from engine.relay.interpreter import evaluate
from engine.relay.transform import FoldConstant, InferType
from engine.relay.type_infer import infer_type

ANY = AnyDim()


def _typed(expr):
    infer_type(expr)
    return expr.checked_type


def test_argwhere_has_one_row_per_nonzero_element() -> None:
    x = relay.var("x", shape=(2, 3))
    call = relay.argwhere(x, dtype="int64")
    assert _typed(call) == relay.TensorType((ANY, 2), "int64")
    got = evaluate(call, {"x": np.array([[0, 1, 0], [2, 0, 3]], "float32")})
    np.testing.assert_array_equal(got, [[0, 1], [1, 0], [1, 2]])
    assert got.dtype == np.int64


DATA = np.array([2, 1, 1, 3, 4, 3], "int64")


@pytest.mark.parametrize("is_sorted, values, first, inverse, counts", [
    (True, [1, 2, 3, 4], [1, 0, 3, 4], [1, 0, 0, 2, 3, 2], [2, 1, 2, 1]),
    (False, [2, 1, 3, 4], [0, 1, 3, 4], [0, 1, 1, 2, 3, 2], [1, 2, 2, 1]),
])
def test_unique_values_first_indices_inverse_and_counts(is_sorted, values, first, inverse,
                                                        counts) -> None:
    x = relay.var("x", shape=DATA.shape, dtype="int64")
    out = relay.unique(x, is_sorted=is_sorted)
    assert _typed(out.astuple()) == relay.TupleType((
        relay.TensorType((ANY,), "int64"), relay.TensorType((ANY,), "int64"),
        relay.TensorType((6,), "int64"), relay.TensorType((ANY,), "int64")))
    got = evaluate(out.astuple(), {"x": DATA})
    for have, want in zip(got, (values, first, inverse, counts)):
        np.testing.assert_array_equal(have, want)


def test_unique_along_an_axis_keeps_the_other_dims() -> None:
    data = np.array([[1, 0], [1, 0], [0, 1]], "float32")
    x = relay.var("x", shape=data.shape)
    out = relay.unique(x, axis=0)
    assert _typed(out[0]) == relay.TensorType((ANY, 2), "float32")
    assert _typed(out[2]) == relay.TensorType((3,), "int64")
    values, first, inverse, counts = evaluate(out.astuple(), {"x": data})
    np.testing.assert_array_equal(values, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(first, [2, 0])
    np.testing.assert_array_equal(inverse, [1, 1, 0])
    np.testing.assert_array_equal(counts, [1, 2])


# --- non-maximum suppression ----------------------------------------------------------------
BOXES = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], "float32")  # IoU(0, 1) 0.82
SCORES = np.array([[[0.9, 0.8, 0.7]]], "float32")


def _nms(boxes, limit, iou, score, center=False):
    b = relay.var("b", shape=boxes.shape)
    s = relay.var("s", shape=SCORES.shape)
    call = relay.vision.all_class_non_max_suppression(
        b, s, relay.const(np.array([limit], "int64")), relay.const(np.float32(iou)),
        relay.const(np.float32(score)), center_point_box=center)
    return call, evaluate(call, {"b": boxes, "s": SCORES})


@pytest.mark.parametrize("limit, iou, score, want", [
    (3, 0.5, 0.0, [[0, 0, 0], [0, 0, 2]]),        # box 1 overlaps box 0 too much
    (3, 0.9, 0.0, [[0, 0, 0], [0, 0, 1], [0, 0, 2]]),
    (1, 0.5, 0.0, [[0, 0, 0]]),                   # one box per class
    (3, 0.9, 0.75, [[0, 0, 0], [0, 0, 1]]),       # box 2 scores below the threshold
    (0, 0.5, 0.0, np.zeros((0, 3))),
])
def test_nms_keeps_the_best_boxes_greedily(limit, iou, score, want) -> None:
    call, got = _nms(BOXES, limit, iou, score)
    assert _typed(call) == relay.TensorType((ANY, 3), "int64")
    np.testing.assert_array_equal(got, np.asarray(want, "int64").reshape(-1, 3))


def test_nms_reads_centre_point_boxes() -> None:
    centred = np.stack([(BOXES[..., 1] + BOXES[..., 3]) / 2, (BOXES[..., 0] + BOXES[..., 2]) / 2,
                        BOXES[..., 3] - BOXES[..., 1], BOXES[..., 2] - BOXES[..., 0]], axis=-1)
    _, got = _nms(centred, 3, 0.5, 0.0, center=True)
    np.testing.assert_array_equal(got, [[0, 0, 0], [0, 0, 2]])


def test_nms_rejects_scores_for_other_boxes() -> None:
    b, s = relay.var("b", shape=(1, 3, 4)), relay.var("s", shape=(1, 1, 4))
    one = relay.const(np.float32(0))
    call = relay.vision.all_class_non_max_suppression(b, s, relay.const(1, "int64"), one, one)
    with pytest.raises(Exception, match="dim 2 \\(boxes\\)"):
        infer_type(call)


# --- the pipeline and the build ---------------------------------------------------------------
def _compress(x: relay.Var) -> relay.Function:
    flat = relay.reshape(x, [-1])
    kept = relay.reshape(relay.argwhere(relay.greater(flat, relay.const(0.0))), [-1])
    return relay.Function([x], relay.nn.relu(relay.take(flat, kept)))


def test_a_data_dependent_op_goes_through_the_pipeline_and_the_build_names_it() -> None:
    x = relay.var("x", shape=(2, 3))
    mod = IRModule.from_expr(_compress(x))
    data = np.array([[0, 1, -2], [3, 0, 4]], "float32")
    with tvm.transform.PassContext(opt_level=3):
        optimized = relay.optimize(mod, target="llvm")[0]
    np.testing.assert_array_equal(evaluate(optimized, {"x": data}), [1, 3, 4])
    with pytest.raises(Exception, match=r"argwhere: its output shape Tensor\[\(\?, 1\), "
                                        r"int32\] depends on the values of its inputs") as err:
        relay.build(mod, target="llvm")
    assert "take" not in str(err.value).split("(passes run")[0]


def test_a_constant_input_folds_the_data_dependent_op_and_builds() -> None:
    from engine.contrib import graph_executor

    x = relay.var("x", shape=(2, 3))
    mod = IRModule.from_expr(_compress(x))
    data = np.array([[0, 1, -2], [3, 0, 4]], "float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={"x": data})
    runtime = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    runtime.run()
    np.testing.assert_array_equal(runtime.get_output(0).numpy(), [1, 3, 4])


def test_fold_constant_gives_a_static_type() -> None:
    const = relay.const(np.array([[0, 1], [1, 1]], "float32"))
    mod = InferType()(IRModule.from_expr(relay.Function([], relay.argwhere(const))))
    folded = InferType()(FoldConstant()(mod))
    assert folded["main"].body.checked_type == relay.TensorType((3, 2), "int32")
