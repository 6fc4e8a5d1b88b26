"""Schedule records: the seed's gemm example, the config switch, replay and Python."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import te
from engine.te.errors import LoweringError, ScheduleError
from engine.tir.eval import run


def _gemm(m: int = 1024, k: int = 1024, n: int = 1024):
    kk = te.reduce_axis((0, k), "k")
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    C = te.compute((m, n), lambda x, y: te.sum(A[x, kk] * B[kk, y], axis=kk), name="C")
    return A, B, C, kk


def _seed_schedule(C, k, block: int = 32, factor: int = 8):
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], block, block)
    ko, ki = s[C].split(k, factor=factor)
    s[C].reorder(mo, ko, no, mi, ki, ni)
    s[C].vectorize(ni)
    s[C].parallel(mo)
    return s


def test_seed_gemm_example_records_every_primitive() -> None:
    with tvm.transform.PassContext(config={"te.keep_schedule_record": True}):
        A, B, C, k = _gemm()
        s = te.create_schedule(C.op)
        # no primitive applied yet: the record holds the vanilla schedule only
        assert len(s.schedule_record) == 1
        block_size, factor = 32, 8
        # tile -> split + split + reorder
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], block_size, block_size)
        ko, ki = s[C].split(k, factor=factor)
        s[C].reorder(mo, ko, no, mi, ki, ni)
        s[C].vectorize(ni)
        s[C].parallel(mo)
        assert len(s.schedule_record) == 8
        expected_names = ["vanilla", "split", "split", "reorder", "split", "reorder",
                          "vectorize", "parallel"]
        for i in range(len(s.schedule_record)):
            assert s.primitive_record[i] == expected_names[i]


def test_record_is_empty_when_the_config_is_off() -> None:
    with tvm.transform.PassContext(config={"te.keep_schedule_record": False}):
        _, _, C, k = _gemm()
        s = _seed_schedule(C, k)
    assert len(s.schedule_record) == 0
    assert s.primitive_record == []
    assert list(s.schedule_record) == []


def test_snapshot_k_is_the_schedule_after_k_steps() -> None:
    A, B, C, k = _gemm(64, 64, 64)
    s = _seed_schedule(C, k)
    leaves = [[iv.name for iv in snap[C].leaf_iter_vars] for snap in s.schedule_record]
    assert leaves[0] == ["x", "y", "k"]
    assert leaves[1] == ["x.outer", "x.inner", "y", "k"]
    assert leaves[3] == ["x.outer", "y.outer", "x.inner", "y.inner", "k"]
    assert leaves[7] == ["x.outer", "k.outer", "y.outer", "x.inner", "k.inner", "y.inner"]
    assert str(tvm.lower(s.schedule_record[-1], [A, B, C])) == str(tvm.lower(s, [A, B, C]))
    assert '"parallel"' not in str(tvm.lower(s.schedule_record[6], [A, B, C]))


def test_snapshots_replay_steps_instead_of_copying() -> None:
    _, _, C, k = _gemm(64, 64, 64)
    s = _seed_schedule(C, k)
    assert len(s.steps) == 7
    assert all(isinstance(arg, (int, str, type(None), tuple, list)) or
               type(arg).__module__ == "engine.te.record" for st in s.steps for arg in st.args)
    snap = s.schedule_record[4]
    assert snap is not s and len(snap.steps) == 4
    assert snap.primitive_record == s.primitive_record[:5]


def test_record_prints_python_that_reproduces_the_schedule() -> None:
    A, B, C, k = _gemm(48, 40, 36)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[CC].compute_at(s[C], no)
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=8)
    s[CC].vectorize(s[CC].op.axis[1])
    s[C].parallel(s[C].fuse(mo, no))
    source = s.record_as_python()
    assert source.splitlines()[0] == "s = te.create_schedule([C.op])"
    assert "C_global = s.cache_write(C, 'global')" in source
    namespace = {"te": te, "A": A, "B": B, "C": C}
    exec(source, namespace)
    rebuilt = namespace["s"]
    assert rebuilt.primitive_record == s.primitive_record
    assert str(tvm.lower(rebuilt, [A, B, C])) == str(tvm.lower(s, [A, B, C]))
    a, b = np.ones((48, 40), "float32"), np.full((40, 36), 2.0, "float32")
    c = np.zeros((48, 36), "float32")
    run(tvm.lower(rebuilt, [A, B, C]), a, b, c)
    np.testing.assert_allclose(c, a @ b)


def test_spans_follow_the_schedule_into_snapshots_and_statements() -> None:
    from engine.ir.span import layer_span

    A, B, C, k = _gemm(8, 8, 8)
    s = _seed_schedule(C, k, block=4, factor=4)
    s.spans = layer_span("dense_1")
    snap = s.schedule_record[2]
    assert snap.spans == layer_span("dense_1")
    func = tvm.lower(snap, [A, B, C])["main"]
    assert func.span == layer_span("dense_1")
    assert func.body.span == layer_span("dense_1")


def test_lines_map_back_to_stage_and_iter_var() -> None:
    A, B, C, k = _gemm(64, 64, 64)
    s = _seed_schedule(C, k)
    lines = tvm.lower(s, [A, B, C])["main"].lines()
    loop = next(line for line in lines if line.text.startswith("for (k.outer"))
    assert (loop.origin.stage, loop.origin.iter_var, loop.origin.role) == ("C", "k.outer", "loop")
    init = next(line for line in lines if line.origin.role == "init" and "=" in line.text)
    assert init.text.endswith("= 0f32")
    assert loop.origin.stage_index == 2


def test_primitive_errors_are_typed_and_not_recorded() -> None:
    _, _, C, k = _gemm(16, 16, 16)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    with pytest.raises(ScheduleError, match="not a leaf"):
        s[C].split(C.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match="not adjacent"):
        s[C].fuse(xo, C.op.axis[1])
    with pytest.raises(ScheduleError, match="exactly one"):
        s[C].split(xi, factor=2, nparts=2)
    with pytest.raises(ScheduleError, match="before split"):
        s.cache_write(C, "local")
    assert s.primitive_record == ["vanilla", "split"]


def test_reading_a_tensor_computed_in_an_unrelated_loop_is_an_error() -> None:
    x = te.placeholder((4, 6), name="x")
    k = te.reduce_axis((0, 6), name="k")
    mx = te.compute((4,), lambda i: te.max(x[i, k], axis=k), name="mx")
    sub = te.compute((4, 6), lambda i, j: x[i, j] - mx[i], name="sub")
    out = te.compute((4, 6), lambda i, j: sub[i, j] * 2.0, name="out")
    s = te.create_schedule(out.op)
    s[mx].compute_at(s[out], out.op.axis[0])
    with pytest.raises(LoweringError, match="does not enclose sub"):
        tvm.lower(s, [x, out])
