"""ONNX RNN / GRU / LSTM (unrolled into Relay ops) against onnxruntime: sequence_lens
masking, initial states, peepholes, clip, activation lists with alpha/beta,
linear_before_reset, input_forget, batch-first layout, every optional output; and small
torch.onnx exports of LSTM and GRU layers against PyTorch, imported, optimized and built."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, run_module
from onnx import TensorProto, helper, numpy_helper

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.relay import frontend
from engine.relay.frontend.common import ConversionError
from engine.relay.frontend.onnx import from_onnx
from engine.relay.interpreter import evaluate
from engine.relay.transform.pipeline import standard_pipeline

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(3)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SEQ, BATCH, INPUT, HIDDEN = 4, 3, 5, 6


def _weights(op: str, dirs: int) -> dict[str, np.ndarray]:
    g = GATES[op] * HIDDEN
    return {"W": RNG.standard_normal((dirs, g, INPUT)).astype("float32") * 0.5,
            "R": RNG.standard_normal((dirs, g, HIDDEN)).astype("float32") * 0.5,
            "B": RNG.standard_normal((dirs, 2 * g)).astype("float32") * 0.5}


def _model(op: str, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
           outputs: list[str], **attrs) -> onnx.ModelProto:
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    names = [n if n in feeds or n in inits else "" for n in order]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, outputs, hidden_size=HIDDEN, **attrs)
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                            v.shape) for k, v in feeds.items()]
    graph = helper.make_graph([node], "rnn", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outputs if o],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _batch_first(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Layout-1 inputs as layout 0 (onnxruntime runs only layout 0)."""
    turned = {"X": (1, 0, 2), "initial_h": (1, 0, 2), "initial_c": (1, 0, 2)}
    return {k: v.transpose(turned[k]) if k in turned else v for k, v in feeds.items()}


def _check(op: str, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
           outputs: list[str], layout: int, **attrs) -> None:
    if layout:
        model = _model(op, _batch_first(feeds), inits, outputs, **attrs)
        y, *states = _ort(model, _batch_first(feeds))
        expected = [y.transpose(2, 0, 1, 3), *(s.transpose(1, 0, 2) for s in states)]
    else:
        expected = _ort(_model(op, feeds, inits, outputs, **attrs), feeds)
    result = frontend.load(_model(op, feeds, inits, outputs, layout=layout, **attrs)
                           .SerializeToString())
    assert_close(run_module(result.mod, feeds), expected)
    assert_fully_spanned(result)


def _case(op: str, direction: str = "forward", layout: int = 0, lengths: bool = False,
          initial: bool = False, weights_as_inputs: bool = False, **attrs) -> None:
    dirs = 2 if direction == "bidirectional" else 1
    x_shape = (BATCH, SEQ, INPUT) if layout else (SEQ, BATCH, INPUT)
    feeds = {"X": RNG.standard_normal(x_shape).astype("float32")}
    inits = _weights(op, dirs)
    if lengths:
        feeds["sequence_lens"] = np.array([SEQ, 2, 1], dtype="int32")
    state_shape = (BATCH, dirs, HIDDEN) if layout else (dirs, BATCH, HIDDEN)
    if initial:
        feeds["initial_h"] = RNG.standard_normal(state_shape).astype("float32")
        if op == "LSTM":
            feeds["initial_c"] = RNG.standard_normal(state_shape).astype("float32")
    if op == "LSTM" and attrs.pop("peepholes", False):
        inits["P"] = RNG.standard_normal((dirs, 3 * HIDDEN)).astype("float32")
    if weights_as_inputs:
        feeds.update(inits)
        inits = {}
    outputs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    _check(op, feeds, inits, outputs, layout, direction=direction, **attrs)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens_mask_each_direction(op: str, direction: str) -> None:
    _case(op, direction, lengths=True, initial=True)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_batch_first_with_weights_as_inputs(op: str) -> None:
    _case(op, "bidirectional", layout=1, initial=True, weights_as_inputs=True)


def test_lstm_peepholes_clip_and_input_forget() -> None:
    _case("LSTM", "bidirectional", lengths=True, peepholes=True, clip=0.7, input_forget=1)


def test_gru_linear_before_reset_with_clip() -> None:
    _case("GRU", "bidirectional", initial=True, linear_before_reset=1, clip=1.5)


def test_activation_lists_consume_alpha_and_beta_in_order() -> None:
    _case("LSTM", "bidirectional",
          activations=["HardSigmoid", "LeakyRelu", "ScaledTanh", "Sigmoid", "Affine", "Elu"],
          activation_alpha=[0.3, 0.05, 0.9, 0.8, 1.2], activation_beta=[0.4, 1.1, 0.1])
    _case("GRU", activations=["Softsign", "Softplus"])
    _case("RNN", "bidirectional", activations=["Relu", "ThresholdedRelu"],
          activation_alpha=[0.2])


def _symbolic_model(dims: list) -> onnx.ModelProto:
    inits = _weights("LSTM", 1)
    graph = helper.make_graph(
        [helper.make_node("LSTM", ["X", "W", "R"], ["Y", "Y_h"], hidden_size=HIDDEN)], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Y_h")],
        initializer=[numpy_helper.from_array(inits[k], k) for k in ("W", "R")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


def test_a_dynamic_batch_is_fine() -> None:
    model = _symbolic_model([SEQ, "batch", INPUT])
    mod, _ = from_onnx(model)
    for batch in (1, 3):
        feeds = {"X": RNG.standard_normal((SEQ, batch, INPUT)).astype("float32")}
        assert_close(run_module(mod, feeds), _ort(model, feeds))


def test_a_dynamic_sequence_length_is_a_clear_error() -> None:
    model = _symbolic_model(["seq", BATCH, INPUT])
    with pytest.raises(ConversionError, match="sequence length known only at run time"):
        from_onnx(model)
    mod, _ = from_onnx(model, shape={"X": (SEQ, BATCH, INPUT)})
    assert relay.transform.InferType()(mod)["main"].body.checked_type.fields[0].shape[0] == SEQ


# --- torch.onnx exports -------------------------------------------------------------------
torch = pytest.importorskip("torch")


class _Recurrent(torch.nn.Module):
    """A two-layer recurrent layer (bidirectional LSTM or GRU), batch first, with an
    initial state, returning every output."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        layer = torch.nn.LSTM if kind == "LSTM" else torch.nn.GRU
        self.rnn = layer(INPUT, HIDDEN, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x, h0):
        if isinstance(self.rnn, torch.nn.LSTM):
            y, (h, c) = self.rnn(x, (h0, torch.tanh(h0)))
            return y, h, c
        y, h = self.rnn(x, h0)
        return y, h


def _export(module: torch.nn.Module, args: tuple, dynamo: bool) -> onnx.ModelProto:
    """The exporters' own warnings (the TorchScript one is deprecated) are not ours."""
    buffer = io.BytesIO()
    if dynamo:
        pytest.importorskip("onnxscript")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            return torch.onnx.export(module, args, dynamo=True, verbose=False).model_proto
        torch.onnx.export(module, args, buffer, dynamo=False, opset_version=14)
    return onnx.load_from_string(buffer.getvalue())


def _built_outputs(mod: tvm.IRModule, params: dict, feeds: dict[str, np.ndarray]
                   ) -> list[np.ndarray]:
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in feeds.items():
        m.set_input(name, value)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_torch_export_matches_pytorch_optimized_and_built(kind: str, dynamo: bool) -> None:
    torch.manual_seed(11)
    module = _Recurrent(kind).eval()
    x = torch.randn(BATCH, SEQ, INPUT)
    h0 = torch.randn(4, BATCH, HIDDEN)
    with torch.no_grad():
        expected = [t.numpy() for t in module(x, h0)]
        model = _export(module, (x, h0), dynamo)
    assert kind in {node.op_type for node in model.graph.node}
    mod, params = from_onnx(model)
    names = [p.name_hint for p in mod["main"].params if p.name_hint not in params]
    feeds = dict(zip(names, (x.numpy(), h0.numpy())))
    with tvm.transform.PassContext(opt_level=3):
        optimized = standard_pipeline(3, "llvm")(mod)
    values = {**feeds, **{k: v.numpy() for k, v in params.items()}}
    for got in (evaluate(mod, values), evaluate(optimized, values),
                _built_outputs(mod, params, feeds)):
        assert len(got) == len(expected)
        for out, want in zip(got, expected):
            np.testing.assert_allclose(np.asarray(out), want, rtol=1e-3, atol=1e-5)
