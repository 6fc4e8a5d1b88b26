"""LowerTE reports its progress to the instruments (`run_progress`: fused calls done of all,
the kernel), and an instrument that raises there stops the build between kernels."""

from __future__ import annotations

from typing import Any

import pytest

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument


def _chain(blocks: int) -> relay.Function:
    """`blocks` fused groups (conv + relu, each shape its own) separated by pools."""
    x = relay.var("x", shape=(1, 2, 2 ** (blocks + 1), 2 ** (blocks + 1)))
    y: relay.Expr = x
    for _ in range(blocks):
        y = relay.nn.relu(relay.nn.conv2d(y, relay.var("w", shape=(2, 2, 1, 1))))
        y = relay.nn.max_pool2d(y, (2, 2), (2, 2))
    return relay.Function(relay.analysis.free_vars(y), y)


class Progress(PassInstrument):
    def __init__(self, stop_after: int | None = None) -> None:
        self.seen: list[tuple[str, int, int, str]] = []
        self.stop_after = stop_after

    def run_progress(self, info: Any, done: int, total: int, item: str) -> None:
        self.seen.append((info.name, done, total, item))
        if self.stop_after is not None and done >= self.stop_after:
            raise KeyboardInterrupt("stop")  # any exception: this one is not a PassError


def test_lower_te_reports_every_fused_call() -> None:
    progress = Progress()
    with tvm.transform.PassContext(opt_level=3, instruments=[progress]):
        lib = relay.build(_chain(3), target="llvm")
    kernels = lib.build_module.lowered
    assert {name for name, *_ in progress.seen} == {"LowerTE"}
    assert [(done, total) for _, done, total, _ in progress.seen] == [(k, 6) for k in range(7)]
    assert progress.seen[0][3] == "" and {s[3] for s in progress.seen[1:]} == set(kernels)


def test_an_instrument_raising_in_run_progress_stops_the_build_between_kernels() -> None:
    progress = Progress(stop_after=2)
    with pytest.raises(KeyboardInterrupt), tvm.transform.PassContext(
            opt_level=3, instruments=[progress]):
        relay.build(_chain(3), target="llvm")
    assert [done for _, done, _, _ in progress.seen] == [0, 1, 2]


def test_report_progress_outside_a_pass_is_a_no_op() -> None:
    progress = Progress(stop_after=0)
    with tvm.transform.PassContext(instruments=[progress]) as ctx:
        ctx.report_progress(1, 2, "x")
    assert progress.seen == []
