"""Lowering corner cases, each checked by running the loop nest against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import te, tir
from engine.tir.eval import run


def _run(s, args, *inputs):
    out = np.zeros([int(d) for d in args[-1].shape], dtype=args[-1].dtype)
    run(tvm.lower(s, args), *inputs, out)
    return out


def _elementwise(shape=(7, 10)):
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return A, B, np.arange(np.prod(shape), dtype="float32").reshape(shape)


def test_nparts_split_and_fuse_of_non_dividing_loops() -> None:
    A, B, a = _elementwise()
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    outer, inner = s[B].split(fused, nparts=3)
    s[B].parallel(outer)
    text = str(tvm.lower(s, [A, B]))
    assert "for (i.j.fused.outer: int32, 0, 3)" in text
    assert "likely(i.j.fused.outer*24 + i.j.fused.inner < 70)" in text
    np.testing.assert_allclose(_run(s, [A, B], a), a * 2 + 1)


def test_bind_to_thread_axes_runs_serially() -> None:
    A, B, a = _elementwise()
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(s[B].fuse(*B.op.axis), factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    text = str(tvm.lower(s, [A, B]))
    assert '"thread_binding(blockIdx.x)"' in text and '"thread_binding(threadIdx.x)"' in text
    np.testing.assert_allclose(_run(s, [A, B], a), a * 2 + 1)


def test_symbolic_shapes_bind_from_the_arrays() -> None:
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + A[i, 3 - j], name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=3)
    a = np.arange(20, dtype="float32").reshape(5, 4)
    np.testing.assert_allclose(_run_symbolic(s, [A, B], a), a + a[:, ::-1])


def _run_symbolic(s, args, a):
    out = np.zeros_like(a)
    run(tvm.lower(s, args), a, out)
    return out


def test_deep_nests_beyond_pythons_block_limit() -> None:
    shape = (2,) * 10
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda *i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    for axis in B.op.axis:
        s[B].split(axis, factor=1)
    assert str(tvm.lower(s, [A, B])).count("for (") == 20
    a = np.random.default_rng(0).standard_normal(shape).astype("float32")
    np.testing.assert_allclose(_run(s, [A, B], a), a + 1)


def test_reduction_with_where_and_custom_reducer() -> None:
    A = te.placeholder((6, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    P = te.compute((6,), lambda i: prod(A[i, k], axis=k, where=k % 2 == 0), name="P")
    s = te.create_schedule(P.op)
    ko, ki = s[P].split(k, factor=3)
    s[P].reorder(ko, P.op.axis[0], ki)
    a = np.random.default_rng(1).uniform(0.5, 1.5, (6, 8)).astype("float32")
    np.testing.assert_allclose(_run(s, [A, P], a), a[:, ::2].prod(axis=1), rtol=1e-5)


def test_cache_read_into_a_local_tile() -> None:
    A = te.placeholder((9, 9), name="A")
    B = te.compute((9, 9), lambda i, j: A[j, i] - A[i, j], name="B")
    s = te.create_schedule(B.op)
    AL = s.cache_read(A, "local", [B])
    io, jo, ii, ji = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 4)
    s[AL].compute_at(s[B], jo)
    text = str(tvm.lower(s, [A, B]))
    assert 'allocate A.local: float32[9, 9], "local"' in text  # reads both A[i,j] and A[j,i]
    a = np.random.default_rng(2).standard_normal((9, 9)).astype("float32")
    np.testing.assert_allclose(_run(s, [A, B], a), a.T - a)
    assert s.primitive_record[1] == "cache_read"


def test_if_then_else_only_reads_the_branch_taken() -> None:
    A = te.placeholder((5,), name="A")
    B = te.compute((7,), lambda i: te.if_then_else(i < 5, A[te.min(i, 4)], -1.0), name="B")
    B2 = te.compute((7,), lambda i: te.if_then_else(tir.all(i >= 1, i < 6), A[i - 1], 0.0),
                    name="B2")
    a = np.arange(5, dtype="float32")
    for out, expected in ((B, [0, 1, 2, 3, 4, -1, -1]), (B2, [0, 0, 1, 2, 3, 4, 0])):
        s = te.create_schedule(out.op)
        np.testing.assert_allclose(_run(s, [A, out], a), expected)


def test_compute_inline_rejects_reductions_and_outputs() -> None:
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    R = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="R")
    out = te.compute((4,), lambda i: R[i] + 1.0, name="out")
    s = te.create_schedule(out.op)
    with pytest.raises(te.ScheduleError, match="not an injective"):
        s[R].compute_inline()
    with pytest.raises(te.ScheduleError, match="is an output"):
        s[out].compute_inline()


def test_missing_input_in_args_is_a_clear_error() -> None:
    A, B, _ = _elementwise()
    s = te.create_schedule(B.op)
    with pytest.raises(te.LoweringError, match="tensor A is read"):
        tvm.lower(s, [B])


def test_an_input_nothing_reads_is_still_a_parameter() -> None:
    # a fused function that takes a whole tuple and reads one field of it (GPT-2's
    # split q/k/v): the other fields are parameters of the kernel all the same
    A, B, a = _elementwise()
    unread = te.placeholder((3,), name="unread")
    s = te.create_schedule(B.op)
    func = tvm.lower(s, [unread, A, B])
    assert "unread" in str(func)
    out = np.zeros_like(a)
    run(func, np.ones(3, "float32"), a, out)
    np.testing.assert_allclose(out, a * 2 + 1)
    with pytest.raises(te.LoweringError, match="listed twice"):
        tvm.lower(s, [unread, unread, A, B])


def test_nested_reduction_is_rejected_at_compute() -> None:
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(te.TEError, match="whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0, name="bad")
