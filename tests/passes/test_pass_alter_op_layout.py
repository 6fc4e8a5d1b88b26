"""AlterOpLayout: the FTVMAlterOpLayout mechanism with test-registered alterations (TVM
style), the NCHWc alteration for SIMD CPU targets, the plain-llvm no-op, spans, numerics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from passes_helpers import all_nodes, named, names, ops_in, run_opt_pass

import engine as tvm
from engine import relay
from engine.ir.expr import Call, Function
from engine.relay.analysis import span_coverage
from engine.relay.interpreter import evaluate
from engine.relay.transform.alter_op_layout import (
    AlterOpLayoutError,
    channel_block,
    simd_lanes,
    temp_op_attr,
)

RNG = np.random.default_rng(11)


def _same_outputs(before: Function, after: Function) -> None:
    inputs = {p.name_hint: RNG.standard_normal(p.type_annotation.shape).astype("float32")
              for p in before.params}
    np.testing.assert_allclose(evaluate(tvm.IRModule.from_expr(after), inputs),
                               evaluate(tvm.IRModule.from_expr(before), inputs),
                               rtol=1e-4, atol=1e-5)


def _alter(func: Function, target: str = "llvm") -> Function:
    return run_opt_pass(func, relay.transform.AlterOpLayout(target))


def test_alter_op_return_none_keeps_the_module() -> None:
    x = relay.var("x", shape=(1, 64, 56, 56))
    w = relay.var("weight", shape=(64, 64, 3, 3))
    func = relay.Function([x, w], relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1))))
    called: list[bool] = []

    def alter_conv2d(attrs: Any, inputs: Any, tinfos: Any, out_type: Any) -> None:
        called.append(True)
        return None

    with temp_op_attr("nn.conv2d", "FTVMAlterOpLayout", alter_conv2d):
        after = _alter(func)
    assert called == [True]
    tvm.ir.assert_structural_equal(after, run_opt_pass(func, relay.transform.InferType()))


def test_alter_op_same_layout() -> None:
    """TVM's test_alter_op: the alteration scales the weight; Before / Expected."""
    def before() -> Function:
        x = relay.var("x", shape=(1, 8, 6, 6))
        w = relay.var("weight", shape=(8, 8, 3, 3))
        y = relay.nn.conv2d(x, w, channels=8, kernel_size=(3, 3), padding=(1, 1))
        return relay.Function([x, w], relay.nn.relu(y))

    def alter_conv2d(attrs: Any, inputs: Any, tinfos: Any, out_type: Any) -> Any:
        data, weight = inputs
        return relay.nn.conv2d(data, relay.multiply(weight, relay.const(2.0, "float32")),
                               **attrs)

    def expected() -> Function:
        x = relay.var("x", shape=(1, 8, 6, 6))
        w = relay.var("weight", shape=(8, 8, 3, 3))
        y = relay.nn.conv2d(x, relay.multiply(w, relay.const(2.0, "float32")), channels=8,
                            kernel_size=(3, 3), padding=(1, 1))
        return relay.Function([x, w], relay.nn.relu(y))

    with temp_op_attr("nn.conv2d", "FTVMAlterOpLayout", alter_conv2d):
        after = _alter(before())
    tvm.ir.assert_structural_equal(after, run_opt_pass(expected(), relay.transform.InferType()))


def test_alter_to_nhwc_inserts_transforms_and_propagates() -> None:
    """A test alteration to NHWC: relu and the pool follow, the result goes back."""
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = named(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1)), "conv1")
    y = relay.nn.max_pool2d(named(relay.nn.relu(y), "relu1"), pool_size=(2, 2))
    func = relay.Function([x, w], named(y, "pool1"))

    def to_nhwc(attrs: Any, inputs: Any, tinfos: Any, out_type: Any, target: str) -> Any:
        if attrs.data_layout == "NHWC":
            return None
        new = dict(attrs)
        new.update(data_layout="NHWC", kernel_layout="HWIO")
        return relay.nn.conv2d(*inputs, **new)

    with temp_op_attr("nn.conv2d", "FTVMAlterOpLayout", to_nhwc):
        after = _alter(func)
    pool = after.body.args[0]
    assert pool.op.name == "nn.max_pool2d" and pool.attrs.layout == "NHWC"
    assert ops_in(after).count("layout_transform") == 3  # data, weight in; result out
    assert span_coverage(after).ratio == 1.0
    conv = next(n for n in all_nodes(after) if isinstance(n, Call)
                and getattr(n.op, "name", "") == "nn.conv2d")
    assert names(conv) == ("conv1",)
    _same_outputs(func, after)


def test_alteration_must_return_a_call() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    func = relay.Function([x, w], relay.nn.conv2d(x, w))
    with temp_op_attr("nn.conv2d", "FTVMAlterOpLayout", lambda a, i, t, o: i[0]), \
            pytest.raises(tvm.ir.errors.PassError, match="must return a call"):
        _alter(func)
    assert Function is not None


def _resblock() -> Function:
    x = relay.var("x", shape=(1, 16, 8, 8))
    w1 = relay.const(RNG.standard_normal((16, 16, 3, 3)).astype("float32"))
    w2 = relay.const(RNG.standard_normal((24, 16, 1, 1)).astype("float32"))
    b = relay.const(RNG.standard_normal((16, 1, 1)).astype("float32"))
    y = relay.nn.conv2d(x, w1, channels=16, kernel_size=(3, 3), padding=(1, 1))
    y = relay.nn.relu(relay.add(relay.add(y, b), x))
    y = relay.nn.conv2d(y, w2, channels=24, kernel_size=(1, 1))
    return relay.Function([x], relay.nn.max_pool2d(y, pool_size=(2, 2)))


def test_nchwc_for_a_simd_cpu_target() -> None:
    func = _resblock()
    after = _alter(func, "llvm -mcpu=core-avx2")
    convs = [n for n in all_nodes(after) if isinstance(n, Call)
             and getattr(n.op, "name", "") == "nn.contrib_conv2d_NCHWc"]
    assert sorted((c.attrs.data_layout, c.attrs.kernel_layout, c.attrs.out_layout)
                  for c in convs) == [("NCHW8c", "OIHW8i8o", "NCHW8c"),
                                      ("NCHW8c", "OIHW8i8o", "NCHW8c")]
    # the bias add, residual add and relu stay blocked: only the pool goes back to NCHW
    assert "nn.conv2d" not in ops_in(after)
    back = after.body.args[0]
    assert back.op.name == "layout_transform" and back.attrs.src_layout == "NCHW8c"
    _same_outputs(func, after)


def test_plain_llvm_has_no_block_width_so_nothing_changes() -> None:
    func = _resblock()
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    with tvm.transform.PassContext(opt_level=3):
        assert relay.transform.AlterOpLayout("llvm")(mod) is mod
    with tvm.transform.PassContext(opt_level=2):  # gated by opt_level 3
        out = tvm.transform.Sequential([relay.transform.AlterOpLayout("llvm -mcpu=core-avx2")])
        assert out(mod) is mod


def test_block_sizes() -> None:
    assert simd_lanes("llvm -mcpu=skylake-avx512") == 16
    assert simd_lanes("llvm -mcpu=core-avx2") == 8
    assert simd_lanes("llvm") == 0
    assert channel_block(24, 16) == 12 and channel_block(3, 8) == 3 and channel_block(7, 4) == 0


def test_error_type_is_a_value_error() -> None:
    assert issubclass(AlterOpLayoutError, ValueError)
