"""Helpers shared by the frontend tests: run the interpreter, count spans, check span
coverage after every pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from engine.ir.expr import Expr, Function, GlobalVar
from engine.ir.module import IRModule
from engine.ir.op import Op
from engine.relay.analysis import post_order_visit
from engine.relay.frontend.result import ImportResult


def run_module(mod: IRModule, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Evaluate `main` in the engine's interpreter; outputs as a flat list of arrays."""
    try:
        from engine import relay
        executor = relay.create_executor("graph", mod=mod)
    except (ImportError, AttributeError) as err:
        pytest.skip(f"the interpreter is not available yet: {err}")
    out = executor.evaluate()(**inputs)
    items = out if isinstance(out, (list, tuple)) else [out]
    return [np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in items]


def infer_type(mod: IRModule) -> IRModule:
    from engine import relay

    return relay.transform.InferType()(mod)


def valid_span_names(result: ImportResult) -> set[str]:
    """Layer names, and `<layer>.<input tensor>` for every input a layer consumes."""
    names: set[str] = set()
    for layer in result.graph["layers"]:
        names.add(layer["name"])
        names.update(f"{layer['name']}.{t}" for t in layer["inputs"])
    return names


def unspanned_nodes(result: ImportResult) -> tuple[int, list[Expr], list[str]]:
    """(number of expressions checked, those without a span, span names naming no layer)."""
    main = result.mod["main"]
    params = set(main.params)
    valid = valid_span_names(result)
    checked: list[int] = [0]
    missing: list[Expr] = []
    foreign: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, (Op, GlobalVar)) or node in params:
            return
        checked[0] += 1
        if not node.span:
            missing.append(node)
        foreign.extend(n for n in node.span.source_names() if n not in valid)

    post_order_visit(main, visit)
    return checked[0], missing, foreign


def assert_fully_spanned(result: ImportResult) -> int:
    checked, missing, foreign = unspanned_nodes(result)
    assert checked > 0
    assert not missing, f"{len(missing)} of {checked} expressions have no span: {missing[:5]}"
    assert not foreign, f"spans naming no frontend layer: {sorted(set(foreign))[:5]}"
    return checked


def assert_close(actual: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-3, atol=1e-4)


def is_function(expr: Expr) -> bool:
    return isinstance(expr, Function)


def assert_matches(actual: Any, expected: list[np.ndarray]) -> None:
    """A framework's outputs (one array or a list) against the reference's, rtol 1e-3."""
    outs = actual if isinstance(actual, (list, tuple)) else [actual]
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected):
        got = np.asarray(got)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
