"""ONNX signal ops as real models carry them (axis, lengths, frame step and window known at
import time) against onnxruntime: DFT becomes a dense with a constant twiddle matrix (no
dyn op), STFT with a Hann window builds and runs, constant-size windows fold; a run-time
axis stays dyn.signal.dft."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, run_module
from onnx import TensorProto, helper, numpy_helper

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.ir.expr import Constant
from engine.relay import frontend
from engine.relay.analysis import post_order_visit

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(5)
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=20) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "signal",
                              [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                              [helper.make_tensor_value_info(o, F, None) for o in outputs],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _ops(mod: tvm.IRModule) -> set[str]:
    names: set[str] = set()
    post_order_visit(mod["main"], lambda n: names.add(n.op.name) if isinstance(
        n, relay.Call) and isinstance(n.op, relay.Op) else None)
    return names


@pytest.mark.parametrize("channels,length,onesided,inverse", [
    (1, None, 1, 0), (2, None, 0, 0), (2, 12, 0, 1), (1, 6, 1, 0), (2, 5, 0, 0)])
def test_dft_with_constant_axis_is_a_dense(channels, length, onesided, inverse) -> None:
    x = RNG.standard_normal((2, 8, 3, channels)).astype("float32")
    inits = [("axis", np.array(1, np.int64))]
    if length is not None:
        inits.append(("n", np.array(length, np.int64)))
    node = helper.make_node("DFT", ["x", "n" if length else "", "axis"], ["y"],
                            onesided=onesided, inverse=inverse)
    model = _model([node], [("x", x.shape)], ["y"], inits)
    result = frontend.load(model.SerializeToString())
    assert "nn.dense" in _ops(result.mod)
    assert not any(name.startswith("dyn.") for name in _ops(result.mod))
    assert_close(run_module(result.mod, {"x": x}), _ort(model, {"x": x}))
    assert_fully_spanned(result)


def test_dft_with_a_run_time_axis_stays_dynamic() -> None:
    x = RNG.standard_normal((2, 8, 3, 1)).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("DFT", ["x", "", "axis"], ["y"])], "g",
        [helper.make_tensor_value_info("x", F, x.shape),
         helper.make_tensor_value_info("axis", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 8
    result = frontend.load(model.SerializeToString())
    assert "dyn.signal.dft" in _ops(result.mod)
    feeds = {"x": x, "axis": np.array(2, np.int64)}
    assert_close(run_module(result.mod, feeds), _ort(model, feeds))


def _stft_model() -> onnx.ModelProto:
    """A spectrogram as exporters write it: Hann window of a constant size, constant hop."""
    nodes = [helper.make_node("HannWindow", ["size"], ["window"]),
             helper.make_node("STFT", ["x", "step", "window"], ["y"])]
    inits = [("size", np.array(16, np.int64)), ("step", np.array(4, np.int64))]
    return _model(nodes, [("x", (2, 64, 1))], ["y"], inits, opset=17)


def test_stft_with_a_hann_window_matches_onnxruntime_and_builds() -> None:
    x = RNG.standard_normal((2, 64, 1)).astype("float32")
    model = _stft_model()
    expected = _ort(model, {"x": x})
    result = frontend.load(model.SerializeToString())
    assert not any(name.startswith("dyn.") or name == "arange" for name in _ops(result.mod))
    assert_close(run_module(result.mod, {"x": x}), expected)
    assert_fully_spanned(result)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(result.mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), expected[0], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
def test_a_constant_size_window_folds_to_a_constant(op: str) -> None:
    node = helper.make_node(op, ["size"], ["w"], periodic=0)
    model = _model([node], [], ["w"], [("size", np.array(9, np.int32))], opset=17)
    result = frontend.load(model.SerializeToString())
    assert isinstance(result.mod["main"].body, Constant)
    assert_close(run_module(result.mod, {}), _ort(model, {}))


MEL_INPUTS = [("num_mel_bins", TensorProto.INT32), ("dft_length", TensorProto.INT32),
              ("sample_rate", TensorProto.INT32), ("lower_edge_hertz", F),
              ("upper_edge_hertz", F)]


@pytest.mark.parametrize("values", [(20, 512, 16000, 20.0, 8000.0),
                                    (13, 255, 22050, 125.0, 3800.0)])
def test_mel_weight_matrix_with_run_time_inputs(values) -> None:
    graph = helper.make_graph(
        [helper.make_node("MelWeightMatrix", [n for n, _ in MEL_INPUTS], ["y"])], "g",
        [helper.make_tensor_value_info(n, t, []) for n, t in MEL_INPUTS],
        [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {n: np.array(v, np.int32 if t == TensorProto.INT32 else np.float32)
             for (n, t), v in zip(MEL_INPUTS, values)}
    result = frontend.load(model.SerializeToString())
    assert_close(run_module(result.mod, feeds), _ort(model, feeds))
