"""Run import: a malformed export answers 400 `bad_export` naming the field, and stores
nothing; a non-UTF-8 Relay upload is `corrupt_model`; the build follows the run's options."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
from explorer_helpers import collect_until, start, subscribe, terminal, upload


def _post(client: Any, doc: Any) -> Any:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return client.post("/api/runs/import", data={"file": (io.BytesIO(raw), "run.json")},
                       content_type="multipart/form-data")


@pytest.fixture()
def exported(client: Any, sock: Any) -> dict[str, Any]:
    session = upload(client)
    run_id = start(sock, session["id"], passes=["ExplorerTestRebuild", "ExplorerTestNoop"])
    subscribe(sock, run_id)
    collect_until(sock, terminal)
    return client.get(f"/api/runs/{run_id}/export").get_json()


def _without(path: tuple[Any, ...]) -> Any:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


def _setting(path: tuple[Any, ...], value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _first_snapshot(doc: dict[str, Any]) -> str:
    return next(iter(doc["snapshots"]))


CASES = {
    "run-status-missing": (_without(("run", "status")), "run.status", "missing"),
    "run-status-unknown": (_setting(("run", "status"), "exploded"), "run.status", "one of"),
    "run-passes-text": (_setting(("run", "num_passes"), "3"), "run.num_passes", "integer"),
    "run-options-missing": (_without(("run", "options")), "run.options", "missing"),
    "session-name-missing": (_without(("session", "name")), "session.name", "missing"),
    "graph-not-object": (_setting(("graph",), []), "graph", "object"),
    "event-type-missing": (_without(("events", 1, "type")), "events[1].type", "missing"),
    "event-data-list": (_setting(("events", 0, "data"), []), "events[0].data", "object"),
    "event-index-negative": (_setting(("events", 2, "index"), -1), "events[2].index",
                             "non-negative"),
    "event-missing-snapshot": (_setting(("events", 0, "data", "initial_snapshot"), 987654),
                               "events[0].data.initial_snapshot", "lacks"),
    "event-snapshot-text": (_setting(("events", 0, "data", "initial_snapshot"), "x"),
                            "events[0].data.initial_snapshot", "expected int"),
    "final-snapshot-missing": (_setting(("run", "final_snapshot"), 987654),
                               "run.final_snapshot", "lacks"),
    "artifacts-list": (_setting(("artifacts",), [1]), "artifacts", "object"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_malformed_export_is_a_400_naming_the_field(client, exported, case):
    change, field, words = case
    doc = copy.deepcopy(exported)
    change(doc)
    before = len(client.get("/api/sessions").get_json()["sessions"])
    resp = _post(client, doc)
    assert resp.status_code == 400, resp.get_json()
    error = resp.get_json()["error"]
    assert error["code"] == "bad_export"
    assert field in error["message"] and words in error["message"]
    assert error["detail"] == {"field": field}
    assert len(client.get("/api/sessions").get_json()["sessions"]) == before


def test_snapshot_fields_are_checked(client, exported):
    doc = copy.deepcopy(exported)
    key = _first_snapshot(doc)
    del doc["snapshots"][key]["source_map"]
    error = _post(client, doc).get_json()["error"]
    assert error["detail"] == {"field": f"snapshots[{key!r}].source_map"}
    doc["snapshots"] = {"abc": {"text": "", "source_map": []}}
    assert "snapshot id" in _post(client, doc).get_json()["error"]["message"]


def test_a_valid_export_still_imports(client, exported):
    resp = _post(client, exported)
    assert resp.status_code == 201
    assert resp.get_json()["run"]["status"] == "finished"


def test_a_non_utf8_relay_upload_is_corrupt_model(client):
    data = b"def @main(%x: Tensor[(1, 4), float32]) {\n  nn.relu(%x) /* \xff\xfe */\n}\n"
    for name in ("bad.relay", "bad.txt"):
        resp = client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                           content_type="multipart/form-data")
        assert resp.status_code == 400, resp.get_json()
        error = resp.get_json()["error"]
        assert error["code"] == "corrupt_model"
        assert error["message"].startswith(f"{name}: ") and "UTF-8" in error["message"]


# unfused, the model's four ops are four calls; its two relus share one kernel
@pytest.mark.parametrize(("disabled", "kernels"), [([], 1), (["FuseOps"], 3)])
def test_the_build_runs_under_the_runs_pass_options(client, sock, disabled, kernels):
    session = upload(client)
    run_id = start(sock, session["id"], opt_level=3, disabled_pass=disabled, build=True)
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=60)
    assert events[-1]["type"] == "run_finished", events[-1]
    built = next(e for e in events if e["type"] == "build_finished")
    assert built["data"]["num_kernels"] == kernels
    fuse = [(e["data"]["depth"], e["data"]["opt_level"]) for e in events
            if e["type"] == "pass_finished" and e["data"]["name"] == "FuseOps"]
    # Disabled in the pipeline, FuseOps still runs at level 0 as a stage of the build
    # (graph codegen needs every op in a kernel), and the timeline shows it there.
    assert fuse == ([(0, 0)] if disabled else [(1, 0)])
    names = [e["data"]["name"] for e in events if e["type"] == "pass_finished"]
    assert names[-1] == "LowerTE"
    assert not [e for e in events[events.index(built):] if e["type"] == "pass_started"]
