"""Serving the app: `listen(app, host, port)` until interrupted.

Flask-SocketIO's threading mode gets its websockets from simple-websocket, which takes
over the connection's socket (`werkzeug.socket`) from the WSGI server; werkzeug's
threaded server is the one that provides it without eventlet or gevent (whose monkey
patching the run workers' fork server and SQLite threads do not survive). So the
server is werkzeug's, made quiet: no development-server banner, and a `Server` header
that names no software version.
"""

from __future__ import annotations

import logging
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server

SERVER_NAME = "ir-explorer"


class QuietRequestHandler(WSGIRequestHandler):
    """Answers with `Server: ir-explorer` (no Werkzeug/Python versions)."""

    def version_string(self) -> str:
        return SERVER_NAME


def listen(app: Any, host: str, port: int) -> None:
    """Serve `app` (threaded, websockets included) on host:port until KeyboardInterrupt."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    server = make_server(host, port, app, threaded=True, request_handler=QuietRequestHandler)
    try:
        server.serve_forever()
    finally:
        server.server_close()
