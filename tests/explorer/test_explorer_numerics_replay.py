"""The numerics bisection's replay (explorer/runs/numerics.py): a pipeline replayed on the
module before one pass runs that pass alone, numbered as the recorded run numbered it,
also when it sits inside nested Sequentials; StopAfter stops right after a pass."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument
from explorer.runs.numerics import PassTree, Replay, StopAfter, run_until


class _Record(PassInstrument):
    """(index, name, parent, module before) of every pass, numbered as the recorder does."""

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[tuple[int, str, int | None, Any]] = []
        self.stack: list[int] = []

    def run_before_pass(self, mod: Any, info: Any) -> None:
        index = len(self.passes)
        self.passes.append((index, str(info.name), self.stack[-1] if self.stack else None, mod))
        self.stack.append(index)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        self.stack.pop()


def _model() -> tvm.IRModule:
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.const(np.random.default_rng(0).standard_normal((4, 4, 3, 3)).astype("float32"))
    scale = relay.const((np.arange(4) + 1.0).astype("float32").reshape(4, 1, 1))
    y = relay.multiply(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1)),
                       scale)
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(y)))


def _stages() -> list[Any]:
    return [relay.transform.InferType(),
            tvm.transform.Sequential([relay.transform.SimplifyExpr(),
                                      relay.transform.FoldScaleAxis(),
                                      relay.transform.FuseOps()], opt_level=0)]


@pytest.mark.parametrize("name", ["BackwardFoldScaleAxis", "FuseOps", "InferType"])
def test_replay_runs_the_target_alone_as_the_pipeline_did(name: str) -> None:
    recorder = _Record()
    mod = _model()
    after: dict[int, Any] = {}

    class _After(PassInstrument):
        def run_after_pass(self, out: Any, info: Any) -> None:
            after[recorder.stack[-1]] = out

    with tvm.transform.PassContext(opt_level=3, instruments=[_After(), recorder]):
        for stage in _stages():
            mod = stage(mod)
    tree = PassTree({index: parent for index, _, parent, _ in recorder.passes})
    target, _, _, before = next(p for p in recorder.passes if p[1] == name)
    replay = Replay(target, tree)
    ctx = tvm.transform.PassContext(opt_level=3, instruments=[replay, _Record()])
    out = run_until(before, _stages(), ctx)
    tvm.ir.assert_structural_equal(out, after[target])
    ran = ctx.instruments[1].passes
    assert [p[1] for p in ran][-1] == name
    assert {p[1] for p in ran} <= {name, "sequential", "FoldScaleAxis", "InferType"}


def test_stop_after_stops_at_that_pass() -> None:
    ctx = tvm.transform.PassContext(opt_level=3, instruments=[StopAfter(2)])
    out = run_until(_model(), _stages(), ctx)
    assert out is not None
    with pytest.raises(LookupError, match="did not reach"):
        run_until(_model(), [relay.transform.InferType()],
                  tvm.transform.PassContext(instruments=[StopAfter(5)]))


def test_subtree_size_counts_the_passes_inside() -> None:
    tree = PassTree({0: None, 1: None, 2: 1, 3: 2, 4: 2, 5: 1, 6: None})
    assert [tree.subtree_size(i) for i in range(7)] == [1, 5, 3, 1, 1, 1, 1]
    assert tree.ancestors(4) == {1, 2}
