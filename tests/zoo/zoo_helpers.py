"""Helpers shared by the zoo tests: onnxruntime references, the interpreter, op and span
inventories of an imported module."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from engine import relay
from engine.ir.expr import Call, Expr, Function, GlobalVar
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.relay.analysis import post_order_visit

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

ort = pytest.importorskip("onnxruntime")


def ort_outputs(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in session.run(None, dict(feeds))]


def evaluate(mod: IRModule, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    out = relay.create_executor("graph", mod=mod).evaluate()(**feeds)
    items = out if isinstance(out, (list, tuple)) else [out]
    return [np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in items]


def assert_close(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def _walk(mod: IRModule) -> list[Any]:
    nodes: list[Any] = []
    for _, func in mod.items():
        post_order_visit(func, nodes.append)
    return nodes


def relay_ops(mod: IRModule) -> set[str]:
    """Names of the operators called anywhere in the module (fused functions included)."""
    return {n.op.name for n in _walk(mod) if isinstance(n, Call) and isinstance(n.op, Op)}


def span_problems(mod: IRModule, valid: set[str]) -> tuple[int, list[Expr], list[str]]:
    """(expressions checked, those without a span, span names outside `valid`).
    Not checked: operators, global vars, @main itself and its parameters."""
    main = mod["main"]
    params = set(main.params)
    checked, missing, foreign = 0, [], []
    for node in _walk(IRModule.from_expr(main)):
        if isinstance(node, (Op, GlobalVar)) or node in params or node is main:
            continue
        checked += 1
        if not node.span:
            missing.append(node)
        foreign.extend(name for name in node.span.source_names() if name not in valid)
    return checked, missing, foreign


def valid_span_names(graph: Mapping[str, Any]) -> set[str]:
    """Layer names, and `<layer>.<input tensor>` for every input a layer consumes."""
    names: set[str] = set()
    for layer in graph["layers"]:
        names.add(layer["name"])
        names.update(f"{layer['name']}.{t}" for t in layer["inputs"])
    return names


def is_primitive(node: Any) -> bool:
    return isinstance(node, Function) and bool(node.attrs.get("Primitive"))


__all__ = ["assert_close", "evaluate", "is_primitive", "ort_outputs", "relay_ops",
           "span_problems", "valid_span_names"]
