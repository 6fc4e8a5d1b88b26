"""IR Explorer's web app: `create_app(test_config=None)` builds the Flask app.

Flask + Flask-SocketIO (threading async mode): an HTTP blueprint (`routes`),
one Socket.IO namespace `/explorer` (`sockets`), sessions and runs persisted
in SQLite in the data folder (the instance folder unless `DATA_DIR` is set).
`create_app` has no side effects: the services start with `explorer serve`
or the app's first use (explorer/extensions.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask
from flask_socketio import SocketIO

from explorer.extensions import Explorer, ExplorerExtension, services
from explorer.guard import AccessGuard, same_origin
from explorer.protocol import NAMESPACE
from explorer.uploads import UploadRequest

DEFAULT_MAX_UPLOAD = 512 * 1024 * 1024
SOCKET_MESSAGE_LIMIT = 1024 * 1024
"""Bytes of one Socket.IO message (every client message is a small JSON request)."""

__all__ = ["Explorer", "create_app", "services", "socketio_of"]


def asset_root() -> Path:
    """templates/ and static/: inside the package for a wheel, else the repo root."""
    here = Path(__file__).resolve().parent
    return here if (here / "templates").is_dir() else here.parent


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    root = asset_root()
    app = Flask(__name__, instance_relative_config=True,
                template_folder=str(root / "templates"), static_folder=str(root / "static"),
                static_url_path="/static")
    app.config.from_mapping(MAX_CONTENT_LENGTH=DEFAULT_MAX_UPLOAD, DATA_DIR=None,
                            DEMO_SESSION=None, JSON_SORT_KEYS=False, ALLOWED_HOSTS=[],
                            ACCESS_TOKEN=None, MAX_DATA_BYTES=None)
    if test_config:
        app.config.update(test_config)
    app.request_class = UploadRequest  # uploads written once, into the store (uploads.py)
    socketio = SocketIO(async_mode="threading", cors_allowed_origins=same_origin)
    socketio.init_app(app, max_http_buffer_size=SOCKET_MESSAGE_LIMIT)
    app.wsgi_app = AccessGuard(app.wsgi_app, app.config)  # type: ignore[method-assign]
    extension = ExplorerExtension(app, socketio)
    app.extensions["explorer"] = extension
    app.before_request(extension.ensure_started)

    from explorer.debug_routes import bp as debug_bp
    from explorer.pass_debug_routes import bp as pass_debug_bp
    from explorer.routes import bp, register_error_handlers
    from explorer.sockets import ExplorerNamespace

    app.register_blueprint(bp)
    app.register_blueprint(debug_bp)
    app.register_blueprint(pass_debug_bp)
    register_error_handlers(app)
    socketio.on_namespace(ExplorerNamespace(NAMESPACE))
    return app


def socketio_of(app: Flask) -> SocketIO:
    extension: ExplorerExtension = app.extensions["explorer"]
    return extension.socketio

