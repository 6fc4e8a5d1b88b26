"""ONNX control flow, sequences and optionals: If, Loop and Scan against onnxruntime, outer
values captured by sub-graphs, sequence inputs pinned by shape=, and the clear refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, run_module
from onnx import TensorProto, helper

from engine import relay
from engine.ir.expr import Function, If, Let
from engine.ir.traversal import post_order
from engine.relay import frontend
from engine.relay.frontend.common import ConversionError
from engine.relay.interpreter import evaluate
from engine.transform import PassContext

ort = pytest.importorskip("onnxruntime")
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _model(nodes, inputs, outputs, opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "t", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> frontend.ImportResult:
    data = model.SerializeToString()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(data, options,
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    result = frontend.load(data)
    assert_close(run_module(result.mod, feeds), expected)
    with PassContext(opt_level=3):
        optimized, _ = relay.optimize(result.mod)
    assert_close(run_module(optimized, feeds), expected)
    assert_fully_spanned(result)
    return result


def _nodes(result: frontend.ImportResult, kind: type) -> list:
    return [n for n in post_order(result.mod["main"]) if isinstance(n, kind)]


def _if_model() -> onnx.ModelProto:
    """y = relu(x); out = c ? y + exp(x) : y * 2 (both branches read y from outside)."""
    then = helper.make_graph([helper.make_node("Exp", ["x"], ["e"]),
                              helper.make_node("Add", ["y", "e"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", F, [3])])
    two = helper.make_tensor("two", F, [], [2.0])
    other = helper.make_graph([helper.make_node("Constant", [], ["k"], value=two),
                               helper.make_node("Mul", ["y", "k"], ["o"])], "else", [],
                              [helper.make_tensor_value_info("o", F, [3])])
    return _model([helper.make_node("Relu", ["x"], ["y"]),
                   helper.make_node("If", ["c"], ["out"], then_branch=then, else_branch=other)],
                  [helper.make_tensor_value_info("x", F, [3]),
                   helper.make_tensor_value_info("c", B, [])],
                  [helper.make_tensor_value_info("out", F, [3])])


@pytest.mark.parametrize("cond", [True, False])
def test_if_branches_read_outer_values(cond: bool) -> None:
    x = np.array([-1.0, 0.5, 2.0], "float32")
    result = _check(_if_model(), {"x": x, "c": np.array(cond)})
    assert len(_nodes(result, If)) == 1


def _loop_model() -> onnx.ModelProto:
    """acc += x * scale for `trips` trips (scale computed outside the body), and each trip's
    acc stacked as a scan output."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["x", "scale"], ["step"]),
         helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])], "body",
        [helper.make_tensor_value_info("i", I64, []),
         helper.make_tensor_value_info("cond_in", B, []),
         helper.make_tensor_value_info("acc_in", F, [2])],
        [helper.make_tensor_value_info("cond_out", B, []),
         helper.make_tensor_value_info("acc_out", F, [2]),
         helper.make_tensor_value_info("scan", F, [2])])
    return _model([helper.make_node("Exp", ["s"], ["scale"]),
                   helper.make_node("Loop", ["trips", "", "acc0"], ["acc", "steps"], body=body)],
                  [helper.make_tensor_value_info("trips", I64, []),
                   helper.make_tensor_value_info("s", F, []),
                   helper.make_tensor_value_info("x", F, [2]),
                   helper.make_tensor_value_info("acc0", F, [2])],
                  [helper.make_tensor_value_info("acc", F, [2]),
                   helper.make_tensor_value_info("steps", F, [None, 2])])


@pytest.mark.parametrize("trips", [0, 1, 5])
def test_loop_captures_an_outer_value_as_a_parameter(trips: int) -> None:
    feeds = {"trips": np.array(trips), "s": np.array(0.5, "float32"),
             "x": np.array([1.0, -2.0], "float32"), "acc0": np.array([0.5, 0.5], "float32")}
    result = _check(_loop_model(), feeds)
    (loop,) = _nodes(result, Let)
    assert isinstance(loop.value, Function)
    names = [p.name_hint for p in loop.value.params]
    assert "scale" in names  # computed outside, passed in, not recomputed per trip


def _scan_model() -> onnx.ModelProto:
    """A running sum over the rows of x read backwards, the partial sums stacked on axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
         helper.make_node("Identity", ["sum_out"], ["partial"])], "body",
        [helper.make_tensor_value_info("sum_in", F, [2]),
         helper.make_tensor_value_info("row", F, [2])],
        [helper.make_tensor_value_info("sum_out", F, [2]),
         helper.make_tensor_value_info("partial", F, [2])])
    return _model([helper.make_node("Scan", ["init", "x"], ["total", "partials"], body=body,
                                    num_scan_inputs=1, scan_input_directions=[1],
                                    scan_output_axes=[1])],
                  [helper.make_tensor_value_info("init", F, [2]),
                   helper.make_tensor_value_info("x", F, [4, 2])],
                  [helper.make_tensor_value_info("total", F, [2]),
                   helper.make_tensor_value_info("partials", F, [2, 4])])


def test_scan_reads_backwards_and_stacks_on_the_output_axis() -> None:
    feeds = {"init": np.array([1.0, 0.0], "float32"),
             "x": np.arange(8, dtype="float32").reshape(4, 2)}
    result = _check(_scan_model(), feeds)
    main = result.mod["main"]
    relay.transform.InferType()(result.mod)
    assert [tuple(t.shape) for t in main.body.checked_type.fields] == [(2,), (2, 4)]


def _sequence_model() -> onnx.ModelProto:
    """Insert x at the front of the sequence input, then concatenate."""
    return _model([helper.make_node("SequenceInsert", ["seq", "x", "zero"], ["longer"]),
                   helper.make_node("ConcatFromSequence", ["longer"], ["out"], axis=0),
                   helper.make_node("SequenceLength", ["longer"], ["n"])],
                  [helper.make_tensor_sequence_value_info("seq", F, [None]),
                   helper.make_tensor_value_info("x", F, [1]),
                   helper.make_tensor_value_info("zero", I64, [])],
                  [helper.make_tensor_value_info("out", F, [None]),
                   helper.make_tensor_value_info("n", I64, [])])


def test_a_sequence_input_needs_its_length_pinned() -> None:
    model = _sequence_model()
    with pytest.raises(ConversionError, match="length of this sequence input is not known"):
        frontend.from_onnx(model)
    with pytest.raises(ConversionError, match="position is known only at run time and the "
                                              "elements differ in type"):
        frontend.from_onnx(model, shape={"seq": [[2], [1]]})
    mod, _ = frontend.from_onnx(model, shape={"seq": [[1], [1]]})
    seq = (np.array([1.0], "float32"), np.array([2.0], "float32"))
    for at, want in [(0, [9, 1, 2]), (1, [1, 9, 2]), (2, [1, 2, 9]), (-1, [1, 9, 2])]:
        out, n = evaluate(mod, {"seq": seq, "x": np.array([9.0], "float32"),
                                "zero": np.array(at)})
        np.testing.assert_array_equal(out, want)
        assert int(n) == 3


def test_a_loop_growing_a_sequence_for_a_run_time_trip_count_is_refused() -> None:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("SequenceInsert", ["seq_in", "x"], ["seq_out"])], "body",
        [helper.make_tensor_value_info("i", I64, []),
         helper.make_tensor_value_info("cond_in", B, []),
         helper.make_tensor_sequence_value_info("seq_in", F, [1])],
        [helper.make_tensor_value_info("cond_out", B, []),
         helper.make_tensor_sequence_value_info("seq_out", F, [1])])
    model = _model([helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
                    helper.make_node("Loop", ["trips", "", "empty"], ["seq"], body=body),
                    helper.make_node("ConcatFromSequence", ["seq"], ["out"], axis=0)],
                   [helper.make_tensor_value_info("trips", I64, []),
                    helper.make_tensor_value_info("x", F, [1])],
                   [helper.make_tensor_value_info("out", F, [None])])
    with pytest.raises(ConversionError, match="changes its dtype, rank or sequence length"):
        frontend.from_onnx(model)
