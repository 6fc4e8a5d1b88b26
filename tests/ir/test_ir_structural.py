"""Structural equality and hashing: alpha-equivalence, free vars, spans, readable mismatch."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir import (
    Attrs,
    IRModule,
    SourceName,
    Span,
    StructuralMismatchError,
    assert_structural_equal,
    structural_equal,
    structural_hash,
)
from engine.ir.op import Op, register_op


@pytest.fixture(autouse=True)
def _ops() -> None:
    for name, n in (("nn.relu", 1), ("add", 2), ("nn.conv2d", 2)):
        register_op(name, num_inputs=n)


def conv(x: relay.Expr, w: relay.Expr, strides: tuple[int, int] = (1, 1)) -> relay.Call:
    return relay.Call(Op.get("nn.conv2d"), [x, w], Attrs({"strides": strides}))


def program(strides: tuple[int, int] = (1, 1), weight: float = 1.0) -> relay.Function:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(np.full((4, 3, 3, 3), weight, "float32"))
    y = relay.var("y")
    body = relay.Let(y, conv(x, w, strides), relay.Call(Op.get("nn.relu"), [y]))
    return relay.Function([x], body)


def test_alpha_equivalent_functions_are_equal_and_hash_equal() -> None:
    a, b = program(), program()
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_attrs_constants_and_ops_are_compared() -> None:
    assert not structural_equal(program(), program(strides=(2, 2)))
    assert not structural_equal(program(), program(weight=2.0))
    assert structural_hash(program()) != structural_hash(program(weight=2.0))


def test_free_vars_need_identity_unless_mapped() -> None:
    a, b = relay.var("x"), relay.var("x")
    ea, eb = relay.Call(Op.get("nn.relu"), [a]), relay.Call(Op.get("nn.relu"), [b])
    assert not structural_equal(ea, eb)
    assert structural_equal(ea, eb, map_free_vars=True)
    assert structural_equal(ea, relay.Call(Op.get("nn.relu"), [a]))


def test_bound_variables_must_correspond() -> None:
    x, y = relay.var("x"), relay.var("y")
    f1 = relay.Function([x, y], relay.Call(Op.get("add"), [x, y]))
    x2, y2 = relay.var("x"), relay.var("y")
    f2 = relay.Function([x2, y2], relay.Call(Op.get("add"), [y2, x2]))
    assert not structural_equal(f1, f2)


def test_sharing_versus_duplication() -> None:
    x = relay.var("x")
    shared = relay.Call(Op.get("nn.relu"), [x])
    a = relay.Function([x], relay.Call(Op.get("add"), [shared, shared]))
    x2 = relay.var("x")
    b = relay.Function([x2], relay.Call(Op.get("add"), [relay.Call(Op.get("nn.relu"), [x2]),
                                                       relay.Call(Op.get("nn.relu"), [x2])]))
    # TVM's graph-level equality treats a DAG and its tree unfolding as equal.
    assert structural_equal(a, b)


def test_spans_only_compared_on_request() -> None:
    x = relay.var("x")
    a = relay.Call(Op.get("nn.relu"), [x], span=Span(SourceName("relu1")))
    b = relay.Call(Op.get("nn.relu"), [x], span=Span(SourceName("relu2")))
    assert structural_equal(a, b)
    assert not structural_equal(a, b, compare_spans=True)
    with pytest.raises(StructuralMismatchError, match=r"span \[relu1\] vs \[relu2\]"):
        assert_structural_equal(a, b, compare_spans=True)


def test_mismatch_message_names_the_path_and_the_difference() -> None:
    with pytest.raises(AssertionError) as err:
        assert_structural_equal(program(), program(strides=(2, 2)))
    message = str(err.value)
    assert "root.body.value.attrs" in message
    assert "'strides': (1, 1) vs (2, 2)" in message


def test_modules_compare_functions_by_name() -> None:
    m1, m2 = IRModule.from_expr(program()), IRModule.from_expr(program())
    assert structural_equal(m1, m2) and structural_hash(m1) == structural_hash(m2)
    m2["other"] = program()
    assert not structural_equal(m1, m2)
