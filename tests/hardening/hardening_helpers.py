"""Helpers of the hardening tests: test passes (sleep, gate, raise, hang) registered in the
engine's pass registry, a real server on a loopback port, Socket.IO clients that record
run events, and multipart uploads over plain HTTP.

Importing this module registers the passes. Runs execute in worker processes: a test
app names this module in RUN_PLUGINS (a subprocess server gets `--plugin hardening_helpers`
from `python -m hardening_serve`, with this folder on PYTHONPATH), so each worker imports
it too; the gates are ProcessFlags, shared by the test and the workers.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.relay.expr_functor import ExprMutator
from engine.transform import module_pass, register_pass
from explorer.testing import ProcessFlag, flags_dir

HERE = Path(__file__).resolve().parent

MODEL_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32]) {
  %0 = add(%x, 1f /* fc1.bias */) /* fc1 */;
  %1 = nn.relu(%0) /* relu1 */;
  %2 = multiply(%1, 2f /* scale.factor */) /* scale */;
  nn.relu(%2) /* relu2 */
}
"""
NAMESPACE = "/explorer"
TERMINAL = ("run_finished", "run_failed", "run_cancelled")
PLUGIN = "hardening_helpers"
GATE = ProcessFlag("hardening-gate")          # HardeningGate waits for it
HANG = ProcessFlag("hardening-hang")          # HardeningHang waits for it
HANG_REACHED = ProcessFlag("hardening-hang-reached")
HANG_PID = ProcessFlag("hardening-hang-pid")  # holds the pid of the process running the pass


class _Rebuild(ExprMutator):
    def visit_call(self, call: Any) -> Any:
        import dataclasses

        new = super().visit_call(call)
        return new if new is not call else dataclasses.replace(call)


def _rebuild(mod: Any, ctx: Any) -> Any:
    new = mod.shallow_copy()
    for gv, fn in mod.items():
        new[gv] = _Rebuild().visit(fn)
    return new


def _sleep(mod: Any, ctx: Any) -> Any:
    time.sleep(0.02)
    return _rebuild(mod, ctx)


def _gate(mod: Any, ctx: Any) -> Any:
    if not GATE.wait(timeout=60):
        raise TimeoutError("the test never opened the gate")
    return _rebuild(mod, ctx)


def _raise(mod: Any, ctx: Any) -> Any:
    raise RuntimeError("hardening: deliberate failure inside the pass")


def _hang(mod: Any, ctx: Any) -> Any:
    HANG_PID.path.write_text(str(os.getpid()))
    HANG_REACHED.set()
    if not HANG.wait(timeout=120):
        raise TimeoutError("HardeningHang was never released")
    return mod


TEST_PASSES: dict[str, Callable[[Any, Any], Any]] = {
    "HardeningRebuild": _rebuild, "HardeningSleep": _sleep, "HardeningGate": _gate,
    "HardeningRaise": _raise, "HardeningHang": _hang,
}


def _register() -> None:
    for name, fn in TEST_PASSES.items():
        def factory(fn: Callable[[Any, Any], Any] = fn, name: str = name) -> Any:
            return module_pass(fn, opt_level=0, name=name)
        register_pass(name, factory, override=True)


_register()


def process_gone(pid: int, timeout: float = 10) -> bool:
    """True once `pid` has exited (a zombie that nobody reaped counts as exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


# --- servers ----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def thread_server(app: Any) -> Iterator[str]:
    """The app served by werkzeug (threaded) on a free 127.0.0.1 port, in a thread."""
    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        thread.join(timeout=10)


def serve_process(port: int, data: Path) -> subprocess.Popen[bytes]:
    """`explorer serve` (the production server) on 127.0.0.1:port in a child process, the
    hardening passes registered (`hardening_serve`); the test flags' folder is exported
    first, so the server and its run workers share it."""
    flags_dir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parents[1])])}
    return subprocess.Popen([sys.executable, "-m", "hardening_serve", "serve", "--port",
                             str(port), "--data", str(data)], env=env, cwd=str(HERE.parents[1]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextmanager
def real_server(data: Path) -> Iterator[str]:
    """The base URL of `serve_process` on a free port, once it answers; stopped after."""
    port = free_port()
    proc = serve_process(port, data)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def wait_http(base: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/api/sessions", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)
    raise TimeoutError(f"{base} never answered")


# --- HTTP -------------------------------------------------------------------------------
def http_json(base: str, path: str, timeout: float = 30) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"{base}{path}", timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def upload_http(base: str, name: str, data: bytes) -> tuple[int, Any]:
    boundary = "----hardening"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    body += data + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{base}/api/sessions", data=body, method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def stored_events(base: str, run_id: str, since: int = 0) -> list[dict[str, Any]]:
    status, body = http_json(base, f"/api/runs/{run_id}/events?since={since}")
    assert status == 200, body
    return body["events"]


def wait_terminal(base: str, run_id: str, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = stored_events(base, run_id)
        if events and events[-1]["type"] in TERMINAL:
            return events
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not end in {timeout}s")


# --- Socket.IO clients -------------------------------------------------------------------
def complete(events: list[dict[str, Any]], run_id: str) -> bool:
    """Whether `events` hold run `run_id`'s terminal event and every event from the first
    one received (index 0, or a subscription's `since`) up to it."""
    indexes = {e["index"] for e in events if e["run_id"] == run_id}
    ends = [e["index"] for e in events if e["run_id"] == run_id and e["type"] in TERMINAL]
    return bool(ends) and len(indexes) >= ends[0] - min(indexes) + 1


class Watcher:
    """A python-socketio client on the explorer namespace recording every run_event.

    python-socketio's client hands each incoming message to a new thread (engineio's
    `_trigger_event(..., run_async=True)`), so two events the server sent in order can be
    appended in either order, and a run's terminal event can be recorded before the one
    sent just ahead of it. The events are therefore read back in index order, and a test
    waits for `complete(...)` (the terminal event *and* everything before it), never for the
    terminal event alone: waiting for that alone once read a watcher one event short under
    load. The server's order on one socket is checked by the synchronous test client
    (tests/explorer/test_explorer_socket.py)."""

    def __init__(self, base: str) -> None:
        import socketio

        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.client = socketio.Client(reconnection=False)
        self.client.on("run_event", self._on_event, namespace=NAMESPACE)
        self.client.connect(base, namespaces=[NAMESPACE], transports=["websocket"],
                            wait_timeout=20)

    def _on_event(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._events.append(event)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event received, by run and index (a duplicate stays, next to its twin)."""
        with self._lock:
            return sorted(self._events, key=lambda e: (e["run_id"], e["index"]))

    def call(self, name: str, payload: dict[str, Any], timeout: float = 30) -> Any:
        return self.client.call(name, payload, namespace=NAMESPACE, timeout=timeout)

    def start(self, session_id: str, **options: Any) -> str:
        ack = self.call("start_run", {"session_id": session_id, "options": options})
        assert "run_id" in ack, ack
        return str(ack["run_id"])

    def subscribe(self, run_id: str, since: int = 0) -> Any:
        return self.call("subscribe", {"run_id": run_id, "since": since})

    def of(self, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["run_id"] == run_id]

    def wait(self, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done(self.events):
                return
            time.sleep(0.02)
        raise AssertionError(f"timed out; got {[e['type'] for e in self.events][-20:]}")

    def wait_complete(self, run_id: str, timeout: float = 60) -> list[dict[str, Any]]:
        """Run `run_id`'s events once its terminal one and all before it have arrived."""
        self.wait(lambda evs: complete(evs, run_id), timeout)
        return self.of(run_id)

    def close(self) -> None:
        if self.client.connected:
            self.client.disconnect()


def close_all(watchers: list[Watcher]) -> None:
    """Disconnect in parallel (one disconnect can wait ~3 s for its transport to close)."""
    threads = [threading.Thread(target=w.close, daemon=True) for w in watchers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=15)
