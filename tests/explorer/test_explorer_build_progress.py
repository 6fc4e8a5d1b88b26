"""Build progress over the socket (build_started, build_progress: calls lowered of all,
kernels so far) and cancel between kernels; kernels shared by identical calls, their
steps made when first opened."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import build_gate
import pytest
from explorer_helpers import (
    NEEDS_NODE,
    PLUGIN,
    collect_until,
    run_model_script,
    start,
    subscribe,
    terminal,
    upload,
)

from explorer import socketio_of
from explorer.protocol import BUILD_PROGRESS, BUILD_STARTED, NAMESPACE
from explorer.runs.build_progress import BuildProgressInstrument
from explorer.runs.kernel_steps import steps_key
from explorer.runs.recording import RunCancelledError
from explorer.testing import app_for_tests

ROOT = Path(__file__).resolve().parents[2]

# dense+relu, dense+sigmoid, dense+relu: three fused calls, two kernels (the first and
# last calls are the same function); the sigmoid's kernel is where the build gate holds.
THREE_CALLS = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8), float32], %w1: Tensor[(8, 8), float32],
          %w2: Tensor[(8, 8), float32], %w3: Tensor[(8, 8), float32]) {
  %0 = nn.dense(%x, %w1, units=8) /* fc1 */;
  %1 = nn.relu(%0) /* relu1 */;
  %2 = nn.dense(%1, %w2, units=8) /* fc2 */;
  %3 = sigmoid(%2) /* gate */;
  %4 = nn.dense(%3, %w3, units=8) /* fc3 */;
  nn.relu(%4) /* relu3 */
}
"""


@pytest.fixture()
def gated_app(data_dir: Path) -> Iterator[Any]:
    build_gate.disarm()
    with app_for_tests(data_dir, (PLUGIN, "build_gate")) as app:
        yield app
    build_gate.disarm()


@pytest.fixture()
def gated_sock(gated_app: Any) -> Iterator[Any]:
    client = socketio_of(gated_app).test_client(gated_app, namespace=NAMESPACE)
    yield client
    if client.is_connected(NAMESPACE):
        client.disconnect(namespace=NAMESPACE)


def _of(events: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return [e for e in events if e["run_id"] == run_id]


def _ended(run_id: str) -> Any:
    return lambda events: terminal(_of(events, run_id))


def test_progress_is_published_per_percent_and_cancel_stops_it() -> None:
    published: list[tuple[str, dict[str, Any]]] = []
    cancel = threading.Event()
    progress = BuildProgressInstrument(lambda t, d: published.append((t, dict(d))), cancel)
    for done in range(1001):
        progress.run_progress(None, done, 1000, "" if done == 0 else f"k{done % 3}")
    assert [t for t, _ in published].count(BUILD_STARTED) == 1
    done = [d["done"] for t, d in published if t == BUILD_PROGRESS]
    assert done == list(range(0, 1001, 10))  # one per percent, the first and the last
    assert published[-1][1]["kernels"] == 3
    small: list[tuple[str, dict[str, Any]]] = []
    few = BuildProgressInstrument(lambda t, d: small.append((t, dict(d))), cancel=threading.Event())
    for k in range(4):
        few.run_progress(None, k, 3, "k")
    assert [d["done"] for t, d in small if t == BUILD_PROGRESS] == [0, 1, 2, 3]
    cancel.set()
    with pytest.raises(RunCancelledError):
        progress.run_progress(None, 1, 3, "k0")


def test_a_build_streams_its_progress_and_shares_kernels(gated_app: Any,
                                                          gated_sock: Any) -> None:
    client = gated_app.test_client()
    session = upload(client, THREE_CALLS, "three.relay")
    run_id = start(gated_sock, session["id"], build=True)
    subscribe(gated_sock, run_id)
    events = _of(collect_until(gated_sock, _ended(run_id), timeout=120), run_id)
    assert events[-1]["type"] == "run_finished", events[-1]
    types = [e["type"] for e in events]
    first, last = types.index(BUILD_STARTED), len(types) - 1 - types[::-1].index(BUILD_PROGRESS)
    lowering = next(e for e in events if e["type"] == "pass_started"
                    and e["data"]["name"] == "LowerTE")
    assert lowering["index"] < first < types.index(BUILD_PROGRESS) <= last
    progress = [e["data"] for e in events if e["type"] == BUILD_PROGRESS]
    assert progress[0] == {"done": 0, "total": 3, "kernels": 0, "kernel": ""}
    assert [p["done"] for p in progress] == [0, 1, 2, 3]
    assert (progress[-1]["done"], progress[-1]["total"], progress[-1]["kernels"]) == (3, 3, 2)
    finished = next(e["data"] for e in events if e["type"] == "build_finished")
    assert finished["num_kernels"] == 2

    kernels = client.get(f"/api/runs/{run_id}/schedules").get_json()["nodes"]
    shared = next(k for k in kernels if k["num_calls"] == 2)
    assert sorted(shared["spans"]) == ["fc1", "fc3", "relu1", "relu3"]
    assert gated_app.extensions["explorer"].store.artifact(
        run_id, steps_key(shared["func_name"])) is None  # not made until opened
    calls = client.get(f"/api/runs/{run_id}/schedules/{shared['index']}").get_json()
    second = calls["node"]["calls"][1]
    assert sorted(second["spans"]) == ["fc3", "relu3"]
    detail = client.get(f"/api/runs/{run_id}/schedules/{second['index']}").get_json()
    assert detail["node"]["func_name"] == shared["func_name"]
    assert len(detail["steps"]) == shared["num_steps"] > 1
    assert detail["steps"] == calls["steps"]
    assert gated_app.extensions["explorer"].store.artifact(
        run_id, steps_key(shared["func_name"])) == detail["steps"]


def test_cancel_stops_the_build_between_kernels_and_leaves_other_runs_alone(
        gated_app: Any, gated_sock: Any) -> None:
    client = gated_app.test_client()
    held = upload(client, THREE_CALLS, "three.relay")
    other = upload(client)
    build_gate.arm()
    run_id = start(gated_sock, held["id"], build=True)
    subscribe(gated_sock, run_id)
    assert build_gate.BUILD_GATE_REACHED.wait(timeout=120), "the build never reached the gate"
    other_run = start(gated_sock, other["id"], build=True)  # runs while the first is held
    subscribe(gated_sock, other_run)
    ack = gated_sock.emit("cancel_run", {"run_id": run_id}, namespace=NAMESPACE, callback=True)
    assert ack == {"ok": True}
    events = collect_until(gated_sock, lambda ev: _ended(run_id)(ev) and _ended(other_run)(ev),
                           timeout=120)
    mine, theirs = _of(events, run_id), _of(events, other_run)
    assert mine[-1]["type"] == "run_cancelled", mine[-1]
    assert theirs[-1]["type"] == "run_finished", theirs[-1]
    types = [e["type"] for e in mine]
    assert BUILD_STARTED in types and "build_finished" not in types
    # the first call lowered; the gated second one finished lowering, then the cancel
    # stopped the build before the third
    assert [e["data"]["done"] for e in mine if e["type"] == BUILD_PROGRESS] == [0, 1]
    summary = client.get(f"/api/runs/{run_id}").get_json()["run"]
    assert summary["status"] == "cancelled"
    assert client.get(f"/api/runs/{run_id}/schedules").get_json() == {"nodes": []}
    assert client.get(f"/api/runs/{other_run}/schedules").get_json()["nodes"]


PROGRESS_SCRIPT = """
import(process.argv[1]).then(({ RunModel }) => {
  const m = new RunModel("r");
  const labels = [];
  for (const ev of JSON.parse(process.argv[2])) {
    m.apply(ev);
    labels.push(m.buildProgressLabel());
  }
  console.log(JSON.stringify({ labels, build: m.build, status: m.status }));
});
"""


@NEEDS_NODE
def test_the_run_model_shows_the_build_progress_until_the_run_ends() -> None:
    from explorer import protocol as p

    data = [(p.BUILD_STARTED, p.build_started()),
            (p.BUILD_PROGRESS, p.build_progress(done=0, total=5, kernels=0, kernel="")),
            (p.BUILD_PROGRESS, p.build_progress(done=2, total=5, kernels=1, kernel="k")),
            (p.RUN_CANCELLED, p.run_cancelled(message=None))]
    events = [{"index": i, "type": t, "data": d} for i, (t, d) in enumerate(data)]
    got = run_model_script(PROGRESS_SCRIPT, json.dumps(events))
    assert got["labels"] == [None, "0/5 calls lowered · 0 kernels",
                             "2/5 calls lowered · 1 kernel", None]
    assert got["build"] == {"cancelled": True} and got["status"] == "cancelled"
