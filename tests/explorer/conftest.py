"""Fixtures of the explorer tests: an app on a temporary data folder (its run workers
import the test passes of explorer_helpers) and its clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from explorer_helpers import GATE, PLUGIN, REACHED

from explorer import socketio_of
from explorer.protocol import NAMESPACE
from explorer.testing import app_for_tests


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
    with app_for_tests(data_dir, PLUGIN) as app:
        yield app


@pytest.fixture()
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture()
def sock(app: Any) -> Any:
    client = socketio_of(app).test_client(app, namespace=NAMESPACE)
    yield client
    if client.is_connected(NAMESPACE):
        client.disconnect(namespace=NAMESPACE)


