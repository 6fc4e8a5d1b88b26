"""qnn.subtract, concatenate, batch_matmul, avg_pool2d, softmax and the table-lookup ops
(sigmoid, tanh, exp, erf, sqrt, rsqrt, log, abs, hardswish, leaky_relu): each kernel
against a plain reference, its canonical form equal to the kernel bit for bit with every
created call spanned, its Relay text round trip, and its type relation's errors."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from engine import relay
from engine.ir.errors import TypeInferenceError
from engine.ir.expr import Call
from engine.ir.module import IRModule
from engine.ir.structural import structural_equal
from engine.ir.traversal import post_order
from engine.relay.analysis import span_coverage
from engine.relay.interpreter import evaluate
from engine.relay.parser import parse
from engine.relay.testing.qnn import f32, i32
from engine.relay.type_infer import infer_type

qnn = relay.qnn.op
RNG = np.random.default_rng(1502)


def check_canonical(text: str, inputs: dict[str, np.ndarray], metadata=None) -> np.ndarray:
    """The kernel's result; the text round-trips, and the canonical form computes the same
    bits with no qnn op left and every call spanned."""
    mod = relay.transform.InferType()(parse(text, metadata=metadata))
    assert structural_equal(mod, parse(mod.astext()))
    want = evaluate(mod, inputs)
    lowered = relay.transform.InferType()(relay.qnn.transform.CanonicalizeOps()(mod))
    names = {n.op.name for n in post_order(lowered["main"].body)
             if isinstance(n, Call) and hasattr(n.op, "name")}
    assert not any(name.startswith("qnn.") for name in names), names
    coverage = span_coverage(lowered)
    assert coverage.ratio == 1.0, coverage.missing[:3]
    np.testing.assert_array_equal(evaluate(lowered, inputs), want)
    return want


def upward(value: Fraction) -> int:
    return math.floor(value + Fraction(1, 2))


def header(**args: str) -> str:
    params = ", ".join(f"%{name}: {ty}" for name, ty in args.items())
    return f'#[version = "0.0.5"]\ndef @main({params}) {{\n'


# --- subtract / concatenate ---------------------------------------------------------------
def test_subtract_requantizes_both_sides_then_puts_one_zero_point_back():
    a = RNG.integers(-128, 128, (3, 4)).astype("int8")
    b = RNG.integers(-128, 128, (4,)).astype("int8")
    text = header(a="Tensor[(3, 4), int8]", b="Tensor[(4,), int8]") + \
        "  qnn.subtract(%a, %b, 0.5f, 3, 0.25f, -2, 1f, 5)\n}\n"
    got = check_canonical(text, {"a": a, "b": b})
    for (i, j), value in np.ndenumerate(got):
        left = upward(Fraction(int(a[i, j]) - 3, 2)) + 5
        right = upward(Fraction(int(b[j]) + 2, 4)) + 5
        assert value == min(127, max(-128, left - right + 5))


def test_concatenate_requantizes_each_input_to_the_output():
    a = RNG.integers(0, 256, (1, 2, 3)).astype("uint8")
    b = RNG.integers(0, 256, (1, 1, 3)).astype("uint8")
    text = header(a="Tensor[(1, 2, 3), uint8]", b="Tensor[(1, 1, 3), uint8]") + \
        "  qnn.concatenate((%a, %b), (0.5f, 2f), (128, 120), 1f, 100, axis=1)\n}\n"
    got = check_canonical(text, {"a": a, "b": b})
    assert got.shape == (1, 3, 3) and got.dtype == np.uint8
    want_a = [[min(255, max(0, upward(Fraction(int(v) - 128, 2)) + 100)) for v in row]
              for row in a[0]]
    want_b = [[min(255, max(0, (int(v) - 120) * 2 + 100)) for v in b[0, 0]]]
    np.testing.assert_array_equal(got[0], want_a + want_b)


# --- batch_matmul / avg_pool2d ------------------------------------------------------------
def test_batch_matmul_is_the_product_of_the_shifted_integers():
    x = RNG.integers(-128, 128, (2, 3, 5)).astype("int8")
    y = RNG.integers(0, 256, (2, 4, 5)).astype("uint8")
    text = header(x="Tensor[(2, 3, 5), int8]", y="Tensor[(2, 4, 5), uint8]") + \
        '  qnn.batch_matmul(%x, %y, -3, 128, 0.1f, 0.2f, out_dtype="int32", transpose_b=True)\n}\n'
    got = check_canonical(text, {"x": x, "y": y})
    want = np.einsum("bik,bjk->bij", x.astype(np.int64) + 3, y.astype(np.int64) - 128)
    np.testing.assert_array_equal(got, want)


def test_conv2d_transpose_is_the_transposed_conv_of_the_shifted_integers():
    x = RNG.integers(0, 256, (1, 2, 3, 3)).astype("uint8")
    w = RNG.integers(-128, 128, (2, 3, 2, 2)).astype("int8")
    kzp = np.array([1, -2, 0], "int32")
    text = header(x="Tensor[(1, 2, 3, 3), uint8]", w="Tensor[(2, 3, 2, 2), int8]") + \
        '  qnn.conv2d_transpose(%x, %w, 128, meta[relay.Constant][0], 0.1f, 0.2f, ' \
        'channels=3, kernel_size=[2, 2], strides=[2, 2], out_dtype="int32")\n}\n'
    got = check_canonical(text, {"x": x, "w": w}, {"relay.Constant": [kzp]})
    assert got.shape == (1, 3, 6, 6) and got.dtype == np.int32
    want = np.zeros((1, 3, 6, 6), np.int64)
    xs, ws = x.astype(np.int64) - 128, w.astype(np.int64) - kzp[None, :, None, None]
    for c in range(2):
        for i in range(3):
            for j in range(3):
                want[0, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2] += xs[0, c, i, j] * ws[c]
    np.testing.assert_array_equal(got, want)


def test_avg_pool2d_averages_with_8_fraction_bits_then_requantizes():
    x = RNG.integers(-128, 128, (1, 2, 4, 4)).astype("int8")
    text = header(x="Tensor[(1, 2, 4, 4), int8]") + \
        "  qnn.avg_pool2d(%x, 0.5f, 1, 0.25f, -4, pool_size=[2, 2], strides=[2, 2], " \
        "padding=[0, 0, 0, 0], count_include_pad=True)\n}\n"
    got = check_canonical(text, {"x": x})
    shifted = x.astype(np.int64) - 1
    for (n, c, i, j), value in np.ndenumerate(got):
        total = int(shifted[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2].sum()) * 256
        average = abs(total) // 4 * (1 if total >= 0 else -1)  # truncated
        assert value == min(127, max(-128, upward(Fraction(average * 2, 256)) - 4))


# --- table lookups ------------------------------------------------------------------------
FLOAT_FUNCTIONS = {
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh, "exp": np.exp,
    "erf": np.vectorize(math.erf), "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
    "log": np.log, "abs": np.abs, "hardswish": lambda v: v * np.clip(v + 3, 0, 6) / 6,
}


def float_reference(name: str, x: np.ndarray, scale: float, zp: int, out_scale: float,
                    out_zp: int) -> np.ndarray:
    """Dequantize, the function in float64, quantize half to even: the table entries may
    differ only where float32 and float64 land on two sides of a rounding boundary."""
    real = (x.astype(np.int64) - zp) * np.float64(np.float32(scale))
    with np.errstate(all="ignore"):
        y = FLOAT_FUNCTIONS[name](real)
    info = np.iinfo(x.dtype)
    q = np.nan_to_num(np.round(y / np.float64(np.float32(out_scale))) + out_zp, nan=out_zp,
                      posinf=info.max, neginf=info.min)
    return np.clip(q, info.min, info.max).astype(x.dtype)


@pytest.mark.parametrize("name", sorted(FLOAT_FUNCTIONS))
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_table_ops_quantize_the_float_function_of_every_value(name, dtype):
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1).astype(dtype)
    zp = 0 if dtype == "int8" else 128
    out_zp = -128 if dtype == "int8" else 0
    text = header(x=f"Tensor[(256,), {dtype}]") + \
        f"  qnn.{name}(%x, 0.04f, {zp}, 0.0125f, {out_zp})\n}}\n"
    got = check_canonical(text, {"x": x})
    want = float_reference(name, x, 0.04, zp, 0.0125, out_zp)
    assert got.dtype == np.dtype(dtype)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert np.mean(got == want) > 0.97


def test_leaky_relu_keeps_its_alpha():
    x = np.arange(-128, 128).astype("int8")
    text = header(x="Tensor[(256,), int8]") + \
        "  qnn.leaky_relu(%x, 0.1f, 2, 0.05f, -3, alpha=0.2f)\n}\n"
    got = check_canonical(text, {"x": x})
    real = (x.astype(np.float64) - 2) * 0.1
    want = np.clip(np.round(np.where(real >= 0, real, 0.2 * real) / 0.05) - 3, -128, 127)
    assert np.abs(got - want).max() <= 1 and np.mean(got == want) > 0.97


def test_int16_tables_have_65536_entries():
    x = RNG.integers(-32768, 32768, (50,)).astype("int16")
    text = header(x="Tensor[(50,), int16]") + "  qnn.tanh(%x, 0.0002f, 0, 0.00005f, 0)\n}\n"
    got = check_canonical(text, {"x": x})
    want = float_reference("tanh", x, 0.0002, 0, 0.00005, 0)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_softmax_is_dequantize_softmax_quantize():
    x = RNG.integers(0, 256, (2, 7)).astype("uint8")
    text = header(x="Tensor[(2, 7), uint8]") + \
        "  qnn.softmax(%x, 0.1f, 128, 0.00390625f, 0, axis=-1)\n}\n"
    got = check_canonical(text, {"x": x})
    real = (x.astype(np.float64) - 128) * np.float32(0.1)
    soft = np.exp(real - real.max(-1, keepdims=True))
    soft /= soft.sum(-1, keepdims=True)
    assert np.abs(got - np.clip(np.round(soft * 256), 0, 255)).max() <= 1


# --- type relations ---------------------------------------------------------------------
@pytest.mark.parametrize("make, match", [
    (lambda: qnn.sigmoid(relay.var("x", shape=(3,), dtype="int32"), f32(1), i32(0), f32(1),
                         i32(0)), "qnn.sigmoid, argument 'x': the input must be one of"),
    (lambda: qnn.tanh(relay.var("x", shape=(3,), dtype="int8"), f32([1, 2]), i32(0), f32(1),
                      i32(0)), "qnn.tanh, argument 'scale': a scale must be a scalar"),
    (lambda: qnn.concatenate([relay.var("a", shape=(3,), dtype="int8")], [f32(1), f32(2)],
                             [i32(0)], f32(1), i32(0), axis=0),
     "qnn.concatenate, argument 'input_scales': the input scales must have one entry"),
    (lambda: qnn.batch_matmul(relay.var("x", shape=(1, 2, 3), dtype="int8"),
                              relay.var("y", shape=(1, 4, 3)), i32(0), i32(0), f32(1), f32(1)),
     "qnn.batch_matmul, argument 'y': y must be one of"),
    (lambda: qnn.avg_pool2d(relay.var("x", shape=(1, 1, 4, 4), dtype="int8"), f32(1),
                            f32(0), f32(1), i32(0), pool_size=(2, 2)),
     "qnn.avg_pool2d, argument 'input_zero_point': a zero point must be int32"),
    (lambda: qnn.subtract(relay.var("a", shape=(3,), dtype="int8"),
                          relay.var("b", shape=(3,), dtype="int16"),
                          f32(1), i32(0), f32(1), i32(0), f32(1), i32(0)),
     "qnn.subtract, argument 'rhs': lhs and rhs must have one dtype"),
])
def test_type_relations_reject_bad_operands(make, match):
    with pytest.raises(TypeInferenceError, match=match):
        infer_type(make())


def test_constructors_match_the_text_form():
    x = relay.var("x", shape=(4,), dtype="int8")
    call = qnn.leaky_relu(x, 0.2, f32(0.1), i32(2), f32(0.05), i32(-3))
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x], call)))
    assert mod["main"].body.attrs.alpha == pytest.approx(0.2)
    pooled = qnn.avg_pool2d(relay.var("p", shape=(1, 1, 4, 4), dtype="int8"), f32(1), i32(0),
                            f32(1), i32(0), pool_size=(2, 2), strides=(2, 2))
    assert infer_type(pooled).checked_type == relay.TensorType((1, 1, 2, 2), "int8")
