"""A local file opens where it is; an upload is streamed into the store and stays a world
of its own.

The model is a Llama decoder written by torch.onnx with its weights in an external data
file (shared_models.llama_small_path, the bench's 7B one at 2 layers, hidden 64):
- `explorer run PATH` runs relay.build on it in place;
- a session opened from the path records the path itself: nothing is copied into the
  data folder, and deleting the session leaves the user's files alone;
- the same file uploaded over HTTP is refused (its external data is another file), and
  nothing of it is left in the store.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from typing import Any

import pytest
from shared_models import llama_small_path

from explorer import compiler
from explorer.cli import main
from explorer.hub import EventHub
from explorer.protocol import RunOptions
from explorer.runs.config import RunConfig
from explorer.runs.manager import RunManager
from explorer.sessions import SessionService
from explorer.store import Store

for _package in ("torch", "transformers", "onnxscript"):
    if importlib.util.find_spec(_package) is None:
        pytest.skip(f"{_package} is not installed", allow_module_level=True)

pytestmark = [pytest.mark.torch]


@pytest.fixture(scope="module")
def llama() -> Path:
    return llama_small_path()


def test_cli_run_opens_the_file_in_place(llama: Path, capsys: Any) -> None:
    assert main(["run", str(llama)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("finished:")


def test_local_session_records_the_path_and_copies_nothing(llama: Path, tmp_path: Path
                                                           ) -> None:
    store = Store(tmp_path / "explorer.sqlite3")
    models = tmp_path / "models"
    try:
        sessions = SessionService(store, models)
        session = sessions.open_local(llama)
        assert store.session_model_file(session["id"]) == str(llama.resolve())
        assert list(models.iterdir()) == []
        assert session["inputs"][0]["name"] == "input_ids"
        imported = sessions.imported(session["id"])  # as a run's worker re-imports it
        assert imported.mod["main"].params[0].name_hint == "input_ids"
        sessions.delete(session["id"])
        assert llama.exists() and llama.with_name(llama.name + ".data").exists()
    finally:
        store.close()


def test_upload_of_a_model_with_external_data_is_refused(llama: Path, client: Any,
                                                         data_dir: Path) -> None:
    resp = client.post("/api/sessions",
                       data={"file": (io.BytesIO(llama.read_bytes()), llama.name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 400
    error = resp.get_json()["error"]
    assert error["code"] == "unsafe_model" and "external" in error["message"]
    assert [p for p in (data_dir / "models").iterdir() if p.is_file()] == []


def test_cli_run_imports_the_file_once(llama: Path, capsys: Any, monkeypatch: Any) -> None:
    """The session's inspection and the run share one import (the run used to read the
    file and its external data a second time)."""
    loads: list[Path] = []
    load = compiler.load_model

    def counting(path: Path, *args: Any, **kwargs: Any) -> Any:
        loads.append(path)
        return load(path, *args, **kwargs)

    monkeypatch.setattr(compiler, "load_model", counting)
    assert main(["run", str(llama), "--no-build"]) == 0
    assert capsys.readouterr().out.startswith("finished:")
    assert loads == [llama.resolve()]


def test_runs_that_share_an_import_record_it_as_imported(llama: Path, tmp_path: Path) -> None:
    """The inspection's type check and each run's InferType record types on the shared
    module's nodes; every run still starts from the module as a fresh import prints it."""
    store = Store(tmp_path / "explorer.sqlite3")
    try:
        sessions = SessionService(store, tmp_path / "models")
        manager = RunManager(store, EventHub(store), sessions, config=RunConfig())
        session = sessions.open_local(llama)
        imported_text = store.snapshot(store.session_snapshot(session["id"]))["text"]
        assert "/* ty=" not in imported_text
        options = RunOptions.from_json({"opt_level": 3, "build": False})
        for _ in range(2):
            run_id = manager.start_sync(session["id"], options, None)
            assert store.run(run_id)["status"] == "finished"
            started = next(e for e in store.events(run_id) if e["type"] == "run_started")
            assert store.snapshot(started["data"]["initial_snapshot"])["text"] == imported_text
    finally:
        store.close()
