"""Fixtures for op tests: run one ONNX node in onnxruntime as the numeric reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from engine.relay.interpreter import evaluate


def _run_ort(op_type: str, inputs: dict[str, np.ndarray], attrs: dict[str, Any] | None = None,
             n_out: int = 1, opset: int = 13, node_inputs: list[str] | None = None,
             out_dtypes: list[str] | None = None) -> list[np.ndarray]:
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    names = list(inputs)
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op_type, node_inputs or names, outs, **(attrs or {}))
    elem = helper.np_dtype_to_tensor_dtype(next(iter(inputs.values())).dtype)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(
            o, helper.np_dtype_to_tensor_dtype(np.dtype(out_dtypes[i])) if out_dtypes else elem,
            None) for i, o in enumerate(outs)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


@pytest.fixture
def ort_run() -> Callable[..., list[np.ndarray]]:
    """`ort_run("Conv", {"x": x, "w": w}, {"strides": [2, 2]})` -> onnxruntime's outputs."""
    return _run_ort


@pytest.fixture
def run_expr() -> Callable[..., Any]:
    """Evaluate a relay expression over its free vars with numpy inputs by name."""
    def run(expr: Any, **inputs: np.ndarray) -> Any:
        return evaluate(expr, inputs)
    return run
