"""Data hygiene (issue 20): a failed upload leaves nothing, identical uploads share one
stored file, sessions and runs can be deleted (API and CLI), the data folder has a size
limit with least-recently-used eviction, and run artefacts are stored compressed, once
(those an older version stored inline are moved into blobs when the store opens)."""

from __future__ import annotations

import io
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from corpus import mlp_model
from hardening_helpers import MODEL_TEXT, NAMESPACE, TERMINAL

from explorer import socketio_of
from explorer.store import Store


def upload(client: Any, name: str, data: bytes) -> Any:
    return client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


def big_upload(client: Any, name: str, data: bytes) -> Any:
    """Encoded here: werkzeug's encoder spools big bodies to a file it never closes."""
    boundary = "disk-boundary-51c2"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    body += data + f"\r\n--{boundary}--\r\n".encode()
    return client.post("/api/sessions", data=io.BytesIO(body),
                       content_type=f"multipart/form-data; boundary={boundary}")


def stored(data_dir: Path) -> list[Path]:
    return sorted(p for p in (data_dir / "models").rglob("*") if p.is_file())


def run_once(app: Any, client: Any, sid: str) -> str:
    sock = socketio_of(app).test_client(app, namespace=NAMESPACE)
    ack = sock.emit("start_run", {"session_id": sid, "options": {
        "passes": ["HardeningRebuild"], "build": False}}, namespace=NAMESPACE, callback=True)
    rid = str(ack["run_id"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = client.get(f"/api/runs/{rid}/events").get_json()["events"]
        if events and events[-1]["type"] in TERMINAL:
            break
        time.sleep(0.05)
    sock.disconnect(namespace=NAMESPACE)
    return rid


def test_a_failed_upload_leaves_nothing(app: Any, client: Any, data_dir: Path) -> None:
    junk = b"\x08\x07" + bytes(range(256)) * (40 * 1024 * 1024 // 256)
    resp = big_upload(client, "big.onnx", junk)
    assert 400 <= resp.status_code < 500
    assert stored(data_dir) == []

    def broken(*args: Any) -> Any:
        raise RuntimeError("the inspector failed")

    app.extensions["explorer"].sessions.inspector = broken
    resp = upload(client, "m.onnx", mlp_model().SerializeToString())
    assert resp.status_code == 500
    assert stored(data_dir) == []
    assert client.get("/api/sessions").get_json()["sessions"] == []


def test_identical_uploads_share_one_file(client: Any, data_dir: Path) -> None:
    data = mlp_model().SerializeToString()
    first = upload(client, "a.onnx", data).get_json()["session"]["id"]
    second = upload(client, "b.onnx", data).get_json()["session"]["id"]
    assert first != second
    assert len(stored(data_dir)) == 1
    assert client.delete(f"/api/sessions/{first}").status_code == 200
    assert len(stored(data_dir)) == 1  # still used by the second
    assert client.get(f"/api/sessions/{second}").status_code == 200
    assert client.delete(f"/api/sessions/{second}").status_code == 200
    assert stored(data_dir) == []


def test_delete_session_and_run(app: Any, client: Any, data_dir: Path) -> None:
    sid = upload(client, "m.relay", MODEL_TEXT.encode()).get_json()["session"]["id"]
    kept, gone = run_once(app, client, sid), run_once(app, client, sid)
    assert client.delete(f"/api/runs/{gone}").status_code == 200
    assert client.get(f"/api/runs/{gone}").status_code == 404
    assert client.get(f"/api/runs/{gone}/events").status_code == 404
    assert client.get(f"/api/runs/{kept}/events").status_code == 200
    assert [r["id"] for r in client.get(f"/api/sessions/{sid}").get_json()["runs"]] == [kept]
    assert client.delete(f"/api/runs/{gone}").status_code == 404
    assert client.delete(f"/api/sessions/{sid}").status_code == 200
    assert client.get(f"/api/sessions/{sid}").status_code == 404
    assert client.get(f"/api/runs/{kept}").status_code == 404
    assert client.get("/api/sessions").get_json()["sessions"] == []
    assert stored(data_dir) == []
    store = Store(data_dir / "explorer.sqlite3")
    try:
        assert store.data_bytes()["blobs"] == 0  # nothing left referenced
    finally:
        store.close()
    assert client.delete("/api/sessions/nope").status_code == 404


def test_delete_from_a_foreign_origin_is_refused(client: Any) -> None:
    sid = upload(client, "m.relay", MODEL_TEXT.encode()).get_json()["session"]["id"]
    resp = client.delete(f"/api/sessions/{sid}", headers={"Origin": "http://evil.example"})
    assert resp.status_code == 403
    assert client.get(f"/api/sessions/{sid}").status_code == 200


def test_cli_lists_and_deletes(client: Any, data_dir: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    from explorer.cli import main

    sid = upload(client, "m.relay", MODEL_TEXT.encode()).get_json()["session"]["id"]
    assert main(["sessions", "--data", str(data_dir)]) == 0
    assert sid in capsys.readouterr().out
    assert main(["delete", sid, "--data", str(data_dir)]) == 0
    assert client.get(f"/api/sessions/{sid}").status_code == 404
    assert main(["delete", sid, "--data", str(data_dir)]) == 1


def test_the_data_limit_evicts_the_least_recently_used(app: Any, client: Any,
                                                       data_dir: Path) -> None:
    app.config["MAX_DATA_BYTES"] = 1  # any new upload must evict every other session
    def model(k: int) -> bytes:
        return MODEL_TEXT.replace("1f", f"{k}f").encode()

    first = upload(client, "a.relay", model(1)).get_json()["session"]["id"]
    app.config["MAX_DATA_BYTES"] = 10**9
    second = upload(client, "b.relay", model(2)).get_json()["session"]["id"]
    client.get(f"/api/sessions/{first}")  # `first` is now the most recently used
    app.config["MAX_DATA_BYTES"] = _bytes(data_dir) + 200
    third = upload(client, "c.relay", model(3)).get_json()["session"]["id"]
    ids = {s["id"] for s in client.get("/api/sessions").get_json()["sessions"]}
    assert third in ids and first in ids and second not in ids


def _bytes(data_dir: Path) -> int:
    store = Store(data_dir / "explorer.sqlite3")
    try:
        return sum(store.data_bytes().values()) + sum(p.stat().st_size
                                                      for p in stored(data_dir))
    finally:
        store.close()


def test_artifacts_are_compressed_and_stored_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    try:
        big = [{"steps": ["for i in range(1024):\n  C[i] = A[i] + B[i]"] * 500}]
        store.put_artifact("r1", "schedules", big)
        before = store.data_bytes()["blobs"]
        store.put_artifact("r2", "schedules", big)
        assert store.data_bytes()["blobs"] == before
        assert before < len(json.dumps(big)) / 10
        assert store.artifact("r2", "schedules") == big
        assert store.artifacts("r1") == {"schedules": big}
    finally:
        store.close()


def _old_database(path: Path, rows: list[tuple[str, str, Any]]) -> None:
    """A database as versions before content-addressed artefacts wrote it: sessions without
    `used`, artefacts inline in `artifacts` as JSON text."""
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, created REAL NOT NULL, model_file TEXT,
                               session TEXT NOT NULL, graph TEXT NOT NULL);
        CREATE TABLE artifacts (run_id TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL,
                                PRIMARY KEY (run_id, key));""")
    db.executemany("INSERT INTO artifacts VALUES (?, ?, ?)",
                   [(rid, key, json.dumps(data)) for rid, key, data in rows])
    db.commit()
    db.close()


def test_inline_artifacts_of_an_old_database_move_into_blobs_at_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    big = [{"steps": ["for i in range(1024):\n  C[i] = A[i] + B[i]"] * 500}]
    timing = {"name": "root", "ms": 1.5, "children": []}
    _old_database(path, [("r1", "schedules", big), ("r2", "schedules", big),
                         ("r1", "timing", timing)])
    store = Store(path)
    try:
        assert store.artifacts("r1") == {"schedules": big, "timing": timing}
        assert store.artifact("r2", "schedules") == big
        blobs = store.data_bytes()["blobs"]
        assert 0 < blobs < len(json.dumps(big)) / 10  # compressed, and stored once
        tables = {name for (name,) in sqlite3.connect(path).execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "artifacts" not in tables
    finally:
        store.close()
    store = Store(path)  # opened again: nothing left to move, nothing changed
    try:
        assert store.data_bytes()["blobs"] == blobs
        assert store.artifact("r2", "schedules") == big
    finally:
        store.close()
