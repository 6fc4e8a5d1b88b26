"""InferType: every node typed, module identity rules, located errors, deep chains."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.ir.errors import PassError, TypeInferenceError
from engine.ir.span import layer_span
from engine.relay.analysis import post_order_visit
from engine.relay.type_infer import infer_type


def all_typed(mod: tvm.IRModule) -> bool:
    nodes: list = []
    for _, func in mod.items():
        post_order_visit(func, lambda n: nodes.append(n))
    return all(n.has_type for n in nodes if not isinstance(n, tvm.ir.Op))


def test_fills_every_node_and_keeps_function_objects() -> None:
    x = relay.var("x", shape=(1, 4))
    y = relay.nn.relu(x + relay.const(1.0))
    mod = tvm.IRModule.from_expr(relay.Tuple([y, relay.sum(y, axis=1)]))
    func = mod["main"]
    out = relay.transform.InferType()(mod)
    assert out["main"] is func
    assert all_typed(out)
    assert func.checked_type == relay.FuncType(
        [relay.TensorType((1, 4))],
        relay.TupleType([relay.TensorType((1, 4)), relay.TensorType((1,))]))
    again = relay.transform.InferType()(out)
    assert again is out


def test_infer_type_function_returns_same_module_when_typed() -> None:
    mod = tvm.IRModule.from_expr(relay.nn.relu(relay.var("x", shape=(2,))))
    first = infer_type(mod)
    assert first is not mod and first["main"] is mod["main"]
    assert infer_type(first) is first


def test_let_if_closures_and_global_calls() -> None:
    mod = tvm.IRModule()
    a = relay.var("a", shape=(3,))
    mod["double"] = relay.Function([a], a + a)
    x = relay.var("x", shape=(3,))
    c = relay.var("c", shape=(), dtype="bool")
    v = relay.Var("v")
    p = relay.var("p", shape=(3,))
    closure = relay.Function([p], relay.exp(p))
    f = relay.Var("f")
    body = relay.Let(v, relay.Call(mod.get_global_var("double"), [x]),
                     relay.Let(f, closure, relay.If(c, relay.Call(f, [v]), v)))
    mod["main"] = relay.Function([x, c], body)
    typed = infer_type(mod)
    assert all_typed(typed)
    assert v.checked_type == relay.TensorType((3,))
    assert isinstance(f.checked_type, relay.FuncType)
    assert typed["main"].checked_type.ret_type == relay.TensorType((3,))
    assert mod.get_global_var("double").checked_type.ret_type == relay.TensorType((3,))


def test_primitive_function_params_from_arguments() -> None:
    p = relay.Var("p")
    prim = relay.Function([p], relay.nn.relu(p)).with_attr("Primitive", 1)
    x = relay.var("x", shape=(2, 2))
    call = relay.Call(prim, [x])
    infer_type(call)
    assert call.checked_type == relay.TensorType((2, 2))
    assert p.checked_type == relay.TensorType((2, 2))


def test_error_names_op_argument_types_and_span() -> None:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(8, 4, 3, 3))
    conv = relay.nn.conv2d(x, w, padding=1)
    from dataclasses import replace

    conv = replace(conv, span=layer_span("resnet/conv1"))
    mod = tvm.IRModule.from_expr(relay.nn.relu(conv))
    with pytest.raises(PassError) as err:
        relay.transform.InferType()(mod)
    cause = err.value.cause
    assert isinstance(cause, TypeInferenceError)
    text = str(cause)
    for piece in ("nn.conv2d", "'weight'", "Tensor[(8, 4, 3, 3), float32]", "expected",
                  "resnet/conv1"):
        assert piece in text, (piece, text)


def test_call_argument_mismatch_on_global() -> None:
    mod = tvm.IRModule()
    a = relay.var("a", shape=(3,))
    mod["f"] = relay.Function([a], a)
    x = relay.var("x", shape=(4,))
    mod["main"] = relay.Function([x], relay.Call(mod.get_global_var("f"), [x]))
    with pytest.raises(TypeInferenceError, match=r"@f, argument 'a': expected Tensor\[\(3,\)"):
        infer_type(mod)


def test_untyped_free_variable_is_reported() -> None:
    with pytest.raises(TypeInferenceError, match="variable %q has no type"):
        infer_type(relay.nn.relu(relay.Var("q")))


def test_dynamic_dims_propagate() -> None:
    x = relay.var("x", shape=(relay.Any(), 4))
    y = relay.reshape(relay.nn.dense(x, relay.var("w", shape=(6, 4))), (-1, 3, 2))
    infer_type(y)
    shape = y.checked_type.shape
    assert isinstance(shape[0], relay.AnyDim) and shape[1:] == (3, 2)


def test_hundred_thousand_chain_types_without_recursion_error() -> None:
    x = relay.var("x", shape=(1, 8))
    y = x
    for i in range(100_000):
        y = relay.nn.relu(y) if i % 2 else relay.add(y, relay.const(np.float32(1)))
    mod = infer_type(tvm.IRModule.from_expr(y))
    assert mod["main"].checked_type.ret_type == relay.TensorType((1, 8))
    assert y.checked_type == relay.TensorType((1, 8))
