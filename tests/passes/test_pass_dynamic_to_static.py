"""DynamicToStatic: dyn ops with constant operands become static ops; others stay; a dyn op
left for the build fails naming the input to pin."""

from __future__ import annotations

import numpy as np
import pytest

from engine import relay
from engine.ir.module import IRModule
from engine.ir.type import AnyDim
from engine.relay.interpreter import evaluate
from engine.relay.transform import DynamicToStatic, InferType

DATA = np.arange(24, dtype="float32").reshape(2, 3, 4)


def _i64(values) -> relay.Constant:
    return relay.const(np.array(values, "int64"), "int64")


def _ops(mod: IRModule) -> list[str]:
    from engine.ir.expr import Call
    from engine.ir.op import Op
    from engine.ir.traversal import post_order_visit

    names: list[str] = []
    post_order_visit(mod["main"].body, lambda e: names.append(e.op.name)
                     if isinstance(e, Call) and isinstance(e.op, Op) else None)
    return names


def test_constant_operands_specialise_to_static_ops_with_static_types() -> None:
    x = relay.var("x", shape=DATA.shape)
    y = relay.dyn.reshape(x, relay.cast(_i64([4, -1]), "int64"))  # a constant after folding
    y = relay.dyn.topk(y, _i64(1), axis=0)[0]
    y = relay.dyn.nn.pad(y, _i64([[1, 0], [0, 2]]), relay.const(0.0))
    y = relay.dyn.sum(relay.dyn.trilu(y, _i64(0)), _i64([0]), keepdims=False)
    before = InferType()(IRModule.from_expr(relay.Function([x], y)))
    after = DynamicToStatic()(before)
    assert not [n for n in _ops(after) if n.startswith("dyn.")]
    assert tuple(after["main"].body.checked_type.shape) == (8,)
    np.testing.assert_array_equal(evaluate(after, {"x": DATA}), evaluate(before, {"x": DATA}))


def test_run_time_operands_are_left_alone() -> None:
    x = relay.var("x", shape=DATA.shape)
    shape = relay.var("shape", shape=(2,), dtype="int64")
    before = InferType()(IRModule.from_expr(relay.Function([x, shape],
                                                           relay.dyn.reshape(x, shape))))
    after = DynamicToStatic()(before)
    assert _ops(after) == ["dyn.reshape"]
    assert tuple(after["main"].body.checked_type.shape) == (AnyDim(), AnyDim())


def test_a_dyn_op_reaching_the_build_names_the_input_to_pin() -> None:
    x = relay.var("x", shape=DATA.shape)
    shape = relay.var("new_shape", shape=(2,), dtype="int64")
    mod = IRModule.from_expr(relay.Function([x, shape],
                                            relay.nn.relu(relay.dyn.reshape(x, shape))))
    with pytest.raises(Exception, match=r"'newshape' is computed at run time from input "
                                         r"%new_shape") as err:
        relay.build(mod, target="llvm")
    assert "p0" not in str(err.value).split("(passes run")[0]


def test_binding_the_input_lets_the_build_specialise() -> None:
    from engine.transform import PassContext

    x = relay.var("x", shape=DATA.shape)
    shape = relay.var("new_shape", shape=(2,), dtype="int64")
    mod = IRModule.from_expr(relay.Function([x, shape],
                                            relay.nn.relu(relay.dyn.reshape(x, shape))))
    with PassContext(opt_level=3):  # DynamicToStatic's level, as in TVM
        relay.build(mod, target="llvm", params={"new_shape": np.array([4, 6], "int64")})


@pytest.mark.parametrize("kind, values, axes, policy", [
    ("scales", [1.0, 1.0, 0.6, 1.7], (), "stretch"),
    ("sizes", [7, 3], (3, 2), "not_smaller"),
])
@pytest.mark.parametrize("antialias", [False, True])
def test_onnx_resize_operands_specialise_keeping_the_given_scales(kind, values, axes, policy,
                                                                  antialias) -> None:
    image = np.arange(40, dtype="float32").reshape(1, 2, 4, 5)
    x = relay.var("x", shape=image.shape)
    dtype = "float32" if kind == "scales" else "int64"
    operand = relay.const(np.array(values, dtype), dtype)
    y = relay.dyn.image.resize2d(x, relay.const(np.zeros(0, "float32")), operand,
                                 method="cubic", onnx_kind=kind, axes=axes,
                                 keep_aspect_ratio_policy=policy, antialias=antialias)
    before = InferType()(IRModule.from_expr(relay.Function([x], y)))
    after = DynamicToStatic()(before)
    assert _ops(after) == ["image.resize2d"]
    assert bool(after["main"].body.attrs.get("antialias")) is antialias
    np.testing.assert_allclose(evaluate(after, {"x": image}), evaluate(before, {"x": image}),
                               rtol=1e-6)
