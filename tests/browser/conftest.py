"""Browser-test fixtures: the real explorer server on a free loopback port (temporary data
folder), Debian's chromium through Playwright, and a pipeline gate that holds a run open.

Never downloads a browser: tests skip when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import GATE_ARMED, GATE_FAILING, GATE_OPENED, GATE_REACHED, PLUGIN

from explorer.testing import flags_dir

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]

pytestmark = pytest.mark.browser


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.browser)


def _bundle_is_stale() -> bool:
    bundle = ROOT / "static" / "dist" / "main.js"
    if not bundle.exists():
        return True
    built = bundle.stat().st_mtime
    sources = [*ROOT.joinpath("static", "src").rglob("*.js"), ROOT / "build.mjs"]
    return any(p.stat().st_mtime > built for p in sources)


@pytest.fixture(scope="session")
def frontend_bundle() -> Path:
    """static/dist, built with `npm run build` when missing or older than static/src."""
    if _bundle_is_stale():
        if not (ROOT / "node_modules").is_dir() or shutil.which("npm") is None:
            pytest.skip("front-end bundle missing and npm/node_modules unavailable: run `make frontend`")
        subprocess.run(["npm", "run", "--silent", "build"], cwd=ROOT, check=True,
                       capture_output=True)
    return ROOT / "static" / "dist"


class PipelineGate:
    """While armed, every run's pipeline gets a pass that blocks until `release()`; with
    `failing`, a pass that raises. The passes run in the run's worker process
    (browser_helpers is its plugin): the state lives in ProcessFlags."""

    reached = GATE_REACHED

    def arm(self) -> None:
        GATE_OPENED.clear()
        GATE_REACHED.clear()
        GATE_ARMED.set()

    def release(self) -> None:
        GATE_OPENED.set()

    def disarm(self) -> None:
        GATE_ARMED.clear()
        GATE_FAILING.clear()
        GATE_OPENED.set()

    @property
    def armed(self) -> bool:
        return GATE_ARMED.is_set()

    @property
    def failing(self) -> bool:
        return GATE_FAILING.is_set()

    @failing.setter
    def failing(self, value: bool) -> None:
        if value:
            GATE_FAILING.set()
        else:
            GATE_FAILING.clear()


@pytest.fixture(scope="session")
def pipeline_gate() -> Iterator[PipelineGate]:
    gate = PipelineGate()
    gate.disarm()
    yield gate
    gate.disarm()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, frontend_bundle: Path,
           pipeline_gate: PipelineGate) -> Iterator[str]:
    """Base URL of the real server (`explorer serve`, gunicorn) on a free loopback port,
    its run workers importing browser_helpers."""
    yield from serve(tmp_path_factory.mktemp("explorer-data"))


@pytest.fixture(scope="session")
def serve_explorer() -> Callable[..., Iterator[str]]:
    """`serve` below, for a test that needs a server with flags of its own (a fixture, not
    an import: `from conftest import` finds whichever tests/*/conftest.py pytest loaded
    last when several folders are collected together)."""
    return serve


def serve(data: Path, *flags: str) -> Iterator[str]:
    """`explorer serve --data DATA FLAGS...` on a free loopback port (the test passes of
    browser_helpers and build_gate loaded): its base URL while the generator is open."""
    port = _free_port()
    flags_dir()  # exported before the server inherits the environment
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, "-m", "explorer.cli", "serve", "--port", str(port),
                             "--data", str(data), "--plugin", PLUGIN, "--plugin", "build_gate",
                             *flags], env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(base)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(base: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/sessions", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()
    pw.stop()


class PageWatch:
    """Console errors, page errors and dialogs seen by a page."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


@pytest.fixture()
def page(browser: Any, server: str, pipeline_gate: PipelineGate) -> Iterator[Any]:
    # Playwright evaluates string predicates (wait_for_function) with eval in the page, which
    # the app's CSP forbids; test_browser_security.py drives the page with the CSP enforced.
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, base_url=server,
                                  bypass_csp=True)
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    pg.watch = PageWatch(pg)
    yield pg
    pipeline_gate.disarm()
    context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
