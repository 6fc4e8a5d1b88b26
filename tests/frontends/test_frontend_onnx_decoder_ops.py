"""onnx 1.23's decoder-state ops (CausalConvWithState, LinearAttention, SwiGLU, TensorScatter)
in one Gated-DeltaNet-like decode step: imported, run by the interpreter, built by relay.build
through the standard pipeline and run by the graph executor, against onnx's reference."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from frontend_helpers import assert_close, assert_fully_spanned, run_module
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import engine as tvm
from engine import relay
from engine.contrib import graph_executor
from engine.relay.frontend.common import ConversionError
from engine.relay.frontend.onnx import import_onnx

F, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(7)
B, C, T, K = 1, 8, 3, 4  # batch, channels (2 heads of 4), tokens, conv taps
LAYERS = ("conv", "to_tokens", "attn", "glu", "cache")


def _model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("CausalConvWithState", ["x", "w", "b", "conv_state"],
                         ["h", "conv_state_out"], name="conv", activation="silu"),
        helper.make_node("Transpose", ["h"], ["tokens"], name="to_tokens", perm=[0, 2, 1]),
        helper.make_node("LinearAttention", ["tokens", "tokens", "tokens", "state", "decay",
                                             "beta"], ["o", "state_out"], name="attn",
                         q_num_heads=2, kv_num_heads=2),
        helper.make_node("SwiGLU", ["o", "tokens"], ["y"], name="glu"),
        helper.make_node("TensorScatter", ["cache", "y", "write_at"], ["cache_out"],
                         name="cache", axis=1, mode="circular"),
    ]
    inputs = [("x", F, [B, C, T]), ("conv_state", F, [B, C, K - 1]),
              ("state", F, [B, 2, 4, 4]), ("decay", F, [B, T, 2]), ("beta", F, [B, T, 2]),
              ("cache", F, [B, 5, C]), ("write_at", I64, [B])]
    weights = {"w": RNG.standard_normal((C, 1, K)).astype("float32"),
               "b": RNG.standard_normal(C).astype("float32")}
    graph = helper.make_graph(
        nodes, "decode_step", [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(n, F, None)
         for n in ("y", "conv_state_out", "state_out", "cache_out")],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    model.ir_version = 11
    return model


def _feeds() -> dict[str, np.ndarray]:
    def normal(*shape: int) -> np.ndarray:
        return RNG.standard_normal(shape).astype("float32")
    return {"x": normal(B, C, T), "conv_state": normal(B, C, K - 1),
            "state": normal(B, 2, 4, 4) * 0.1,
            "decay": -np.abs(normal(B, T, 2)), "beta": RNG.uniform(0, 1, (B, T, 2)).astype("float32"),
            "cache": normal(B, 5, C), "write_at": np.array([3], dtype="int64")}


def test_a_decode_step_imports_runs_and_builds_like_onnx_reference() -> None:
    model, feeds = _model(), _feeds()
    expected = ReferenceEvaluator(model).run(None, feeds)
    result = import_onnx(model)
    assert_fully_spanned(result)
    assert_close(run_module(result.mod, feeds), expected)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(result.mod, target="llvm", params=result.params)
    runner = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in feeds.items():
        runner.set_input(name, value)
    runner.run()
    assert_close([runner.get_output(i).numpy() for i in range(4)], expected)
    spans = set()
    for index in range(lib.build_module.num_nodes):
        spans.update(lib.build_module.get_node_info(index)["spans"])
    assert {name.split(".")[0] for name in spans} >= set(LAYERS)


def _single(node: onnx.NodeProto, inputs: list[tuple[str, list[int]]],
            domain: tuple[str, int] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph([node], "one", [helper.make_tensor_value_info(n, F, s)
                                              for n, s in inputs],
                              [helper.make_tensor_value_info(node.output[0], F, None)])
    opsets = [helper.make_opsetid("", 28)] + ([helper.make_opsetid(*domain)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets)


def test_what_cannot_be_converted_is_named() -> None:
    qkv = [("q", [1, 2, 8]), ("k", [1, 2, 8]), ("v", [1, 2, 8])]
    gated = helper.make_node("LinearAttention", ["q", "k", "v"], ["o"], name="la",
                             q_num_heads=2, kv_num_heads=2, update_rule="gated")
    with pytest.raises(ConversionError, match="'gated' needs the decay input"):
        import_onnx(_single(gated, qkv))
    score = helper.make_graph([helper.make_node("Neg", ["s"], ["t"]),
                               helper.make_node("Abs", ["s"], ["u"])], "mod",
                              [helper.make_tensor_value_info("s", F, None)],
                              [helper.make_tensor_value_info("t", F, None),
                               helper.make_tensor_value_info("u", F, None)])
    flex = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name="fa",
                            domain="ai.onnx.preview", score_mod=score)
    rank4 = [(n, [1, 2, 3, 4]) for n in "qkv"]
    with pytest.raises(ConversionError, match="'score_mod' must give one tensor, not 2"):
        import_onnx(_single(flex, rank4, ("ai.onnx.preview", 1)))
