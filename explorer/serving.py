"""Serving the app: `listen(app, host, port)` until stopped, with gunicorn.

Flask-SocketIO's threading mode gets its websockets from simple-websocket, which takes
over the connection's socket from the WSGI server; gunicorn's threaded worker
(`gthread`) hands it over as `gunicorn.socket`. eventlet and gevent would too, but their
monkey patching is not survived by the run workers' fork server and the SQLite threads.
So the server is gunicorn with one worker process and `THREADS` threads (each open
websocket holds one), embedded here rather than started by its command line:

- the master process (`explorer serve`) only binds and supervises; the worker starts the
  app's services (store, run manager, fork server) once it is forked, and shuts the run
  manager down when it exits, so its run workers end with it;
- stopping (Ctrl-C, SIGTERM, the master killed) first closes every Socket.IO
  connection, whose threads would otherwise hold the worker open until
  `GRACEFUL_SECONDS` have passed;
- gunicorn's own lines are warnings and errors only (no banner); its `Server` header
  names no version;
  `X-Forwarded-*` headers are trusted from nobody (the guard's same-origin check reads
  the scheme) and gunicorn's control socket is off.
"""

from __future__ import annotations

import threading
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

from explorer.extensions import ExplorerExtension

THREADS = 100
GRACEFUL_SECONDS = 5


def _extension(app: Any) -> ExplorerExtension:
    extension: ExplorerExtension = app.extensions["explorer"]
    return extension


class ExplorerWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's threaded worker that closes the app's sockets when it is told to stop."""

    def handle_exit(self, sig: int, frame: Any) -> None:  # SIGTERM: graceful
        super().handle_exit(sig, frame)
        self.close_sockets()

    def handle_quit(self, sig: int, frame: Any) -> None:  # SIGINT, SIGQUIT: at once
        self.close_sockets()
        super().handle_quit(sig, frame)

    def is_parent_alive(self) -> bool:  # the master died (SIGKILL): stop as well
        alive: bool = super().is_parent_alive()
        if not alive:
            self.close_sockets()
        return alive

    def close_sockets(self) -> None:
        """Disconnect every Socket.IO client (in a thread: this runs in a signal handler,
        and a disconnect waits for the client's queue to drain)."""
        extension = _extension(self.app.flask_app)
        if extension.started:
            threading.Thread(target=extension.socketio.server.eio.disconnect,
                             name="close-sockets", daemon=True).start()


def _worker_started(worker: Any) -> None:
    _extension(worker.app.flask_app).start()


def _worker_exiting(server: Any, worker: Any) -> None:
    extension = _extension(worker.app.flask_app)
    if extension.started:
        extension.runs.shutdown()  # running runs: interrupted at the next start


class ExplorerServer(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn serving one Flask app (no command line, no config file)."""

    def __init__(self, app: Any, host: str, port: int) -> None:
        self.flask_app = app
        self.bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        super().__init__()

    def load_config(self) -> None:
        settings = {
            "bind": [self.bind], "workers": 1, "threads": THREADS,
            "worker_class": ExplorerWorker, "graceful_timeout": GRACEFUL_SECONDS,
            "loglevel": "warning", "accesslog": None, "errorlog": "-",
            "forwarded_allow_ips": "", "proxy_allow_ips": "",
            "control_socket_disable": True,
            "post_worker_init": _worker_started, "worker_exit": _worker_exiting,
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        return self.flask_app


def listen(app: Any, host: str, port: int) -> None:
    """Serve `app` (threaded, websockets included) on host:port until stopped."""
    try:
        ExplorerServer(app, host, port).run()
    except SystemExit as stop:  # gunicorn's master ends with sys.exit
        if stop.code not in (None, 0):
            raise
