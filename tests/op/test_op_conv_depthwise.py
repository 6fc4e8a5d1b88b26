"""Depthwise conv2d kernel of the interpreter (conv.py `_depthwise`) against a direct sum
over kernel taps, on all of its paths (strided small planes channels-last; the others
channels-first, strided ones through the input's stride phases, small planes' taps summed
by one matmul), with strides, dilation, asymmetric padding and channel multipliers."""

from __future__ import annotations

import numpy as np
import pytest

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
]


@pytest.mark.parametrize(("c", "mult", "size", "k", "strides", "padding", "dilation"), CASES)
def test_depthwise_matches_direct_sum(c: int, mult: int, size: int, k: int,
                                      strides: tuple[int, int],
                                      padding: tuple[int, int, int, int],
                                      dilation: tuple[int, int]) -> None:
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
