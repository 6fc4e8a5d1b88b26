"""Re-printing a function whose nodes were typed in place splices in type trailers
(engine/relay/printer/retype.py): the text, source map and line origins are exactly
those of a fresh print, and the function is not printed again."""

from __future__ import annotations

import numpy as np
import pytest
from ir_helpers import op_call, register_ops

from engine import relay
from engine.ir import IRModule, SequentialSpan, layer_span
from engine.ir.type import TensorType
from engine.relay.printer import document, print_ir
from engine.relay.printer.retype import TypeSlots, retype
from engine.relay.type_infer import infer_type

OPS = ["add", "multiply", "nn.relu", "nn.conv2d"]


@pytest.fixture(autouse=True, scope="module")
def _ops() -> None:
    register_ops(OPS)


call = op_call


def every_kind() -> IRModule:
    """Lets, an if, tuples and items, an inline fused function with attrs, constants in
    the metadata and inline, spans: every place the printer writes a type trailer."""
    x = relay.var("x", shape=(2, 2), span=layer_span("x"))
    c = relay.var("c", "bool")
    y = relay.Var("y", TensorType((2, 2)), span=layer_span("y"))
    z = relay.Var("z")
    weight = relay.const(np.arange(4, dtype="float32").reshape(2, 2), span=layer_span("w"))
    p0, p1 = relay.var("p0", shape=(2, 2)), relay.var("p1", shape=(2, 2))
    prim = relay.Function([p0, p1], call("nn.relu", call("add", p0, p1, span=layer_span("a"))),
                          attrs={"Primitive": 1})
    fused = relay.Call(prim, [x, weight], span=SequentialSpan([layer_span("a"),
                                                              layer_span("r")]))
    shared = call("multiply", fused, x)
    branch = relay.If(c, call("add", shared, y), call("nn.relu", shared), span=layer_span("if0"))
    pair = relay.Tuple([z, shared])
    body = relay.Let(y, call("add", x, relay.const(2.0)),
                     relay.Let(z, branch, relay.TupleGetItem(pair, 0), span=layer_span("let")))
    return IRModule.from_expr(relay.Function([x, c], body))


def assert_same_print(mod: IRModule, printed: list[int] | None = None) -> None:
    """The cached print of `mod` is a fresh one; with `printed` (see count_prints), it
    was made without printing any function again."""
    reused = print_ir(mod, show_types=True)
    assert printed is None or printed == []
    fresh = print_ir(mod, show_types=True, reuse=False)
    assert reused.text == fresh.text
    assert reused.to_json() == fresh.to_json()
    assert reused.line_origins == fresh.line_origins


def count_prints(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    printed: list[int] = []
    real = document._print_def

    def counting(*args, **kwargs):
        printed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(document, "_print_def", counting)
    return printed


def test_types_filled_in_place_are_spliced_not_reprinted(monkeypatch) -> None:
    mod = every_kind()
    untyped = print_ir(mod, show_types=True)
    assert "ty=" not in untyped.text
    printed = count_prints(monkeypatch)
    typed = infer_type(mod)
    assert typed["main"] is mod["main"]  # the same objects, typed in place
    assert_same_print(typed, printed)  # the block was retyped, not printed again
    assert print_ir(typed, show_types=True).text.count("/* ty=") > 10


def test_a_type_replaced_in_place_moves_what_follows_it(monkeypatch) -> None:
    mod = infer_type(every_kind())
    before = print_ir(mod, show_types=True)
    weight = next(n for n in _nodes(mod["main"]) if isinstance(n, relay.Constant)
                  and n.data.ndim == 2)
    weight.set_checked_type(TensorType((2, 2), "float16"))  # a longer trailer mid-line
    assert_same_print(mod, count_prints(monkeypatch))
    after = print_ir(mod, show_types=True)
    assert after.text != before.text
    assert "Tensor[(2, 2), float16]" in after.text


def test_untyped_again_drops_the_trailers() -> None:
    mod = infer_type(every_kind())
    print_ir(mod, show_types=True)
    for node in _nodes(mod["main"]):
        object.__setattr__(node, "_checked_type", None)
    assert "ty=" not in print_ir(mod, show_types=True).text
    assert_same_print(mod)


def test_retype_declines_when_the_text_is_not_the_recorded_trailer() -> None:
    mod = infer_type(every_kind())
    block = print_ir(mod, show_types=True)._placed[0][1]
    slots = block.slots
    i = next(k for k, ty in enumerate(slots.types) if ty is not None)
    node = slots.nodes[i]
    assert node is not None
    wrong = list(block.lines)
    line = int(slots.positions()[i, 0])
    wrong[line] = wrong[line].replace("ty=", "tx=", 1)
    node.set_checked_type(TensorType((3,)))
    assert retype(tuple(wrong), block.table, slots, top=mod["main"]) is None


def test_touching_trailers_are_declined() -> None:
    x = relay.var("x", shape=(1,))
    slots = TypeSlots()
    slots.add(x, None, 0, 4, 0)
    slots.add(x, None, 0, 4, 0)  # no text between two trailers: ambiguous positions
    x.set_checked_type(TensorType((1,)))
    block = print_ir(IRModule.from_expr(relay.Function([x], x)))._placed[0][1]
    assert retype(("%x = %x",), block.table, slots) is None


def test_a_definition_does_not_keep_its_function_alive() -> None:
    import gc
    import weakref

    mod = infer_type(every_kind())
    print_ir(mod, show_types=True)
    gone = weakref.ref(mod["main"])
    del mod
    gc.collect()
    assert gone() is None


def _nodes(fn: relay.Function) -> list[relay.Expr]:
    from engine.relay.analysis import post_order_visit

    found: list[relay.Expr] = []
    post_order_visit(fn, found.append)
    return found
