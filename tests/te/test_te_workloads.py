"""Every snapshot of a realistic schedule lowers and computes the numpy result."""

from __future__ import annotations

import numpy as np
import pytest
from te_workload_defs import WORKLOADS

import engine as tvm
from engine.tir.eval import run


def _evaluate(sch, args, inputs) -> np.ndarray:
    out = np.zeros([int(d) for d in args[-1].shape], dtype=args[-1].dtype)
    run(tvm.lower(sch, args), *inputs, out)
    return out


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_snapshot_matches_numpy(name: str) -> None:
    s, args, inputs, expected = WORKLOADS[name]()
    record = s.schedule_record
    assert len(record) == len(s.primitive_record) > 3
    for k, snapshot in enumerate(record):
        got = _evaluate(snapshot, args, inputs)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name} snapshot {k} ({s.primitive_record[k]})")


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_final_schedule_has_its_loop_kinds(name: str) -> None:
    s, args, _, _ = WORKLOADS[name]()
    text = str(tvm.lower(s, args))
    assert '"parallel"' in text or name == "conv2d_strided"
    assert '"vectorized"' in text


def test_conv_cache_is_allocated_inside_the_tile() -> None:
    s, args, _, _ = WORKLOADS["conv2d"]()
    lines = [str(line).strip() for line in tvm.lower(s, args)["main"].lines()]
    alloc = next(i for i, t in enumerate(lines) if t.startswith("allocate conv.global"))
    assert "float32[1, 4, 1, 3]" in lines[alloc]
    assert lines[alloc - 1].startswith("for (x.outer")


def test_strided_pad_region_follows_the_stride() -> None:
    s, args, _, _ = WORKLOADS["conv2d_strided"]()
    text = str(tvm.lower(s, args))
    # two output rows at stride 2 with a 3-tall window read 5 padded rows
    assert 'allocate data_pad: float32[1, 4, 5, 11], "global"' in text
