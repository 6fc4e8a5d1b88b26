"""Security defaults: loopback by default, a warning on all interfaces, no endpoint opens a
path the client supplies (route parameters, query arguments, upload file names)."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from corpus import mlp_model
from hardening_helpers import free_port, wait_http

from explorer.cli import _parser, main

SECRET = "hardening-secret-4b1d"
TRAVERSALS = ("../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", "%2e%2e/%2e%2e/etc/passwd",
              "/etc/passwd", "%2Fetc%2Fpasswd", "..\\..\\secret.txt", "../secret.txt",
              "....//....//secret.txt", "..%252F..%252Fsecret.txt", "models/../../secret.txt")
ROUTES = ("/api/sessions/{x}", "/api/runs/{x}", "/api/runs/{x}/events", "/api/runs/{x}/timing",
          "/api/runs/{x}/schedules", "/api/runs/{x}/schedules/{x}", "/api/runs/{x}/export",
          "/api/runs/{x}/backtrace/{x}", "/api/runs/{x}/layers/{x}", "/api/snapshots/{x}",
          "/api/diff?a={x}&b={x}", "/api/runs/{x}/events?since={x}", "/s/{x}", "/s/{x}/r/{x}",
          "/static/{x}", "/{x}")


def upload(client: Any, name: str, data: bytes) -> Any:
    return client.post("/api/sessions", data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


@pytest.fixture()
def secret(data_dir: Path) -> Path:
    """A file next to the data folder that no request may ever read."""
    path = data_dir.parent / "secret.txt"
    path.write_text(SECRET)
    return path


def test_no_route_parameter_opens_a_client_path(client: Any, secret: Path, audit: Any) -> None:
    sid = upload(client, "m.onnx", mlp_model().SerializeToString()).get_json()["session"]["id"]
    for route in ROUTES:
        for attack in TRAVERSALS:
            resp = client.get(route.format(x=attack))
            body = resp.get_data(as_text=True)
            assert resp.status_code < 500, (route, attack, body[:300])
            assert SECRET not in body and "root:x:0:0" not in body, (route, attack)
            if route.startswith("/api/") and resp.status_code >= 400:
                assert set(resp.get_json()["error"]) == {"code", "message", "detail"}
    for route in ("/api/sessions/{x}", "/api/runs/{x}/layers/{x}"):
        assert client.get(route.format(x=f"{sid}/../../secret.txt")).status_code in (400, 404)
    opened = [Path(arg) for event, arg in audit.events if event == "open"]
    assert not [p for p in opened if p.name in ("passwd", "secret.txt")], opened


def test_upload_file_names_never_choose_the_stored_path(client: Any, data_dir: Path,
                                                        secret: Path) -> None:
    data = mlp_model().SerializeToString()
    client.get("/api/sessions")  # the services (and the data folder) start on first use
    before = sorted(p.name for p in data_dir.parent.iterdir())
    for name in ("../../evil.onnx", "..\\..\\evil.onnx", "/etc/evil.onnx", "../secret.txt.onnx",
                 "models/../../evil.onnx", "evil.onnx\x00.txt"):
        resp = upload(client, name, data)
        assert resp.status_code in (201, 400, 415, 422), (name, resp.get_json())
        if resp.status_code == 201:
            session = resp.get_json()["session"]
            assert "/" not in session["name"] and "\\" not in session["name"]
    assert sorted(p.name for p in data_dir.parent.iterdir()) == before
    assert secret.read_text() == SECRET
    stored = list((data_dir / "models").iterdir())
    assert stored and all("evil" not in p.name and "secret" not in p.name for p in stored)


def _export_doc(secret: Path, run: dict[str, Any]) -> bytes:
    import json

    return json.dumps({"format": "ir-explorer-run", "version": 1,
                       "session": {"name": "../secret.txt"}, "graph": {}, "run": run,
                       "events": [], "snapshots": {"1": {"text": str(secret), "source_map": []}},
                       "artifacts": {}}).encode()


IMPORT_DOCS = {
    "not-json": lambda secret: b"not json",
    "empty-object": lambda secret: b"{}",
    "list": lambda secret: b"[]",
    "incomplete-run": lambda secret: _export_doc(secret, {}),
}


@pytest.mark.parametrize("make", IMPORT_DOCS.values(), ids=IMPORT_DOCS.keys())
def test_run_import_answers_4xx_and_never_reads_named_paths(client: Any, secret: Path,
                                                            make: Any) -> None:
    resp = client.post("/api/runs/import", data={"file": (io.BytesIO(make(secret)), "r.json")},
                       content_type="multipart/form-data")
    assert resp.status_code < 500, resp.get_data(as_text=True)[:300]
    assert SECRET not in resp.get_data(as_text=True)


def test_serve_binds_loopback_by_default_and_warns_on_all_interfaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    assert _parser().parse_args(["serve"]).host == "127.0.0.1"
    from explorer import serving

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(serving, "listen",
                        lambda app, host, port: calls.append({"host": host, "port": port}))
    assert main(["serve", "--host", "0.0.0.0", "--data", str(tmp_path / "d")]) == 0
    assert calls[-1]["host"] == "0.0.0.0" and "WARNING" in capsys.readouterr().err
    assert main(["serve", "--data", str(tmp_path / "d")]) == 0
    assert calls[-1]["host"] == "127.0.0.1" and "WARNING" not in capsys.readouterr().err


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} writes them) listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if int(hexport, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                found.append(addr)
    return found


def test_a_real_server_listens_on_loopback_only(tmp_path: Path) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "explorer.cli", "serve", "--port", str(port), "--data",
           str(tmp_path / "data")]
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        try:
            wait_http(f"http://127.0.0.1:{port}")
            deadline = time.monotonic() + 5
            while not _listening(port) and time.monotonic() < deadline:
                time.sleep(0.05)
            addrs = _listening(port)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    if not addrs:
        pytest.skip("/proc/net/tcp does not show this process's sockets here")
    assert set(addrs) == {"0100007F"}, addrs  # 127.0.0.1 only, never 0.0.0.0 / ::
