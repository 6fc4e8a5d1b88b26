"""ATen converters, op by op: the Core ATen coverage (torch's own list of `core`-tagged
overloads, the target of `run_decompositions()`), and per-op numerics against PyTorch for
small functions exported by `torch.export` both as training IR (what `export` gives:
in-place ops, views, composite ops such as `scaled_dot_product_attention`) and decomposed
to Core ATen."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from frontend_helpers import assert_fully_spanned, run_module

from engine.relay.frontend.pytorch import import_program
from engine.relay.frontend.pytorch.aten_table import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.torch

# Core ATen overloads we leave unconverted, and why: an inference importer of static-shape
# programs needs none of them.
NOT_CONVERTED = {
    # gradients (training programs)
    "aten._adaptive_avg_pool2d_backward.default", "aten.avg_pool2d_backward.default",
    "aten.convolution_backward.default", "aten.embedding_dense_backward.default",
    "aten.max_pool2d_with_indices_backward.default", "aten.native_group_norm_backward.default",
    "aten.native_layer_norm_backward.default",
    # random numbers
    "aten.rand.default", "aten.randn.default", "aten.randperm.default",
    # complex FFTs, pairwise distances, bags, data-dependent scatter, out= variant
    "aten._fft_c2r.default", "aten._fft_r2c.default", "aten._cdist_forward.default",
    "aten._pdist_forward.default", "aten._embedding_bag.default",
    "aten.masked_scatter.default", "aten.atan2.out",
    # in-place storage resize and a symbolic-shape query: not tensor computations
    "aten.resize_.default", "aten.sym_is_contiguous.default",
}


def core_aten_ops() -> list[str]:
    """Every registered aten overload tagged core (from the dispatcher's list of all op
    names: iterating `torch.ops.aten` sees only the packets loaded so far, which depends on
    what ran before)."""
    found = set()
    for full in torch._C._dispatch_get_all_op_names():
        if not full.startswith("aten::"):
            continue
        base, _, overload = full.removeprefix("aten::").partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.core in op.tags:
            found.add(str(op))
    return sorted(found)


def test_core_aten_coverage() -> None:
    core = core_aten_ops()
    missing = {op for op in core if lookup(op) is None}
    converted = len(core) - len(missing)
    print(f"Core ATen: {converted} of {len(core)} overloads converted "
          f"({100 * converted / len(core):.1f} %)")
    assert len(core) > 150
    assert missing == NOT_CONVERTED & set(core)


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: Any) -> Any:
        return self.fn(*xs)


def _r(*shape: int) -> Any:
    return torch.randn(*shape)


def _i(high: int, *shape: int) -> Any:
    return torch.randint(0, high, shape)


def _inplace_slice_fill(x: Any) -> Any:
    mask = x.new_zeros(4, 6)
    mask[1:3, 2:].fill_(1.0)
    mask[0].add_(2.0)
    return x * mask


def _index_put(x: Any, i: Any) -> Any:
    y = x.clone()
    y[i] = 7.0
    y[1:, i[:1]] = x[:4, :1] * 3
    y[i, 1:] += 1.0
    return y


# (id, function, inputs)
CASES: list[tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]]]] = [
    ("unary_math", lambda x: torch.cat([torch.abs(x), torch.ceil(x), torch.floor(x),
                                        torch.round(x), torch.trunc(x), torch.sign(x),
                                        torch.sin(x), torch.cos(x), torch.tan(x * 0.5),
                                        torch.atan(x), torch.sinh(x), torch.cosh(x),
                                        torch.erf(x), torch.expm1(x), torch.neg(x)]),
     lambda: (_r(3, 4),)),
    ("unary_domain", lambda x: torch.cat([torch.log(x), torch.log2(x), torch.log10(x),
                                          torch.log1p(x), torch.sqrt(x), torch.rsqrt(x),
                                          torch.reciprocal(x), torch.acosh(x + 1),
                                          torch.asin(x / 4), torch.acos(x / 4),
                                          torch.atanh(x / 4), torch.asinh(x)]),
     lambda: (torch.rand(3, 4) + 0.5,)),
    ("activations", lambda x: torch.cat([F.silu(x), F.gelu(x), F.gelu(x, approximate="tanh"),
                                         F.hardswish(x), F.hardsigmoid(x), F.mish(x),
                                         F.softplus(x), F.elu(x), F.selu(x), F.celu(x, 0.5),
                                         F.leaky_relu(x, 0.2), F.relu6(x * 4),
                                         F.hardtanh(x), torch.sigmoid(x), torch.tanh(x)]),
     lambda: (_r(3, 4) * 3,)),
    ("inplace_activations", lambda x: F.relu(F.silu(x.clone(), inplace=True), inplace=True)
     .mul_(2).add_(1).clamp_(-1, 3), lambda: (_r(2, 5),)),
    ("arithmetic_scalars", lambda x: torch.cat([x + 2, x - 1.5, 3 - x, x * 2, x / 4, 2 / x,
                                                x ** 2, x ** 3, 2 ** x, x.add(x, alpha=2),
                                                x.sub(x, alpha=0.5)]),
     lambda: (torch.rand(2, 3) + 0.5,)),
    ("int_arithmetic", lambda a, b: torch.stack([a + b, a * b, a // b, a % b, torch.fmod(-a, b),
                                                 torch.remainder(-a, b), a / b,
                                                 torch.div(-a, b, rounding_mode="trunc"),
                                                 torch.div(-a, b, rounding_mode="floor")]
                                                ).float(),
     lambda: (_i(20, 3, 4), _i(5, 3, 4) + 1)),
    ("float_mod", lambda a, b: torch.cat([torch.fmod(a, b), torch.remainder(a, b),
                                          torch.atan2(a, b), torch.maximum(a, b),
                                          torch.minimum(a, b)]),
     lambda: (_r(3, 4) * 5, _r(3, 4) + 2)),
    ("compare_where", lambda a, b: torch.cat([
        torch.where(a > b, a, b), torch.where(a < 0, a, 0.0), torch.where(a >= 0, 1.0, b),
        (a == b).float(), (a != 0.5).float(), (a <= b).float(),
        a.masked_fill(a < 0, -9.0), torch.clamp(a, min=-0.5), torch.clamp(a, max=0.5)]),
     lambda: (_r(3, 4), _r(3, 4))),
    ("logical_bitwise", lambda a, b: torch.stack([
        (a & b), (a | b), (a ^ b), ~a, torch.logical_and(a > 2, b > 2).long(),
        torch.logical_or(a > 2, b > 2).long(), torch.logical_xor(a > 2, b > 2).long(),
        torch.logical_not(a > 2).long(), ((a > 2) & (b > 2)).long()]),
     lambda: (_i(8, 3, 4), _i(8, 3, 4))),
    ("nan_inf", lambda x: torch.stack([torch.isnan(x), torch.isinf(x), torch.isfinite(x)]).int(),
     lambda: (torch.tensor([1.0, float("nan"), float("inf"), -float("inf")]),)),
    ("reductions", lambda x: torch.cat([
        x.sum(1), x.mean(0), x.amax(1), x.amin(0), x.prod(1), x.var(1), x.std(0),
        x.var(1, correction=0), x.max(1).values, x.min(0).values, x.logsumexp(1),
        torch.linalg.vector_norm(x, dim=1), x.sum().reshape(1), x.mean().reshape(1),
        x.max().reshape(1)]), lambda: (_r(4, 5),)),
    ("arg_reductions", lambda x: torch.cat([x.argmax(1), x.argmin(0), x.argmax().reshape(1),
                                            x.max(1).indices, (x > 0).any(1).long(),
                                            (x > -3).all(0).long(), (x > 0).sum(1)]),
     lambda: (_r(4, 5),)),
    ("scans_softmax", lambda x: torch.cat([x.cumsum(1), x.cumprod(0), x.softmax(1),
                                           x.log_softmax(0)]), lambda: (_r(3, 4),)),
    ("sort_topk", lambda x: torch.cat([t.reshape(-1) for t in (
        x.sort(1).values, x.sort(0, descending=True).values, x.topk(2, 1).values,
        x.topk(2, 0, largest=False).values, x.argsort(1).float(), x.topk(3).indices.float())]),
     lambda: (_r(4, 5),)),
    ("views", lambda x: torch.cat([
        x.view(2, 12).reshape(4, 6).flatten(), x.permute(2, 0, 1).reshape(-1),
        x.transpose(0, 2).reshape(-1), x.unsqueeze(1).squeeze(1).reshape(-1),
        x[:, None, 1:3].squeeze([1]).reshape(-1), x.unflatten(2, (2, 2)).reshape(-1),
        x.mT.reshape(-1), x.movedim(0, 2).reshape(-1)]), lambda: (_r(2, 3, 4),)),
    ("expand_repeat", lambda x: torch.cat([x.expand(3, 2, 4).reshape(-1),
                                           x.repeat(2, 1, 3).reshape(-1),
                                           x.repeat_interleave(2, dim=1).reshape(-1),
                                           x.flip(0, 2).reshape(-1), x.roll(1, 2).reshape(-1),
                                           x.roll((1, -1), (0, 2)).reshape(-1),
                                           x.roll(3).reshape(-1)]),
     lambda: (_r(1, 2, 4),)),
    ("split_unbind_chunk", lambda x: torch.cat([
        *x.split(2, 1), *x.split([1, 3, 1], 1), *[t.unsqueeze(1) for t in x.unbind(1)],
        *x.chunk(3, 1), *x.tensor_split(2, 1)], 1), lambda: (_r(3, 5),)),
    ("slicing", lambda x: torch.cat([x[1:, ::2].reshape(-1), x[-2:, 1:-1].reshape(-1),
                                     x[:, 2].reshape(-1), x[1].reshape(-1),
                                     x.narrow(1, 1, 2).reshape(-1),
                                     x.diagonal().reshape(-1), x.diagonal(1).reshape(-1),
                                     x.diagonal(-1).reshape(-1),
                                     torch.tril(x).reshape(-1), torch.triu(x, 1).reshape(-1)]),
     lambda: (_r(4, 5),)),
    ("gathers", lambda x, i: torch.cat([x.index_select(1, i[0]).reshape(-1),
                                        x.gather(1, i[:, :2]).reshape(-1),
                                        x[i[0]].reshape(-1), x[:, i[1]].reshape(-1),
                                        x[i[0], i[1]].reshape(-1), x[i[:2], 1:].reshape(-1),
                                        x[None, :, i[0]].reshape(-1),
                                        torch.take_along_dim(x, i[:, :2], 1).reshape(-1)]),
     lambda: (_r(4, 4), _i(4, 4, 3))),
    ("embedding", lambda w, i: F.embedding(i, w), lambda: (_r(10, 4), _i(10, 2, 3))),
    ("scatters", lambda x, i, s: torch.cat([
        x.scatter(1, i, s).reshape(-1), x.scatter(1, i, 2.5).reshape(-1),
        x.scatter_add(1, i, s).reshape(-1),
        x.scatter_reduce(1, i, s, "amax").reshape(-1),
        x.index_add(1, i[0], s).reshape(-1),
        torch.slice_scatter(x, s[:, :2], 1, 1, 3).reshape(-1),
        torch.select_scatter(x, x[0] * 2, 0, 2).reshape(-1)]),
     lambda: (_r(3, 4), torch.tensor([[0, 1], [2, 3], [1, 0]]), _r(3, 2))),
    ("inplace_slice_fill", _inplace_slice_fill, lambda: (_r(4, 6),)),
    ("index_put", _index_put, lambda: (_r(5, 3), torch.tensor([0, 2]))),
    ("creation", lambda x: torch.cat([
        torch.zeros_like(x), torch.ones_like(x), torch.full_like(x, 3.0), x.new_zeros(2, 4),
        x.new_ones(1, 4), x.new_full((1, 4), 2.0), torch.arange(4.0).expand(2, 4),
        torch.arange(1, 9, 2).float().reshape(1, 4), torch.linspace(0, 1, 4).reshape(1, 4),
        torch.eye(4)[:2], x.clone().fill_(5.0)]),
     lambda: (_r(2, 4),)),
    ("dtype_casts", lambda x, i: torch.cat([x.to(torch.int64).float(), i.float() + x,
                                            i.to(torch.float32).type_as(x),
                                            (x > 0).to(x.dtype), x.double().float()]),
     lambda: (_r(2, 3) * 4, _i(5, 2, 3))),
    ("copy_lift", lambda x: x.copy_(torch.tensor([1.0, 2.0, 3.0])) * 2,
     lambda: (_r(2, 3),)),
    ("matmul_family", lambda a, b, v: torch.cat([
        (a @ b).reshape(-1), torch.bmm(a, b).reshape(-1), (a[0] @ b[0]).reshape(-1),
        (a @ v).reshape(-1), (v @ b[0].T @ b[0]).reshape(-1), torch.addmm(v, a[0], b[0])
        .reshape(-1), torch.baddbmm(a @ b, a, b, beta=0.5, alpha=2).reshape(-1),
        torch.einsum("bij,bjk->bik", a, b).reshape(-1)]),
     lambda: (_r(2, 4, 4), _r(2, 4, 4), _r(4))),
    ("broadcast_matmul", lambda a, b: a @ b, lambda: (_r(2, 1, 3, 4), _r(3, 4, 5))),
    ("linear", lambda x, w, b: torch.cat([F.linear(x, w, b).reshape(-1),
                                          F.linear(x, w).reshape(-1)]),
     lambda: (_r(2, 3, 4), _r(5, 4), _r(5))),
    ("conv1d", lambda x, w, b: torch.cat([
        F.conv1d(x, w, b, stride=2, padding=1).reshape(-1),
        F.conv1d(x, w, padding="same").reshape(-1), F.conv1d(x, w, dilation=2).reshape(-1)]),
     lambda: (_r(1, 4, 11), _r(6, 4, 3), _r(6))),
    ("conv2d_groups", lambda x, w: F.conv2d(x, w, stride=(1, 2), padding=(2, 1), groups=2),
     lambda: (_r(1, 4, 8, 8), _r(6, 2, 3, 3))),
    ("conv3d", lambda x, w: F.conv3d(x, w, padding=1), lambda: (_r(1, 2, 4, 5, 5),
                                                                 _r(3, 2, 3, 3, 3))),
    ("conv_transpose", lambda x, w, w1: torch.cat([
        F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1).reshape(-1),
        F.conv_transpose1d(x[:, :, 0], w1, stride=2).reshape(-1)]),
     lambda: (_r(1, 4, 5, 5), _r(4, 3, 3, 3), _r(4, 2, 3))),
    ("pooling", lambda x: torch.cat([
        F.max_pool2d(x, 3, 2, 1).reshape(-1), F.avg_pool2d(x, 2).reshape(-1),
        F.avg_pool2d(x, 3, 2, 1, count_include_pad=False).reshape(-1),
        F.adaptive_avg_pool2d(x, (2, 3)).reshape(-1), F.adaptive_avg_pool2d(x, 1).reshape(-1),
        F.max_pool1d(x[:, :, 0], 2).reshape(-1), F.avg_pool1d(x[:, :, 0], 2).reshape(-1),
        F.adaptive_max_pool2d(x, 2).reshape(-1), F.max_pool2d(x, 2, ceil_mode=True)
        .reshape(-1)]), lambda: (_r(1, 3, 7, 7),)),
    ("norms", lambda x, w, b: torch.cat([
        F.layer_norm(x, (6,), w, b).reshape(-1), F.layer_norm(x, (4, 6)).reshape(-1),
        F.group_norm(x, 2, w[:4], b[:4]).reshape(-1),
        F.batch_norm(x, None, None, training=True).reshape(-1),
        F.rms_norm(x, (6,), w, 1e-5).reshape(-1),
        F.instance_norm(x).reshape(-1)]),
     lambda: (_r(2, 4, 4, 6), _r(6), _r(6))),
    ("attention", lambda q, k, v, m: torch.cat([
        F.scaled_dot_product_attention(q, k, v),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
        F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        F.scaled_dot_product_attention(q, k, v, attn_mask=m > 0, scale=0.3)]),
     lambda: (_r(1, 2, 5, 8), _r(1, 2, 5, 8), _r(1, 2, 5, 8), _r(5, 5))),
    ("attention_gqa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
     lambda: (_r(1, 4, 3, 8), _r(1, 2, 3, 8), _r(1, 2, 3, 8))),
    ("interpolate", lambda x: torch.cat([
        F.interpolate(x, scale_factor=2, mode="nearest").reshape(-1),
        F.interpolate(x, size=(7, 5), mode="nearest").reshape(-1),
        F.interpolate(x, scale_factor=2, mode="bilinear").reshape(-1),
        F.interpolate(x, size=(7, 5), mode="bilinear", align_corners=True).reshape(-1),
        F.interpolate(x, size=(6, 9), mode="bicubic").reshape(-1),
        F.interpolate(x, size=(7, 5), mode="nearest-exact").reshape(-1),
        F.interpolate(x[:, :, 0], size=9, mode="linear").reshape(-1),
        F.interpolate(x, scale_factor=3).reshape(-1)]), lambda: (_r(1, 2, 4, 3),)),
    ("pad", lambda x: torch.cat([
        F.pad(x, (1, 2)).reshape(-1), F.pad(x, (1, 1, 2, 0), value=3.0).reshape(-1),
        F.pad(x, (2, 1, 1, 2), mode="reflect").reshape(-1),
        F.pad(x, (2, 1, 1, 2), mode="replicate").reshape(-1),
        F.pad(x, (-1, 1)).reshape(-1)]), lambda: (_r(1, 2, 4, 5),)),
    ("pixel_shuffle", lambda x: torch.cat([F.pixel_shuffle(x, 2).reshape(-1),
                                           F.pixel_unshuffle(x, 2).reshape(-1)]),
     lambda: (_r(1, 8, 4, 6),)),
    ("grid_sample", lambda x, g: F.grid_sample(x, g, align_corners=False),
     lambda: (_r(1, 2, 5, 6), torch.rand(1, 3, 4, 2) * 2 - 1)),
    ("prelu_dropout", lambda x, a: F.dropout(F.prelu(x, a), 0.5, training=False),
     lambda: (_r(2, 3, 4), torch.tensor([0.1, 0.2, 0.3]))),
    ("stack_misc", lambda x: torch.cat([torch.stack([x, x * 2], 1).reshape(-1),
                                        torch.diff(x, dim=1).reshape(-1),
                                        torch.addcmul(x, x, x, value=0.5).reshape(-1),
                                        torch.lerp(x, x * 3, 0.25).reshape(-1),
                                        torch.square(x).reshape(-1)]), lambda: (_r(3, 4),)),
    ("dict_outputs", lambda x: {"double": x * 2, "pair": (x + 1, x.sum())},
     lambda: (_r(2, 3),)),
]


def _flat(value: Any) -> list[np.ndarray]:
    leaves = torch.utils._pytree.tree_leaves(value)
    return [leaf.detach().numpy() for leaf in leaves]


def _check(fn: Callable[..., Any], make_inputs: Callable[[], tuple[Any, ...]],
           decompose: bool) -> None:
    torch.manual_seed(0)
    inputs = make_inputs()
    module = Fn(fn).eval()
    with torch.no_grad():
        expected = _flat(module(*[x.clone() for x in inputs]))
    program = torch.export.export(module, tuple(x.clone() for x in inputs))
    if decompose:
        with warnings.catch_warnings():  # torch's own pytree deprecations
            warnings.simplefilter("ignore", FutureWarning)
            program = program.run_decompositions()
    result = import_program(program)
    assert_fully_spanned(result)
    names = [p.name_hint for p in result.mod["main"].params]
    actual = run_module(result.mod, dict(zip(names, [x.numpy() for x in inputs])))
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.astype(want.dtype), want, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("decompose", [False, True], ids=["export", "decomposed"])
def test_op_matches_torch(case: tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]]],
                          decompose: bool) -> None:
    _check(case[1], case[2], decompose)
