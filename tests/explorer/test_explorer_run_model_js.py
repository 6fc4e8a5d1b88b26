"""static/src/run-model.js folds run_queued: queued with its position until run_started,
not queued once the run ends (checked with node on the ES module itself)."""

from __future__ import annotations

import json
from pathlib import Path

from explorer_helpers import NEEDS_NODE, run_model_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import(process.argv[1]).then(({ RunModel }) => {
  const out = [];
  const m = new RunModel("r");
  m.apply({ index: 0, type: "run_queued", data: { position: 2, max_concurrent: 1 } });
  out.push([m.queued, m.queueLabel(), m.finished]);
  m.apply({ index: 1, type: "run_started", data: { initial_snapshot: 3, num_passes_planned: 4 } });
  out.push([m.queued, m.queueLabel(), m.planned]);
  const c = new RunModel("c");
  c.apply({ index: 0, type: "run_queued", data: { position: 1, max_concurrent: 1 } });
  c.apply({ index: 1, type: "run_cancelled", data: {} });
  out.push([c.queued, c.queueLabel(), c.status]);
  console.log(JSON.stringify(out));
});
"""


@NEEDS_NODE
def test_run_model_is_queued_until_run_started():
    assert run_model_script(SCRIPT) == [
        [True, "queued · 2nd in line", False],
        [False, None, 4],
        [False, None, "cancelled"],
    ]


LEAF_SCRIPT = """
import(process.argv[1]).then(({ RunModel }) => {
  const events = JSON.parse(process.argv[2]);
  const m = new RunModel("r");
  const out = [];
  for (const ev of events) {
    m.apply(ev);
    out.push([m.doneCount(), m.runningPass()?.name ?? null]);
  }
  console.log(JSON.stringify({ steps: out, leaves: m.leafRows().map((r) => r.name),
    planned: m.planned, plan: m.plan.map((p) => p.name), build: m.build }));
});
"""


def _leaf_run_events() -> list[dict[str, object]]:
    """A Sequential (index 0) around two passes, built with the protocol's builders."""
    from explorer import protocol as p

    def finished(index: int, name: str, depth: int, parent: int | None, leaf: bool) -> object:
        return p.pass_finished(
            pass_index=index, name=name, opt_level=0, depth=depth, parent_index=parent,
            before=1, after=2, changed=True, leaf=leaf, elapsed_ms=1.0, span_coverage=1.0,
            stats=p.pass_stats(nodes=1, nodes_delta=0), numerics=None)

    plan = [p.planned_pass(name=n, depth=1, opt_level=0) for n in ("A", "B")]
    data = [
        (p.RUN_STARTED, p.run_started(options=p.RunOptions().to_json(), initial_snapshot=1,
                                      num_passes_planned=2, plan=plan)),
        (p.PASS_STARTED, p.pass_started(pass_index=0, name="Seq", opt_level=0, depth=0,
                                        parent_index=None)),
        (p.PASS_STARTED, p.pass_started(pass_index=1, name="A", opt_level=0, depth=1,
                                        parent_index=0)),
        (p.PASS_FINISHED, finished(1, "A", 1, 0, True)),
        (p.PASS_STARTED, p.pass_started(pass_index=2, name="B", opt_level=0, depth=1,
                                        parent_index=0)),
        (p.PASS_FINISHED, finished(2, "B", 1, 0, True)),
        (p.PASS_FINISHED, finished(0, "Seq", 0, None, False)),
        (p.BUILD_STARTED, p.build_started()),
        (p.BUILD_FINISHED, p.build_finished(num_nodes=3, num_kernels=2)),
    ]
    return [{"index": i, "type": t, "data": d} for i, (t, d) in enumerate(data)]


@NEEDS_NODE
def test_run_model_counts_the_passes_the_server_marks_leaf():
    got = run_model_script(LEAF_SCRIPT, json.dumps(_leaf_run_events()))
    assert got["steps"] == [[0, None], [0, "Seq"], [0, "A"], [1, "Seq"], [1, "B"], [2, "Seq"],
                            [2, None], [2, None], [2, None]]
    assert got["leaves"] == ["A", "B"]
    assert (got["planned"], got["plan"]) == (2, ["A", "B"])
    assert got["build"] == {"num_nodes": 3, "num_kernels": 2}


PAUSE_SCRIPT = """
import(process.argv[1]).then(({ RunModel }) => {
  const m = new RunModel("r");
  const out = [];
  const paused = { pass_index: 2, name: "FuseOps", when: "before", snapshot: 7,
    reason: "breakpoint before FuseOps", breakpoint: { kind: "before", target: "FuseOps" }, layers: [] };
  m.apply({ index: 0, type: "run_started", data: { initial_snapshot: 3, num_passes_planned: 4 } });
  m.apply({ index: 1, type: "run_paused", data: paused });
  out.push([m.paused?.name ?? null, m.paused?.eventIndex ?? null, m.finished]);
  m.apply({ index: 2, type: "run_resumed", data: { action: "continue" } });
  out.push([m.paused, m.finished]);
  m.apply({ index: 3, type: "run_paused", data: { ...paused, when: "after" } });
  m.apply({ index: 4, type: "run_cancelled", data: { message: null } });
  out.push([m.paused, m.status]);
  console.log(JSON.stringify(out));
});
"""


@NEEDS_NODE
def test_run_model_is_paused_from_run_paused_until_run_resumed_or_the_end():
    assert run_model_script(PAUSE_SCRIPT) == [["FuseOps", 1, False], [None, False],
                                       [None, "cancelled"]]
