"""Test support: flags shared by a test process and the run workers it starts.

Runs execute in worker processes, so a test pass (registered by a plugin
module the worker imports, see explorer/runs/children.py) cannot wait on a
`threading.Event` of the test. A `ProcessFlag` is the same idea on the file
system: a file in a folder named by an environment variable. The test process
creates the folder on first use and exports the variable; workers receive the
server's environment at run start, so both sides see the same files.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

FLAGS_ENV = "EXPLORER_TEST_FLAGS"
POLL_SECONDS = 0.005


def flags_dir(env: str = FLAGS_ENV) -> Path:
    """The shared folder (created, and exported in `env`, by the first process asking)."""
    existing = os.environ.get(env)
    if existing:
        path = Path(existing)
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = Path(tempfile.mkdtemp(prefix="explorer-flags-"))
    os.environ[env] = str(path)
    atexit.register(shutil.rmtree, path, True)
    return path


class ProcessFlag:
    """A cross-process event: `set`, `clear`, `is_set`, `wait(timeout)`."""

    def __init__(self, name: str, env: str = FLAGS_ENV) -> None:
        self.name = name
        self.env = env

    @property
    def path(self) -> Path:
        return flags_dir(self.env) / self.name

    def set(self) -> None:
        self.path.touch()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def is_set(self) -> bool:
        return self.path.exists()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the flag is set; False if `timeout` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True


class ClosingTestClient(FlaskClient):
    """Flask's test client, closing each request's body stream once the app has answered:
    werkzeug's test client spools a multipart body over 500 KB to a temporary file and
    leaves it open, so the garbage collector reports it (a ResourceWarning, an error in
    this suite) in whichever later test it happens to run."""

    def run_wsgi_app(self, environ: Any, buffered: bool = False) -> Any:
        try:
            return super().run_wsgi_app(environ, buffered=buffered)
        finally:
            stream = environ.get("wsgi.input")
            if stream is not None and hasattr(stream, "close"):
                stream.close()


@contextmanager
def app_for_tests(data_dir: Path, plugin: str | Sequence[str] | None = None,
                  **extra: Any) -> Iterator[Any]:
    """An app on `data_dir` in testing mode whose run workers import `plugin` (a module
    registering test passes, or several), with `extra` app config; its run manager is shut
    down on exit."""
    from explorer import create_app

    config: dict[str, Any] = {"TESTING": True, "DATA_DIR": str(data_dir), **extra}
    if plugin:
        config["RUN_PLUGINS"] = [plugin] if isinstance(plugin, str) else list(plugin)
    app = create_app(config)
    app.test_client_class = ClosingTestClient
    try:
        yield app
    finally:
        app.extensions["explorer"].runs.shutdown()
