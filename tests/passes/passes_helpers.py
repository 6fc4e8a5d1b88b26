"""Helpers shared by the pass tests: TVM's `run_opt_pass`, spans, goldens, numerics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import goldens
import numpy as np

import engine as tvm
from engine import relay
from engine.ir.expr import Expr, Function
from engine.ir.module import IRModule
from engine.ir.span import layer_span
from engine.relay.analysis import post_order_visit

GOLDENS = Path(__file__).parent / "goldens"


def run_opt_pass(expr: Expr, passes: Any) -> Expr:
    """As TVM's tests do: wrap in a module, InferType, run the pass(es), return main
    (or main's body when `expr` was not a function)."""
    passes = passes if isinstance(passes, (list, tuple)) else [passes]
    mod = tvm.IRModule.from_expr(expr)
    seq = tvm.transform.Sequential([relay.transform.InferType(), *passes])
    with tvm.transform.PassContext(opt_level=3):
        mod = seq(mod)
    main = mod["main"]
    return main if isinstance(expr, Function) else main.body


def named(expr: Expr, name: str) -> Any:
    """`expr` carrying the frontend span `name`."""
    return replace(expr, span=layer_span(name))


def names(expr: Expr) -> tuple[str, ...]:
    return expr.span.source_names() if expr.span else ()


def all_nodes(expr: Expr) -> list[Expr]:
    out: list[Expr] = []
    post_order_visit(expr, out.append)
    return out


def ops_in(expr: Expr) -> list[str]:
    return [n.op.name for n in all_nodes(expr)
            if isinstance(n, relay.Call) and isinstance(n.op, tvm.ir.Op)]


def check_golden(name: str, text: str) -> None:
    """Compare with tests/passes/goldens/NAME.txt (`pytest --update-goldens` rewrites it)."""
    goldens.check_golden(GOLDENS / f"{name}.txt", text)


def evaluate(mod: IRModule, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    from engine.relay.interpreter import evaluate as run

    out = run(mod, inputs)
    return [np.asarray(o) for o in _flatten(out)]


def _flatten(value: Any) -> Iterable[Any]:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flatten(v)
    else:
        yield value


def assert_same_outputs(a: Sequence[np.ndarray], b: Sequence[np.ndarray],
                        rtol: float = 1e-3, atol: float = 1e-5) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(y, dtype="float64"),
                                   np.asarray(x, dtype="float64"), rtol=rtol, atol=atol)
