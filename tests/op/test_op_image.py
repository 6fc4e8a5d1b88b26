"""image.grid_sample against onnxruntime's GridSample (and onnx's reference where the two
disagree: bicubic with border padding, where onnx clamps the source coordinate before taking
the 4 taps and onnxruntime, as PyTorch, clamps each tap)."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.relay.type_infer import infer_type

RNG = np.random.default_rng(7)
ONNX_MODE = {"nearest": "nearest", "bilinear": "linear", "bicubic": "cubic"}


@pytest.mark.parametrize("method", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_ort(method, padding_mode, align_corners, ort_run, run_expr):
    x = RNG.standard_normal((2, 3, 5, 6)).astype("float32")
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype("float32")
    call = relay.image.grid_sample(relay.var("x", shape=x.shape),
                                   relay.var("g", shape=(2, 2, 4, 7)), method=method,
                                   padding_mode=padding_mode, align_corners=align_corners)
    attrs = {"mode": ONNX_MODE[method], "padding_mode": padding_mode,
             "align_corners": int(align_corners)}
    if method == "bicubic" and padding_mode == "border":
        want = _onnx_reference(x, grid, attrs)
    else:
        want = ort_run("GridSample", {"x": x, "g": grid}, attrs, opset=20)[0]
    infer_type(call)
    assert call.checked_type == relay.TensorType(want.shape, "float32")
    got = run_expr(call, x=x, g=grid.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _onnx_reference(x: np.ndarray, grid: np.ndarray, attrs: dict) -> np.ndarray:
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("GridSample", ["x", "g"], ["y"], **attrs)
    return ReferenceEvaluator(node).run(None, {"x": x, "g": grid})[0]


def test_grid_sample_checks_the_coordinate_axis():
    call = relay.image.grid_sample(relay.var("x", shape=(1, 3, 5, 6)),
                                   relay.var("g", shape=(1, 3, 4, 4)))
    with pytest.raises(TypeInferenceError, match="image.grid_sample, argument 'grid'"):
        infer_type(call)
