"""A user pass that breaks numerics in one place, for the numerics-per-pass tests (explorer
and browser): `CopyConvWeights` copies the weight of every conv into a fresh constant,
one rewrite each through the public `engine.transform.allow_rewrite` (so within-pass
bisection can count them), and gets the copy of one conv (`BROKEN_LAYER`) wrong by one
element. `conv_chain_onnx` writes a small ONNX model of named convs for it.

Run workers import this module as a plugin (the test apps name it in RUN_PLUGINS through
explorer_helpers / browser_helpers), which registers the pass by name."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from engine import relay, transform
from engine.ir.expr import Call, Constant, Expr
from engine.relay.expr_functor import ExprMutator
from explorer.testing import ProcessFlag

PASS_NAME = "CopyConvWeights"
BROKEN_LAYER = os.environ.get("NUMERICS_BROKEN_LAYER", "block2.conv")
"""The conv layer whose weight copy is wrong (the environment may name another, to try the
pass on a real model)."""
LAYERS = ("block1.conv", "block2.conv", "block3.conv", "block4.conv")
PIPELINE = ["InferType", "SimplifyExpr", PASS_NAME, "FoldConstant", "FuseOps"]
"""An explicit pass list: passes before, the bad pass, passes after it."""
ARMED = ProcessFlag("numerics-bug-armed")
"""While set, `with_bug` puts the bad pass before every run's pipeline (browser tests)."""


class _CopyWeights(ExprMutator):
    def visit_call(self, call: Call) -> Expr:
        post = super().visit_call(call)
        if not isinstance(post, Call) or getattr(post.op, "name", None) != "nn.conv2d" \
                or not isinstance(post.args[1], Constant) or not transform.allow_rewrite(call):
            return post
        weight = post.args[1]
        data = weight.data.numpy().copy()
        if BROKEN_LAYER in call.span.source_names():
            data.flat[0] += 25.0  # the bug
        copied = relay.const(data)
        return replace(post, args=(post.args[0], replace(copied, span=weight.span)))


@transform.register_pass(PASS_NAME, override=True)
def copy_conv_weights() -> transform.Pass:
    def body(mod: Any, ctx: Any) -> Any:
        new = mod.shallow_copy()
        for gv, fn in mod.items():
            new[gv] = _CopyWeights().visit(fn)
        return new

    return transform.module_pass(body, opt_level=0, name=PASS_NAME)


def with_bug(passes: list[Any]) -> list[Any]:
    """A run plugin's `wrap_passes` part: the bad pass first while ARMED."""
    return [copy_conv_weights(), *passes] if ARMED.is_set() else passes


def conv_chain_onnx(path: Path, channels: int = 4, size: int = 8) -> Path:
    """x -> (conv, relu) per layer of LAYERS -> y, every node named; seeded weights."""
    rng = np.random.default_rng(11)
    nodes, inits, last = [], [], "x"
    for i, name in enumerate(LAYERS):
        w = (rng.standard_normal((channels, channels, 3, 3)) * 0.3).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"{name}.weight"))
        nodes.append(helper.make_node("Conv", [last, f"{name}.weight"], [f"c{i}"], name=name,
                                      pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
        last = f"r{i}" if i < len(LAYERS) - 1 else "y"
        nodes.append(helper.make_node("Relu", [f"c{i}"], [last],
                                      name=name.replace(".conv", ".relu")))
    shape = [1, channels, size, size]
    graph = helper.make_graph(nodes, "conv_chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path
