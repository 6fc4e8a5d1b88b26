"""ExprFunctor dispatch, visitor/mutator defaults, functional update, deep chains."""

from __future__ import annotations

import sys

import pytest

from engine import relay
from engine.ir import SourceName, Span, structural_equal
from engine.ir.op import Op, register_op
from engine.relay.expr_functor import NODE_KINDS, ExprFunctor, ExprMutator, ExprVisitor


@pytest.fixture(autouse=True)
def _ops() -> None:
    for name, n in (("nn.relu", 1), ("add", 2)):
        register_op(name, num_inputs=n)


def relu(x: relay.Expr) -> relay.Call:
    return relay.Call(Op.get("nn.relu"), [x])


def sample_program() -> relay.Function:
    x = relay.var("x", shape=(1,))
    v = relay.var("v")
    inner = relay.Function([v], relu(v))
    tup = relay.Tuple([relu(x), x])
    body = relay.Let(v, relay.TupleGetItem(tup, 0),
                     relay.If(relay.const(True), relay.Call(inner, [v]), relay.const(0.0)))
    return relay.Function([x], body)


def test_every_node_kind_has_a_handler() -> None:
    for cls in (ExprVisitor, ExprMutator):
        table = cls._dispatch_table if "_dispatch_table" in cls.__dict__ else None
        cls().visit(relay.var("x"))
        table = cls.__dict__["_dispatch_table"]
        assert set(table) == set(NODE_KINDS)


def test_functor_without_a_handler_fails_fast() -> None:
    class OnlyVars(ExprFunctor):
        def visit_var(self, var: relay.Var) -> str:
            return var.name_hint

    assert OnlyVars().visit(relay.var("a")) == "a"
    with pytest.raises(NotImplementedError, match="visit_constant"):
        OnlyVars().visit(relay.const(1.0))


def test_visitor_sees_every_node_once() -> None:
    fn = sample_program()
    seen: list[str] = []

    class Count(ExprVisitor):
        def visit_call(self, call: relay.Call) -> None:
            seen.append("call")
            super().visit_call(call)

        def visit_var(self, var: relay.Var) -> None:
            seen.append(var.name_hint)

    Count().visit(fn)
    assert seen.count("call") == 3
    assert seen.count("x") == 1 and seen.count("v") == 1


def test_identity_mutator_returns_the_same_objects() -> None:
    fn = sample_program()
    assert ExprMutator().visit(fn) is fn


def test_mutator_rebuilds_only_the_path_to_a_change_and_keeps_spans() -> None:
    x = relay.var("x", shape=(1,))
    a = relay.Call(Op.get("nn.relu"), [x], span=Span(SourceName("a")))
    b = relay.Call(Op.get("nn.relu"), [relay.const(1.0)], span=Span(SourceName("b")))
    top = relay.Call(Op.get("add"), [a, b], span=Span(SourceName("top")))
    ite = relay.If(relay.const(True), top, x, span=Span(SourceName("if")))
    let_var = relay.var("t")
    let = relay.Let(let_var, ite, let_var, span=Span(SourceName("let")))
    y = relay.var("y", shape=(1,))

    class SwapX(ExprMutator):
        def visit_var(self, var: relay.Var) -> relay.Expr:
            return y if var is x else var

    new = SwapX().visit(let)
    assert new is not let and new.span == let.span
    new_ite = new.value
    assert new_ite.span == ite.span
    new_top = new_ite.true_branch
    assert new_top.span == top.span and new_top.args[1] is b  # untouched branch kept
    assert new_top.args[0].span == a.span and new_top.args[0].args[0] is y


def test_mutator_is_memoized_on_shared_subexpressions() -> None:
    x = relay.var("x")
    shared = relu(x)
    top = relay.Call(Op.get("add"), [shared, shared])
    built = []

    class Rebuild(ExprMutator):
        def visit_call(self, call: relay.Call) -> relay.Expr:
            built.append(call)
            return super().visit_call(call)

    Rebuild().visit(top)
    assert built.count(shared) == 1


def chain(n: int) -> tuple[relay.Var, relay.Expr]:
    x = relay.var("x", shape=(1, 64))
    e: relay.Expr = x
    for i in range(n):
        e = relay.Call(Op.get("nn.relu" if i % 2 else "add"),
                       [e] if i % 2 else [e, relay.const(1.0)])
    return x, e


def test_100k_chain_visit_mutate_compare_hash_without_recursion() -> None:
    limit = sys.getrecursionlimit()
    x, body = chain(100_000)
    fn = relay.Function([x], body)
    assert relay.analysis.count_nodes(fn) > 100_000
    assert ExprMutator().visit(fn) is fn
    y = relay.var("y", shape=(1, 64))

    class Swap(ExprMutator):
        def visit_var(self, var: relay.Var) -> relay.Expr:
            return y if var is x else var

    swapped = Swap().visit(fn)
    assert swapped is not fn and swapped.params[0] is y
    x2, body2 = chain(100_000)
    assert structural_equal(fn, relay.Function([x2], body2))
    from engine.ir import structural_hash

    assert structural_hash(fn) == structural_hash(relay.Function([x2], body2))
    assert sys.getrecursionlimit() == limit


def test_deep_let_chain_is_walked_without_recursion() -> None:
    x = relay.var("x")
    body: relay.Expr = x
    vars_ = [relay.var(f"v{i}") for i in range(50_000)]
    for v in reversed(vars_):
        body = relay.Let(v, x, body)
    assert ExprMutator().visit(body) is body
    seen = []

    class Vars(ExprVisitor):
        def visit_var(self, var: relay.Var) -> None:
            seen.append(var)

    Vars().visit(body)
    assert len(seen) == 50_001
    assert relay.analysis.count_nodes(body) == 100_001


def test_post_order_visit_children_first() -> None:
    x = relay.var("x")
    r = relu(x)
    order: list[relay.Expr] = []
    relay.analysis.post_order_visit(r, order.append)
    assert order.index(x) < order.index(r) and order[-1] is r


def test_free_and_bound_vars() -> None:
    fn = sample_program()
    z = relay.var("z")
    body = relay.Call(Op.get("add"), [fn.body.value, z])
    assert relay.analysis.free_vars(body)[-1] is z
    assert relay.analysis.free_vars(fn) == []
    assert {v.name_hint for v in relay.analysis.bound_vars(fn)} == {"x", "v"}
    bound = relay.bind(fn, {fn.params[0]: relay.const(1.0)})
    assert bound.params == ()
