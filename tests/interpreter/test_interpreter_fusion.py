"""The interpreter's clamp fusion (interpreter_fusion.py): a clip or relu whose only input is
batch_norm's field 0 runs inside batch_norm's pass, with numpy's loops and the compiled
ones alike; the result is the unfused one, and nothing else is fused. Plans are cached per
root and give the same results again."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from engine import relay
from engine.ir.expr import Call
from engine.ir.module import IRModule
from engine.relay import interpreter, interpreter_plan
from engine.relay.interpreter import evaluate
from engine.relay.interpreter_fusion import find_fusions
from engine.relay.op.nn import compiled_kernels


def _bn_args(rng: np.random.Generator, shape: tuple[int, ...], axis: int = 1,
             dtype: str = "float32") -> list[np.ndarray]:
    data = (rng.standard_normal(shape) * 4).astype(dtype)
    data.flat[3] = np.nan  # np.clip keeps NaN: so must the fused loop
    c = shape[axis]
    return [data, *(rng.random(c).astype(dtype) + 0.5 for _ in range(4))]


def _bn_reference(data: np.ndarray, g: np.ndarray, b: np.ndarray, m: np.ndarray,
                  v: np.ndarray, eps: float, axis: int = 1) -> np.ndarray:
    shape = [1] * data.ndim
    shape[axis] = -1
    scale = (g / np.sqrt(v + eps)).reshape(shape)
    return data.astype(np.float64) * scale + (b - m * g / np.sqrt(v + eps)).reshape(shape)


def _bn_clamp(clamp: str, shape: tuple[int, ...], axis: int = 1,
              feed: str = "relu") -> relay.Function:
    """clamp(batch_norm(feed(x))[0]): `feed` makes the data an intermediate (donated)."""
    x = relay.var("x", shape=shape)
    params = [relay.var(name, shape=(shape[axis],)) for name in ("g", "b", "m", "v")]
    data = relay.nn.relu(x) if feed == "relu" else x
    bn = relay.nn.batch_norm(data, *params, axis=axis, epsilon=1e-3)[0]
    out = relay.clip(bn, 0.0, 6.0) if clamp == "clip" else relay.nn.relu(bn)
    return relay.Function([x, *params], relay.add(out, relay.const(np.float32(1.0))))


@pytest.mark.parametrize(("clamp", "shape", "axis", "feed"), [
    ("clip", (2, 5, 6, 7), 1, "relu"),
    ("relu", (1, 3, 9), 1, "relu"),
    ("clip", (2, 4, 4, 6), 3, "relu"),  # channels last
    ("clip", (1, 4, 5, 5), 1, "input"),  # batch_norm reads the input: not in place
])
def test_fused_clamp_matches_the_unfused_ops(clamp: str, shape: tuple[int, ...], axis: int,
                                             feed: str, impl: str) -> None:
    rng = np.random.default_rng(7)
    args = _bn_args(rng, shape, axis)
    kept = [a.copy() for a in args]
    func = _bn_clamp(clamp, shape, axis, feed)
    got = evaluate(func, args)
    data = np.maximum(args[0], 0) if feed == "relu" else args[0]
    bn = _bn_reference(data, *args[1:], eps=1e-3, axis=axis)
    want = (np.clip(bn, 0, 6) if clamp == "clip" else np.maximum(bn, 0)) + 1
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.isnan(got.flat[3])  # relu, batch_norm and clip all keep NaN
    for arg, copy in zip(args, kept):
        np.testing.assert_array_equal(arg, copy)  # inputs intact


def test_the_plan_fuses_exactly_the_clamp_after_batch_norm() -> None:
    func = _bn_clamp("clip", (1, 2, 3, 3))
    order, uses = interpreter_plan.post_order_uses((func.body,), {})
    fusions = find_fusions(order, uses, (func.body,))
    (producer,) = fusions.bounds
    (passed,) = fusions.passed
    assert isinstance(producer, Call) and producer.op.name == "nn.batch_norm"
    assert isinstance(passed, Call) and passed.op.name == "clip"
    assert fusions.bounds[producer] == (0.0, 6.0)


def test_a_batch_norm_read_twice_or_at_the_root_is_not_fused(impl: str) -> None:
    x = relay.var("x", shape=(1, 3, 4, 4))
    params = [relay.var(name, shape=(3,)) for name in ("g", "b", "m", "v")]
    bn = relay.nn.batch_norm(x, *params)[0]
    twice = relay.Function([x, *params], relay.add(relay.clip(bn, 0.0, 1.0), bn))
    order, uses = interpreter_plan.post_order_uses((twice.body,), {})
    assert not find_fusions(order, uses, (twice.body,)).passed
    at_root = relay.Function([x, *params], relay.clip(bn, 0.0, 1.0))
    order, uses = interpreter_plan.post_order_uses((at_root.body,), {})
    assert not find_fusions(order, uses, (at_root.body,)).passed
    args = _bn_args(np.random.default_rng(1), (1, 3, 4, 4))
    bn_value = _bn_reference(*args, eps=1e-5)
    np.testing.assert_allclose(evaluate(twice, args), np.clip(bn_value, 0, 1) + bn_value,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(evaluate(at_root, args), np.clip(bn_value, 0, 1),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_channel_affine_matches_numpy(dtype: str, impl: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 3, 4)).astype(dtype)
    scale, shift = rng.standard_normal(3).astype(dtype), rng.standard_normal(3).astype(dtype)
    out = np.empty_like(x)
    ran = compiled_kernels.channel_affine(x, scale, shift, 2, out, (-0.5, 0.5))
    assert ran == (impl == "compiled")
    if ran:
        want = np.clip(x * scale[:, None] + shift[:, None], -0.5, 0.5)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    assert not compiled_kernels.channel_affine(x[:, :, ::2], scale, shift, 2,
                                               np.empty_like(x[:, :, ::2]))  # strided: numpy


def test_plans_are_cached_per_root_and_let_it_go() -> None:
    func = _bn_clamp("clip", (1, 2, 3, 3))
    args = _bn_args(np.random.default_rng(2), (1, 2, 3, 3))
    first = evaluate(func, args)
    assert func.body in interpreter_plan.PLANS
    np.testing.assert_array_equal(evaluate(func, args), first)
    count = len(interpreter_plan.PLANS)
    del func
    gc.collect()
    assert len(interpreter_plan.PLANS) == count - 1  # the plan does not keep its root alive


def _conv_bn_clamp(c: int, size: int, groups: int, mult: int, strides: tuple[int, int],
                   clamp: str | None) -> relay.Function:
    """clamp(batch_norm(conv2d(x, w))[0]) + 1."""
    x = relay.var("x", shape=(1, c, size, size))
    w = relay.var("w", shape=(c * mult, c // groups, 3, 3))
    params = [relay.var(name, shape=(c * mult,)) for name in ("g", "b", "m", "v")]
    conv = relay.nn.conv2d(x, w, strides=strides, padding=(1, 1), groups=groups)
    bn = relay.nn.batch_norm(conv, *params, epsilon=1e-3)[0]
    out = {"clip": relay.clip(bn, 0.0, 6.0), "relu": relay.nn.relu(bn), None: bn}[clamp]
    return relay.Function([x, w, *params], relay.add(out, relay.const(np.float32(1.0))))


@pytest.mark.parametrize(("c", "size", "groups", "mult", "strides", "clamp"), [
    (6, 30, 6, 1, (1, 1), "clip"),  # depthwise, compiled rows
    (6, 31, 6, 1, (2, 2), "clip"),  # depthwise, compiled rows at stride 2
    (5, 9, 5, 1, (1, 1), "relu"),  # depthwise, compiled channels-last
    (3, 9, 3, 2, (1, 1), None),  # depthwise with a multiplier: numpy, then the map
    (4, 10, 1, 1, (2, 2), "clip"),  # dense: the map in one pass after the matmul
])
def test_batch_norm_and_clamp_fused_into_the_conv(c: int, size: int, groups: int, mult: int,
                                                  strides: tuple[int, int], clamp: str | None,
                                                  impl: str) -> None:
    rng = np.random.default_rng(size)
    func = _conv_bn_clamp(c, size, groups, mult, strides, clamp)
    order, uses = interpreter_plan.post_order_uses((func.body,), {})
    fusions = find_fusions(order, uses, (func.body,))
    (producer,) = fusions.epilogues
    assert producer.op.name == "nn.conv2d" and len(fusions.skipped) == 1
    x = (rng.standard_normal((1, c, size, size)) * 3).astype("float32")
    w = rng.standard_normal((c * mult, c // groups, 3, 3)).astype("float32")
    bn_params = [rng.random(c * mult).astype("float32") + 0.5 for _ in range(4)]
    got = evaluate(func, [x, w, *bn_params])
    conv = relay.nn.conv2d(relay.const(x), relay.const(w), strides=strides, padding=(1, 1),
                           groups=groups)
    conv_value = evaluate(relay.Function([], conv), [])  # a root: evaluated alone, unfused
    bn = _bn_reference(conv_value, *bn_params, eps=1e-3)
    want = {"clip": np.clip(bn, 0, 6), "relu": np.maximum(bn, 0), None: bn}[clamp] + 1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_conv_read_twice_keeps_its_batch_norm() -> None:
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.var("w", shape=(2, 1, 3, 3))
    params = [relay.var(name, shape=(2,)) for name in ("g", "b", "m", "v")]
    conv = relay.nn.conv2d(x, w, padding=(1, 1), groups=2)
    body = relay.add(relay.clip(relay.nn.batch_norm(conv, *params)[0], 0.0, 6.0), conv)
    order, uses = interpreter_plan.post_order_uses((body,), {})
    fusions = find_fusions(order, uses, (body,))
    assert not fusions.epilogues and not fusions.skipped
    assert len(fusions.passed) == 1  # the clamp still runs inside batch_norm


def test_a_constant_batch_norm_map_is_computed_once(impl: str) -> None:
    rng = np.random.default_rng(5)
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(rng.standard_normal((3, 1, 3, 3)).astype("float32"))
    values = [rng.random(3).astype("float32") + 0.5 for _ in range(4)]
    bn = relay.nn.batch_norm(relay.nn.conv2d(x, w, padding=(1, 1), groups=3),
                             *(relay.const(v) for v in values))
    func = relay.Function([x], relay.add(relay.nn.relu(bn[0]), relay.const(np.float32(0.0))))
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    first = evaluate(func, [data])
    assert bn.astuple() in interpreter._CONSTANT_MAPS
    np.testing.assert_array_equal(evaluate(func, [data]), first)
    conv = evaluate(relay.Function([], relay.nn.conv2d(relay.const(data), w, padding=(1, 1),
                                                       groups=3)), [])
    np.testing.assert_allclose(first, np.maximum(_bn_reference(conv, *values, eps=1e-5), 0),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("groups", "bias_shape", "swap", "fused"), [
    (4, (4, 1, 1), False, True),  # FoldScaleAxis's form: conv + per-channel constant
    (1, (4, 1, 1), True, True),  # constant first, dense conv
    (4, (1, 1, 6), False, True),  # along the width: a map too (after the matmul)
    (4, (2, 4, 1, 1), False, False),  # not along one axis
    (4, (1, 1, 4, 1, 1), False, False),  # would add an axis
])
def test_an_added_channel_constant_and_clamp_fused_into_the_conv(
        groups: int, bias_shape: tuple[int, ...], swap: bool, fused: bool, impl: str) -> None:
    from engine.relay import transform

    rng = np.random.default_rng(9)
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.const(rng.standard_normal((4, 4 // groups, 3, 3)).astype("float32"))
    bias = rng.standard_normal(bias_shape).astype("float32")
    conv = relay.nn.conv2d(x, w, padding=(1, 1), groups=groups)
    summed = relay.add(relay.const(bias), conv) if swap else relay.add(conv, relay.const(bias))
    body = relay.add(relay.clip(summed, 0.0, 1.0), relay.const(np.float32(1.0)))
    mod = transform.InferType()(IRModule.from_expr(relay.Function([x], body)))
    func = mod["main"]
    order, uses = interpreter_plan.post_order_uses((func.body,), {})
    fusions = find_fusions(order, uses, (func.body,))
    assert bool(fusions.epilogues) == fused
    if fused:
        (epilogue,) = fusions.epilogues.values()
        assert epilogue.bounds == (0.0, 1.0) and len(fusions.passed) == 1
    data = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    conv_value = evaluate(relay.Function([], relay.nn.conv2d(relay.const(data), w, padding=(1, 1),
                                                             groups=groups)), [])
    want = np.clip(conv_value + bias, 0, 1) + 1
    np.testing.assert_allclose(evaluate(func, [data]), want, rtol=1e-5, atol=1e-5)
