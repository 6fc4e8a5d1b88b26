"""Ops behind classic ONNX ops: det, tfidf_vectorizer, nn.col2im (and dyn.nn.col2im),
vision.roi_align and the crop_pad helper. Type inference, a hand-computed case each, and a
build through the standard pipeline that runs like the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.errors import TypeInferenceError
from engine.ir.module import IRModule
from engine.ir.type import AnyDim
from engine.relay.interpreter import evaluate
from engine.relay.op.nn.crop_pad import crop_pad
from engine.relay.transform import DynamicToStatic, InferType
from engine.relay.type_infer import infer_type


def _typed(expr):
    infer_type(expr)
    return expr.checked_type


def _built(expr, **inputs: np.ndarray) -> np.ndarray:
    """Build `expr` over its free vars with relay.build and run it in the graph executor."""
    mod = IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    runtime = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    runtime.set_input(**inputs)
    runtime.run()
    return runtime.get_output(0).numpy()


# --- det --------------------------------------------------------------------------------------
def test_det_of_a_batch_of_matrices() -> None:
    data = np.array([[[1, 2], [3, 4]], [[2, 0], [0, 3]]], "float32")
    x = relay.var("x", shape=data.shape)
    call = relay.det(x)
    assert _typed(call) == relay.TensorType((2,), "float32")
    np.testing.assert_allclose(evaluate(call, {"x": data}), [-2, 6], rtol=1e-6)
    np.testing.assert_allclose(_built(call, x=data), [-2, 6], rtol=1e-6)


def test_det_needs_square_matrices() -> None:
    with pytest.raises(TypeInferenceError, match="det, argument 'data'"):
        infer_type(relay.det(relay.var("x", shape=(2, 3))))


# --- tfidf_vectorizer -------------------------------------------------------------------------
ROW = np.array([[2, 5, 4, 3, 2], [3, 3, 7, 5, 4]], "int64")
GRAMS, COLUMNS = [[2], [3], [5, 4]], [0, 1, 2]


@pytest.mark.parametrize("mode, low, weights, want", [
    ("TF", 1, (), [[2, 1, 1], [0, 2, 1]]),
    ("TF", 2, (), [[0, 0, 1], [0, 0, 1]]),              # bigrams only
    ("IDF", 1, (0.5, 1, 2), [[0.5, 1, 2], [0, 1, 2]]),
    ("TFIDF", 1, (0.5, 1, 2), [[1, 1, 2], [0, 2, 2]]),
])
def test_tfidf_counts_and_weighs_the_pool_ngrams(mode, low, weights, want) -> None:
    x = relay.var("x", shape=ROW.shape, dtype="int64")
    call = relay.tfidf_vectorizer(x, GRAMS, COLUMNS, low, 2, 0, mode, weights)
    assert _typed(call) == relay.TensorType((2, 3), "float32")
    np.testing.assert_allclose(evaluate(call, {"x": ROW}), want)


def test_tfidf_skips_between_the_items_of_an_ngram() -> None:
    row = np.array([5, 9, 4, 5, 4], "int32")  # (5, 4) adjacent once, one apart once
    x = relay.var("x", shape=row.shape, dtype="int32")
    call = relay.tfidf_vectorizer(x, GRAMS, COLUMNS, 2, 2, 1)
    np.testing.assert_allclose(evaluate(call, {"x": row}), [0, 0, 2])
    np.testing.assert_allclose(_built(call, x=row), [0, 0, 2])


def test_tfidf_needs_token_ids() -> None:
    call = relay.tfidf_vectorizer(relay.var("x", shape=(4,)), GRAMS, COLUMNS, 1, 2, 0)
    with pytest.raises(TypeInferenceError, match="integer token ids"):
        infer_type(call)


# --- col2im -----------------------------------------------------------------------------------
OVERLAPS = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], "float32")  # 2x2 blocks over 3x3


def test_col2im_adds_overlapping_blocks() -> None:
    data = np.ones((1, 4, 4), "float32")
    x = relay.var("x", shape=data.shape)
    call = relay.nn.col2im(x, [3, 3], [2, 2])
    assert _typed(call) == relay.TensorType((1, 1, 3, 3), "float32")
    np.testing.assert_array_equal(evaluate(call, {"x": data})[0, 0], OVERLAPS)
    np.testing.assert_array_equal(_built(call, x=data)[0, 0], OVERLAPS)


def test_col2im_strides_and_pads() -> None:
    data = np.arange(4, dtype="float32").reshape(1, 1, 4)  # 1x1 blocks, stride 2, pad 1
    call = relay.nn.col2im(relay.var("x", shape=data.shape), [2, 2], [1, 1], pads=[1, 1, 1, 1],
                           strides=[2, 2])
    # the block positions (-1, -1), (-1, 1), (1, -1), (1, 1): only (1, 1) is inside
    np.testing.assert_array_equal(evaluate(call, {"x": data})[0, 0], [[0, 0], [0, 3]])


def test_col2im_checks_the_block_count() -> None:
    call = relay.nn.col2im(relay.var("x", shape=(1, 4, 5)), [3, 3], [2, 2])
    with pytest.raises(TypeInferenceError, match="block positions"):
        infer_type(call)


def test_dyn_col2im_has_unknown_dims_and_specialises() -> None:
    data = np.ones((1, 4, 4), "float32")
    x = relay.var("x", shape=data.shape)
    window = {"dilations": (1, 1), "pads": (0, 0, 0, 0), "strides": (1, 1)}
    image = relay.const(np.array([3, 3], "int64"))
    call = relay.dyn.nn.col2im(x, image, relay.const(np.array([2, 2], "int64")), window)
    assert _typed(call) == relay.TensorType((1, AnyDim(), AnyDim(), AnyDim()), "float32")
    np.testing.assert_array_equal(evaluate(call, {"x": data})[0, 0], OVERLAPS)
    static = DynamicToStatic()(InferType()(IRModule.from_expr(relay.Function([x], call))))
    assert static["main"].body.op.name == "nn.col2im"
    assert static["main"].body.checked_type == relay.TensorType((1, 1, 3, 3), "float32")


# --- roi_align --------------------------------------------------------------------------------
FEATURE = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)


@pytest.mark.parametrize("aligned, mode, want", [
    (False, "avg", 10.0),   # one sample at (2, 2)
    (True, "avg", 7.5),     # shifted half a pixel: (1.5, 1.5), between 5, 6, 9 and 10
    (False, "max", 10.0),
    (True, "max", 2.5),     # the largest weighted corner: 10 * 0.25
])
def test_roi_align_samples_bilinearly(aligned, mode, want) -> None:
    x = relay.var("x", shape=FEATURE.shape)
    rois = relay.var("rois", shape=(1, 5))
    call = relay.vision.roi_align(x, rois, (1, 1), 1.0, 1, mode=mode, aligned=aligned)
    assert _typed(call) == relay.TensorType((1, 1, 1, 1), "float32")
    box = np.array([[0, 0, 0, 4, 4]], "float32")
    np.testing.assert_allclose(evaluate(call, {"x": FEATURE, "rois": box}).reshape(-1), [want])


def test_roi_align_pools_each_bin_and_builds() -> None:
    x = relay.var("x", shape=FEATURE.shape)
    rois = relay.var("rois", shape=(2, 5))
    call = relay.vision.roi_align(x, rois, (2, 2), 0.5, 2)
    box = np.array([[0, 0, 0, 8, 8], [0, 2, 2, 6, 6]], "float32")
    want = evaluate(call, {"x": FEATURE, "rois": box})
    # the whole map at half scale: each 2x2 bin averages samples at +0.5 and +1.5; the
    # last column's samples (x = 3.5) clamp to x = 3: (4.5 + 5 + 8.5 + 9) / 4 = 6.75
    np.testing.assert_allclose(want[0, 0], [[5, 6.75], [12, 13.75]])
    np.testing.assert_allclose(_built(call, x=FEATURE, rois=box), want)


# --- crop_pad ---------------------------------------------------------------------------------
def test_crop_pad_crops_negative_widths_and_pads_positive_ones() -> None:
    data = np.arange(12, dtype="float32").reshape(3, 4)
    x = relay.var("x", shape=data.shape)
    out = crop_pad(x, data.shape, np.array([[-1, 0], [1, -2]]), 0.0)
    assert _typed(out) == relay.TensorType((2, 3), "float32")
    np.testing.assert_array_equal(evaluate(out, {"x": data}), [[0, 4, 5], [0, 8, 9]])


def test_dyn_pad_with_constant_crops_specialises_to_static_ops() -> None:
    data = np.arange(12, dtype="float32").reshape(3, 4)
    x = relay.var("x", shape=data.shape)
    call = relay.dyn.nn.pad(x, relay.const(np.array([[-1, 0], [1, -2]], "int64")),
                            relay.const(0.0))
    mod = DynamicToStatic()(InferType()(IRModule.from_expr(relay.Function([x], call))))
    assert mod["main"].body.op.name == "nn.pad"
    assert mod["main"].body.checked_type == relay.TensorType((2, 3), "float32")
    np.testing.assert_array_equal(evaluate(mod, {"x": data}), [[0, 4, 5], [0, 8, 9]])
