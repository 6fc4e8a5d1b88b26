"""A real `explorer serve` for benchmarks: a child process on a free port, its memory
sampled from /proc (the server and every process under it: probe children, the runs'
fork server and workers), talked to over a real socket (HTTP with `requests`, Socket.IO
with python-socketio's client), as a browser would.

    with ServedExplorer(model=path) as server:      # `explorer serve PATH`
        server.session_id                           # the session of PATH
        run = server.run(server.session_id, {"opt_level": 3, "build": True})
        server.peak_rss_mb                          # high-water marks seen so far
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BANNER = re.compile(r"IR Explorer on (http://\S+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (from /proc's children lists)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as kids:
                    todo.extend(int(k) for k in kids.read().split())
        except OSError:
            continue
    return found


@dataclass
class RssSampler:
    """Polls a process tree's RSS: the largest single process and the largest sum."""

    pid: int
    interval: float = 0.05
    peak_process_kb: int = 0
    peak_tree_kb: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> RssSampler:
        threading.Thread(target=self._loop, daemon=True).start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            sizes = [_rss_kb(p) for p in _tree(self.pid)]
            if sizes:
                self.peak_process_kb = max(self.peak_process_kb, max(sizes))
                self.peak_tree_kb = max(self.peak_tree_kb, sum(sizes))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()


class ServedExplorer:
    """`explorer serve [MODEL]` in a child process (see module docstring)."""

    def __init__(self, model: Path | None = None, data_dir: Path | None = None,
                 extra: tuple[str, ...] = ()) -> None:
        self.model = model
        self.port = free_port()
        self._tmp = tempfile.TemporaryDirectory(prefix="explorer-bench-")
        self.data_dir = data_dir or Path(self._tmp.name)
        self.extra = extra
        self.url = ""
        self.session_id: str | None = None
        self.first_page_s = 0.0
        self.proc: subprocess.Popen[str] | None = None
        self.sampler: RssSampler | None = None

    def __enter__(self) -> ServedExplorer:
        cmd = [sys.executable, "-m", "explorer.cli", "serve", "--port", str(self.port),
               "--data", str(self.data_dir), *self.extra]
        if self.model is not None:
            cmd.append(str(self.model))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        start = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.sampler = RssSampler(self.proc.pid).start()
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            found = BANNER.search(line)
            if found:
                self.first_page_s = time.perf_counter() - start
                self.url = found.group(1)
                break
        else:
            raise RuntimeError(f"explorer serve exited ({self.proc.wait()}) without a banner")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # drain
        page = re.search(r"/s/([^/?]+)", self.url)
        self.session_id = page.group(1) if page else None
        self.base = f"http://127.0.0.1:{self.port}"
        self._wait_listening()
        return self

    def _wait_listening(self, timeout: float = 60) -> None:
        import requests

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.base}/api/passes", timeout=5).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.05)
        raise TimeoutError("the server did not answer")

    def __exit__(self, *exc: object) -> None:
        if self.sampler is not None:
            self.sampler.stop()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._tmp.cleanup()

    # --- memory ------------------------------------------------------------------------------
    @property
    def peak_rss_mb(self) -> tuple[float, float]:
        """(largest single process, largest sum over the tree) in MB."""
        assert self.sampler is not None
        return self.sampler.peak_process_kb / 1024, self.sampler.peak_tree_kb / 1024

    # --- HTTP and Socket.IO ------------------------------------------------------------------
    def get(self, path: str, **params: Any) -> Any:
        import requests

        resp = requests.get(f"{self.base}{path}", params=params, timeout=600)
        resp.raise_for_status()
        return resp.json()

    def socket(self) -> Any:
        import socketio

        from explorer.protocol import NAMESPACE

        client = socketio.Client()
        client.connect(self.base, namespaces=[NAMESPACE], transports=["websocket"])
        return client

    def run(self, session_id: str, options: dict[str, Any], timeout: float = 3600,
            client: Any = None) -> RunTimes:
        """Start a run over Socket.IO and follow its events to the end."""
        from explorer.protocol import NAMESPACE, RUN_EVENT, TERMINAL_EVENTS

        client = client or self.socket()
        done = threading.Event()
        times = RunTimes()

        def on_event(event: dict[str, Any]) -> None:
            now = time.perf_counter()
            times.events.append(event)
            if event["type"] == "run_started" and not times.first_event_s:
                times.first_event_s = now - times.started
            if event["type"] in TERMINAL_EVENTS:
                times.total_s = now - times.started
                times.status = event["type"]
                done.set()

        client.on(RUN_EVENT, on_event, namespace=NAMESPACE)
        times.started = time.perf_counter()
        ack = client.call("start_run", {"session_id": session_id, "options": options},
                          namespace=NAMESPACE, timeout=600)
        if "run_id" not in ack:
            raise RuntimeError(f"start_run refused: {ack}")
        times.run_id = ack["run_id"]
        client.call("subscribe", {"run_id": times.run_id, "since": 0}, namespace=NAMESPACE,
                    timeout=600)
        if not done.wait(timeout):
            raise TimeoutError(f"run {times.run_id} did not end within {timeout} s")
        client.disconnect()
        return times


@dataclass
class RunTimes:
    run_id: str = ""
    started: float = 0.0
    first_event_s: float = 0.0
    total_s: float = 0.0
    status: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
