"""Fixtures of the hardening tests: an app on a temporary data folder and its test client,
and a gated audit hook that records what the process opens, unpickles or executes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hardening_helpers import PLUGIN

from explorer.testing import app_for_tests

_WATCHED = ("open", "pickle.find_class", "os.system", "os.exec", "os.posix_spawn",
            "os.spawn", "subprocess.Popen", "marshal.loads")


class AuditLog:
    """Audit events seen while `active` (one process-wide hook, installed once)."""

    def __init__(self) -> None:
        self.active = False
        self.events: list[tuple[str, str]] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.active and event.startswith(_WATCHED):
            first = args[0] if args else ""
            self.events.append((event, str(first)))


_AUDIT = AuditLog()
sys.addaudithook(_AUDIT)


@pytest.fixture()
def audit() -> Iterator[AuditLog]:
    _AUDIT.events.clear()
    _AUDIT.active = True
    yield _AUDIT
    _AUDIT.active = False
    _AUDIT.events.clear()


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
