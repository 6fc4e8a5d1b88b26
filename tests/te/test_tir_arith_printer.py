"""The index arithmetic, the TIR printer and the evaluator's primitives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import tir
from engine.tir import expr as E
from engine.tir.arith import Interval, Linear, eval_interval, simplify, union
from engine.tir.eval import run
from engine.tir.printer import expr_text
from engine.tir.stmt import Buffer, BufferStore, For, ForKind, PrimFunc


def _v(name: str) -> E.Var:
    return E.Var(name)


def test_simplify_collects_linear_terms_and_exact_divisions() -> None:
    x, y = _v("x"), _v("y")
    assert expr_text(simplify((x * 8 + y) - x * 8 + y * 3)) == "y*4"
    assert expr_text(simplify((x * 8 + 5) // 4)) == "x*2 + 1"
    assert expr_text(simplify((x * 8 + 5) % 4)) == "1"
    assert expr_text(simplify((x * 3 + y) // 4)) == "(x*3 + y)//4"
    cond = simplify(x * 0 + 3 < 10)
    assert isinstance(cond, E.IntImm) and cond.value == 1 and cond.dtype == "bool"


def test_intervals_relax_inner_loops_symbolically() -> None:
    xo, xi = _v("xo"), _v("xi")
    relax = {xi: Interval(Linear(), Linear(const=7))}
    iv = eval_interval(xo * 8 + xi * 2 + 1, relax)
    assert expr_text(iv.lo.to_expr()) == "xo*8 + 1"
    assert expr_text(iv.hi.to_expr()) == "xo*8 + 15"
    mod = eval_interval((xo * 8 + xi) % 4, relax)
    assert (mod.lo.const, mod.hi.const) == (0, 3)
    assert eval_interval(xi * xo, relax) is None  # not linear in a relaxed var
    both = union([eval_interval(xo * 8 + xi, relax), eval_interval(xo * 8 + xi + 2, relax)])
    assert expr_text((both.hi - both.lo).to_expr()) == "9"


def test_printer_keeps_precedence_and_distinguishes_same_named_vars() -> None:
    a, b, c = _v("a"), _v("b"), _v("a")
    assert expr_text(a - (b - c)) == "a - (b - a_1)"
    assert expr_text((a + b) * 2) == "(a + b)*2"
    assert expr_text(tir.exp(E.FloatImm(value=-math.inf))) == "exp(-inff32)"


def test_evaluator_semantics_of_division_and_casts() -> None:
    out = Buffer("out", (E.IntImm(value=4),), "int32")
    i = _v("i")
    values = [E.Div(a=E.IntImm(value=-7), b=E.IntImm(value=2)),
              E.FloorDiv(a=E.IntImm(value=-7), b=E.IntImm(value=2)),
              E.FloorMod(a=E.IntImm(value=-7), b=E.IntImm(value=2)),
              E.Cast(value=E.IntImm(value=300), dtype="int8")]
    body = values[3]
    for k in reversed(range(3)):
        body = tir.Select(condition=i == k, true_value=values[k], false_value=body)
    loop = For(i, E.IntImm(value=0), E.IntImm(value=4), ForKind.SERIAL,
               BufferStore(out, E.cast(body, "int32"), (i,)))
    got = np.zeros(4, dtype="int32")
    run(PrimFunc((out,), loop), got)
    assert got.tolist() == [-3, -4, 1, 44]


def test_symbolic_truth_is_an_error() -> None:
    with pytest.raises(E.TIRError, match="no truth value"):
        bool(_v("x") < 3)
    x = _v("x")
    assert bool(x == x) and not bool(x == _v("x"))
