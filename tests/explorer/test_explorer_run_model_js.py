"""static/src/run-model.js folds run_queued: queued with its position until run_started,
not queued once the run ends (checked with node on the ES module itself)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

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


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_run_model_is_queued_until_run_started():
    module = (ROOT / "static" / "src" / "run-model.js").as_uri()
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT, module],
                          capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [
        [True, "queued · 2nd in line", False],
        [False, None, 4],
        [False, None, "cancelled"],
    ]
