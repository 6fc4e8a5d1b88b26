"""IR Explorer's web app: `create_app(test_config=None)` builds the Flask app.

Flask + Flask-SocketIO (threading async mode): an HTTP blueprint (`routes`),
one Socket.IO namespace `/explorer` (`sockets`), sessions and runs persisted
in SQLite in the data folder (the instance folder unless `DATA_DIR` is set).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from flask_socketio import SocketIO

from explorer.hub import EventHub
from explorer.protocol import NAMESPACE, RUN_EVENT, RunEvent
from explorer.queries import SnapshotIndexCache
from explorer.runner import RunConfig, RunManager
from explorer.sessions import SessionService
from explorer.store import Store

DEFAULT_MAX_UPLOAD = 512 * 1024 * 1024


@dataclass(slots=True)
class Explorer:
    """The app's services, reachable from handlers as `services()`."""

    store: Store
    hub: EventHub
    sessions: SessionService
    runs: RunManager
    socketio: SocketIO
    snapshots: SnapshotIndexCache
    data_dir: Path


def services() -> Explorer:
    return current_app.extensions["explorer"]


def asset_root() -> Path:
    """templates/ and static/: inside the package for a wheel, else the repo root."""
    here = Path(__file__).resolve().parent
    return here if (here / "templates").is_dir() else here.parent


def run_room(run_id: str) -> str:
    return f"run:{run_id}"


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    root = asset_root()
    app = Flask(__name__, instance_relative_config=True,
                template_folder=str(root / "templates"), static_folder=str(root / "static"),
                static_url_path="/static")
    app.config.from_mapping(MAX_CONTENT_LENGTH=DEFAULT_MAX_UPLOAD, DATA_DIR=None,
                            DEMO_SESSION=None, JSON_SORT_KEYS=False)
    if test_config:
        app.config.update(test_config)
    data_dir = Path(app.config["DATA_DIR"] or app.instance_path)
    data_dir.mkdir(parents=True, exist_ok=True)
    app.config["DATA_DIR"] = str(data_dir)

    store = Store(data_dir / "explorer.sqlite3")
    socketio = SocketIO(async_mode="threading", cors_allowed_origins=[])
    socketio.init_app(app, max_http_buffer_size=app.config["MAX_CONTENT_LENGTH"])
    hub = EventHub(store)
    _mark_interrupted(store, hub)

    def emit_live(event: RunEvent) -> None:
        socketio.emit(RUN_EVENT, event, namespace=NAMESPACE, to=run_room(event["run_id"]))

    hub.add_sink(emit_live)
    sessions = SessionService(store, data_dir / "models")
    runs = RunManager(store, hub, sessions, start_task=socketio.start_background_task,
                      config=RunConfig.from_mapping(app.config))
    runs.warm_up()
    sessions.warm_up()
    app.extensions["explorer"] = Explorer(store, hub, sessions, runs, socketio,
                                          SnapshotIndexCache(store), data_dir)

    from explorer.routes import bp, register_error_handlers
    from explorer.sockets import ExplorerNamespace

    app.register_blueprint(bp)
    register_error_handlers(app)
    socketio.on_namespace(ExplorerNamespace(NAMESPACE))
    return app


def _mark_interrupted(store: Store, hub: EventHub) -> None:
    """Runs a dead server left `running` become `interrupted`, with a closing event."""
    for summary in store.running_runs():
        rid = summary["id"]
        store.mark_interrupted_run(rid)
        hub.publish(rid, summary["session_id"], "run_failed",
                    {"pass": None, "code": "interrupted",
                     "message": "the server stopped during the run; snapshots so far are kept"})


def socketio_of(app: Flask) -> SocketIO:
    return app.extensions["explorer"].socketio
