"""Every snapshot of every fused kernel's record lowers and computes the interpreter's
result (small shapes, engine.tir.eval), for the op families of the build."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.relay.backend.build_module import check_numerics

RNG = np.random.default_rng(3)


def _w(*shape: int) -> relay.Expr:
    return relay.const(RNG.standard_normal(shape).astype("float32"))


def conv_bias_relu() -> relay.Function:
    x = relay.var("x", shape=(1, 3, 6, 6))
    y = relay.nn.conv2d(x, _w(8, 3, 3, 3), padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.relu(relay.add(y, _w(8, 1, 1)))
    return relay.Function([x], y)


def conv_strided_dilated() -> relay.Function:
    x = relay.var("x", shape=(1, 4, 9, 9))
    y = relay.nn.conv2d(x, _w(6, 4, 3, 3), strides=(2, 2), padding=(1, 1), dilation=(2, 2))
    return relay.Function([x], y)


def depthwise_clip() -> relay.Function:
    x = relay.var("x", shape=(1, 4, 6, 6))
    y = relay.nn.conv2d(x, _w(4, 1, 3, 3), padding=(1, 1), groups=4)
    return relay.Function([x], relay.clip(y, 0.0, 6.0))


def conv_nhwc() -> relay.Function:
    x = relay.var("x", shape=(1, 5, 5, 3))
    y = relay.nn.conv2d(x, _w(3, 3, 3, 8), padding=(1, 1), data_layout="NHWC",
                        kernel_layout="HWIO")
    return relay.Function([x], y)


def dense_add() -> relay.Function:
    x = relay.var("x", shape=(4, 12))
    return relay.Function([x], relay.add(relay.nn.dense(x, _w(16, 12)), _w(16)))


def batch_matmul() -> relay.Function:
    x = relay.var("x", shape=(2, 4, 6))
    y = relay.var("y", shape=(2, 5, 6))
    return relay.Function([x, y], relay.nn.batch_matmul(x, y))


def max_pool() -> relay.Function:
    x = relay.var("x", shape=(1, 4, 7, 7))
    return relay.Function([x], relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1)))


def avg_pool() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 6, 6))
    return relay.Function([x], relay.nn.avg_pool2d(x, (3, 3), (2, 2), padding=(1, 1)))


def avg_pool_ceil_drops_window_in_pad() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 7, 8))  # ceil_mode would start a last window in the pad
    return relay.Function([x], relay.nn.avg_pool2d(x, (2, 2), (3, 3), padding=(1, 1),
                                                   ceil_mode=True, count_include_pad=True))


def global_pool_flatten_dense() -> relay.Function:
    x = relay.var("x", shape=(1, 8, 3, 3))
    y = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x))
    return relay.Function([x], relay.nn.dense(y, _w(5, 8)))


def softmax() -> relay.Function:
    x = relay.var("x", shape=(3, 11))
    return relay.Function([x], relay.nn.softmax(x))


def log_softmax_4d() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 3, 5))
    return relay.Function([x], relay.nn.log_softmax(x, axis=-1))


def layer_norm_decomposed() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 8))
    mean = relay.mean(x, axis=-1, keepdims=True)
    dev = relay.subtract(x, mean)
    var = relay.mean(relay.power(dev, relay.const(2.0)), axis=-1, keepdims=True)
    y = relay.divide(dev, relay.sqrt(relay.add(var, relay.const(1e-5))))
    return relay.Function([x], relay.add(relay.multiply(y, _w(8)), _w(8)))


def attention_reshapes() -> relay.Function:
    x = relay.var("x", shape=(1, 4, 6))
    y = relay.reshape(relay.add(x, _w(6)), (1, 4, 2, 3))
    y = relay.transpose(y, (0, 2, 1, 3))
    return relay.Function([x], relay.reshape(y, (2, 4, 3)))


def slices_and_concat() -> relay.Function:
    x = relay.var("x", shape=(2, 6))
    a = relay.strided_slice(x, begin=[0, 1], end=[2, 5], strides=[1, 2])
    b = relay.nn.pad(x, ((0, 0), (1, 1)))
    c = relay.take(x, relay.const(np.array([2, 0], dtype="int32")), axis=1)
    return relay.Function([x], relay.concatenate([a, b, c], axis=1))


CASES: dict[str, Callable[[], relay.Function]] = {
    f.__name__: f for f in (
        conv_bias_relu, conv_strided_dilated, depthwise_clip, conv_nhwc, dense_add,
        batch_matmul, max_pool, avg_pool, avg_pool_ceil_drops_window_in_pad, global_pool_flatten_dense, softmax, log_softmax_4d,
        layer_norm_decomposed, attention_reshapes, slices_and_concat)
}


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_snapshot_computes_the_interpreter_result(name: str, target: str) -> None:
    with tvm.transform.PassContext(opt_level=3, config={"te.keep_schedule_record": True}):
        lib = relay.build(tvm.IRModule.from_expr(CASES[name]()), target=target)
    report = check_numerics(lib, snapshots=True)
    assert report and all(v == "ok" for v in report.values()), report
    for low in lib.build_module.lowered.values():
        assert len(low.schedule.schedule_record) == len(low.schedule.primitive_record) >= 2
