"""Depthwise conv2d kernel of the interpreter (conv.py `_depthwise`) against a direct sum
over kernel taps, on all of its paths, with strides, dilation, asymmetric padding and
channel multipliers: numpy's (strided small planes channels-last; the others
channels-first, strided ones through the input's stride phases, small planes' taps summed
by one matmul) and the compiled loops of `compiled_kernels` (3x3 rows on wide planes,
channels-last for the rest), each case run both ways."""

from __future__ import annotations

import numpy as np
import pytest

from engine.relay.op.nn import compiled_kernels
from engine.relay.op.nn.conv import channels_last, conv2d_nchw


def reference(x: np.ndarray, w: np.ndarray, strides: tuple[int, int],
              padding: tuple[int, int, int, int], dilation: tuple[int, int]) -> np.ndarray:
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    top, left, bottom, right = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    for k in range(o):
        for i in range(kh):
            for j in range(kw):
                r, q = i * dilation[0], j * dilation[1]
                window = xp[:, k // (o // c), r:r + strides[0] * (oh - 1) + 1:strides[0],
                            q:q + strides[1] * (ow - 1) + 1:strides[1]]
                out[:, k] += window * w[k, 0, i, j]
    return out


CASES = [  # (channels, multiplier, size, kernel, strides, padding, dilation)
    (8, 1, 7, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (8, 1, 9, 3, (2, 2), (1, 1, 1, 1), (1, 1)),
    (6, 2, 10, 5, (2, 1), (2, 0, 1, 3), (1, 2)),
    (4, 1, 48, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (4, 1, 71, 3, (2, 2), (0, 1, 1, 0), (1, 1)),
    (3, 3, 40, 3, (3, 2), (2, 2, 2, 2), (2, 2)),
    (5, 1, 37, 1, (2, 2), (0, 0, 0, 0), (1, 1)),
    (3, 2, 90, 3, (3, 2), (2, 1, 0, 2), (2, 1)),
    (2, 1, 70, 4, (2, 3), (0, 0, 0, 0), (1, 2)),
    (3, 2, 20, 3, (1, 1), (1, 1, 1, 1), (1, 1)),  # taps summed by one matmul
    (3, 2, 40, 3, (1, 1), (0, 2, 1, 1), (1, 1)),  # compiled rows, multiplier 2
    (5, 1, 61, 3, (2, 2), (1, 1, 0, 0), (1, 1)),  # compiled rows at stride 2, odd width
    (7, 1, 13, 5, (2, 1), (3, 0, 2, 4), (2, 1)),  # compiled channels-last, 5x5, dilated
]

# cases the compiled loops cover (the others need a multiplier channels-last): rows, channels-last
COMPILED_ROWS = {(3, 2, 40), (5, 1, 61), (4, 1, 48), (4, 1, 71)}


@pytest.mark.parametrize(("c", "mult", "size", "k", "strides", "padding", "dilation"), CASES)
def test_depthwise_matches_direct_sum(c: int, mult: int, size: int, k: int,
                                      strides: tuple[int, int],
                                      padding: tuple[int, int, int, int],
                                      dilation: tuple[int, int], impl: str) -> None:
    rng = np.random.default_rng(size * 10 + k)
    x = rng.standard_normal((2, c, size, size + 3)).astype(np.float32)
    w = rng.standard_normal((c * mult, 1, k, k)).astype(np.float32)
    got = conv2d_nchw(x, w, strides, padding, dilation, groups=c)
    want = reference(x, w, strides, padding, dilation)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_cases_cover_every_path() -> None:
    paths = {(channels_last((s + p[0] + p[2] - d[0] * (k - 1) - 1) // st[0] + 1,
                            (s + 3 + p[1] + p[3] - d[1] * (k - 1) - 1) // st[1] + 1, st),
              st == (1, 1))
             for _, _, s, k, st, p, d in CASES}
    # channels-last strided, channels-first at stride 1, channels-first through phases
    assert {(True, False), (False, True), (False, False)} <= paths


def test_float16_sums_in_float32() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 9, 9)).astype(np.float16)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float16)
    got = conv2d_nchw(x, w, (1, 1), (1, 1, 1, 1), (1, 1), groups=4)
    assert got.dtype == np.float32
    want = reference(x, w, (1, 1), (1, 1, 1, 1), (1, 1))
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(("c", "mult", "size", "k", "strides", "padding", "dilation"), CASES)
def test_compiled_loops_cover_their_cases(c: int, mult: int, size: int, k: int,
                                          strides: tuple[int, int],
                                          padding: tuple[int, int, int, int],
                                          dilation: tuple[int, int], impl: str) -> None:
    """With numba, every case with one output channel per input channel, and the 3x3 rows
    cases with multipliers, run compiled (so the test above checks the compiled loops)."""
    x = np.ones((1, c, size, size + 3), np.float32)
    w = np.ones((c * mult, 1, k, k), np.float32)
    oh = (size + padding[0] + padding[2] - dilation[0] * (k - 1) - 1) // strides[0] + 1
    ow = (size + 3 + padding[1] + padding[3] - dilation[1] * (k - 1) - 1) // strides[1] + 1
    got = compiled_kernels.depthwise_conv2d(x, w, padding, strides, dilation, oh, ow)
    covered = impl == "compiled" and (mult == 1 or (c, mult, size) in COMPILED_ROWS)
    assert (got is not None) == covered


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_loops_on_strided_views(dtype: str, impl: str) -> None:
    """A non-contiguous input (an NHWC array seen as NCHW) and float64 give the direct sum."""
    rng = np.random.default_rng(1)
    for size, strides in ((30, (1, 1)), (9, (2, 2))):
        x = rng.standard_normal((1, size, size, 6)).astype(dtype).transpose(0, 3, 1, 2)
        w = rng.standard_normal((6, 1, 3, 3)).astype(dtype)
        got = conv2d_nchw(x, w, strides, (1, 1, 1, 1), (1, 1), groups=6)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, reference(x, w, strides, (1, 1, 1, 1), (1, 1)),
                                   rtol=1e-5, atol=1e-4)


def test_warm_up_compiles_every_signature_the_calls_use(impl: str) -> None:
    """Read-only data and kernels (a constant's), strided vectors, both dtypes: after
    `warm_up` no call compiles a loop again (a user's first model pays no compile)."""
    if impl != "compiled":
        pytest.skip("numpy's loops compile nothing")
    from engine.relay.op.nn import _jit_loops as loops

    compiled_kernels.warm_up()
    kernels = (loops.depthwise_rows3x3, loops.depthwise_channels_last, loops.channel_affine)
    before = [set(k.signatures) for k in kernels]
    rng = np.random.default_rng(0)
    for dtype, size, strides in (("float32", 40, (1, 1)), ("float64", 41, (2, 2)),
                                 ("float32", 6, (2, 1))):
        x = rng.standard_normal((1, 3, size, size)).astype(dtype)
        w = rng.standard_normal((3, 1, 3, 3)).astype(dtype)
        x.flags.writeable = w.flags.writeable = False
        conv2d_nchw(x, w, strides, (1, 1, 1, 1), (1, 1), groups=3)
        vec = rng.standard_normal(6).astype(dtype)[::2]
        out = np.empty_like(x)
        assert compiled_kernels.channel_affine(x, vec, vec, 1, out)
    assert [set(k.signatures) for k in kernels] == before
