"""Fixtures of the explorer tests: an app on a temporary data folder (its run workers
import the test passes of explorer_helpers) and its clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from explorer_helpers import GATE, PLUGIN, REACHED

from explorer import create_app, socketio_of
from explorer.protocol import NAMESPACE


@pytest.fixture()
def gate() -> Iterator[Any]:
    GATE.clear()
    REACHED.clear()
    yield GATE
    GATE.set()


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture()
def app(data_dir: Path) -> Iterator[Any]:
    app = create_app({"TESTING": True, "DATA_DIR": str(data_dir), "RUN_PLUGINS": [PLUGIN]})
    yield app
    app.extensions["explorer"].runs.shutdown()


@pytest.fixture()
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture()
def sock(app: Any) -> Any:
    client = socketio_of(app).test_client(app, namespace=NAMESPACE)
    yield client
    if client.is_connected(NAMESPACE):
        client.disconnect(namespace=NAMESPACE)


