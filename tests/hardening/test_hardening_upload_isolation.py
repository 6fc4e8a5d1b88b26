"""No uploaded file is parsed in the server process: a probe child imports it, so an
importer that crashes or hangs on a file ends only that child, the upload is answered
with an error naming the problem, and the server and its other sessions go on."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from crash_importer import CRASH_MARK, HANG_MARK, PLUGIN
from hardening_helpers import MODEL_TEXT

from explorer import compiler
from explorer.testing import app_for_tests


def _upload(client: Any, name: str, data: bytes) -> Any:
    return client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


@pytest.fixture()
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def parsed_here(*args: Any) -> Any:
        raise AssertionError("an upload was parsed in the server process")

    monkeypatch.setattr(compiler, "load_model", parsed_here)
    with app_for_tests(tmp_path / "data", plugin=PLUGIN) as app:
        app.config["IMPORT_TIMEOUT"] = 5.0
        yield app


def test_an_importer_crash_ends_only_its_probe(server: Any, tmp_path: Path) -> None:
    client = server.test_client()
    good = _upload(client, "good.relay", MODEL_TEXT.encode())
    assert good.status_code == 201, good.get_json()
    crashed = _upload(client, "crash.onnx", CRASH_MARK + b"\0" * 64)
    assert crashed.status_code == 422
    error = crashed.get_json()["error"]
    assert error["code"] == "import_crashed"
    assert error["message"].startswith("crash.onnx: ") and "SIGSEGV" in error["message"]
    listed = [s["name"] for s in client.get("/api/sessions").get_json()["sessions"]]
    assert listed == ["good.relay"]
    assert len(list((tmp_path / "data" / "models").iterdir())) == 1
    again = _upload(client, "again.relay", MODEL_TEXT.encode())
    assert again.status_code == 201
    sid = good.get_json()["session"]["id"]
    assert client.get(f"/api/sessions/{sid}").status_code == 200


def test_an_importer_that_hangs_is_stopped_and_named(server: Any) -> None:
    client = server.test_client()
    resp = _upload(client, "hang.onnx", HANG_MARK + b"\0" * 64)
    assert resp.status_code == 422
    error = resp.get_json()["error"]
    assert error["code"] == "import_timeout" and error["message"].startswith("hang.onnx: ")
    assert _upload(client, "good.relay", MODEL_TEXT.encode()).status_code == 201
