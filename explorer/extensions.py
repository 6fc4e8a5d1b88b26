"""The app's services, started when the app is first used, never at `create_app`.

`create_app` only configures: routes, the Socket.IO namespace and an
`ExplorerExtension` in `app.extensions["explorer"]`. The services (the store
in the data folder, the event hub and its live socket sink, sessions, the run
manager and its fork server) start on `start()`: `explorer serve`'s server
worker calls it once forked (explorer/serving.py); otherwise the first request or `services()` does. Attribute
access on the extension (`app.extensions["explorer"].runs`) starts them too.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from flask_socketio import SocketIO

from explorer.hub import EventHub
from explorer.protocol import NAMESPACE, RUN_EVENT, RUN_FAILED, RunEvent, run_failed
from explorer.queries import SnapshotIndexCache
from explorer.runs.config import RunConfig
from explorer.runs.kernel_steps import KernelSteps
from explorer.runs.manager import RunManager
from explorer.runs.probe import isolated_inspector
from explorer.sessions import SessionService
from explorer.store import Store


@dataclass(slots=True)
class Explorer:
    """The running services, reachable from handlers as `services()`."""

    store: Store
    hub: EventHub
    sessions: SessionService
    runs: RunManager
    socketio: SocketIO
    snapshots: SnapshotIndexCache
    data_dir: Path
    kernel_steps: KernelSteps


def run_room(run_id: str) -> str:
    return f"run:{run_id}"


class ExplorerExtension:
    """Holds the app's configuration until `start()` makes its services (once)."""

    def __init__(self, app: Flask, socketio: SocketIO) -> None:
        self.app = app
        self.socketio = socketio
        self._services: Explorer | None = None
        self._lock = threading.Lock()

    def start(self) -> Explorer:
        with self._lock:
            if self._services is None:
                self._services = _start(self.app, self.socketio)
            return self._services

    def ensure_started(self) -> None:
        """`start()` as a Flask before-request hook (which must return None)."""
        self.start()

    @property
    def started(self) -> bool:
        return self._services is not None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.start(), name)


def services() -> Explorer:
    extension: ExplorerExtension = current_app.extensions["explorer"]
    return extension.start()


def _start(app: Flask, socketio: SocketIO) -> Explorer:
    data_dir = Path(app.config["DATA_DIR"] or app.instance_path)
    data_dir.mkdir(parents=True, exist_ok=True)
    app.config["DATA_DIR"] = str(data_dir)
    store = Store(data_dir / "explorer.sqlite3")
    hub = EventHub(store)
    _mark_interrupted(store, hub)

    def emit_live(event: RunEvent) -> None:
        socketio.emit(RUN_EVENT, event, namespace=NAMESPACE, to=run_room(event["run_id"]))

    hub.add_sink(emit_live)
    config = RunConfig.from_mapping(app.config)
    models = data_dir / "models"
    inspector = isolated_inspector(store.path, str(models), config.plugins,
                                   app.config.get("IMPORT_TIMEOUT"))
    sessions = SessionService(store, models, inspector=inspector,
                              data_limit=lambda: app.config.get("MAX_DATA_BYTES"))
    runs = RunManager(store, hub, sessions, start_task=socketio.start_background_task,
                      config=config)
    runs.warm_up()
    return Explorer(store, hub, sessions, runs, socketio, SnapshotIndexCache(store), data_dir,
                    KernelSteps(store))


def _mark_interrupted(store: Store, hub: EventHub) -> None:
    """Runs a dead server left `running` become `interrupted`, with a closing event."""
    for summary in store.running_runs():
        rid = summary["id"]
        store.mark_interrupted_run(rid)
        hub.publish(rid, summary["session_id"], RUN_FAILED, run_failed(
            pass_name=None, code="interrupted",
            message="the server stopped during the run; snapshots so far are kept"))
