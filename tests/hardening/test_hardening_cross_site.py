"""Cross-site control (issue 20): a foreign page can neither open the socket nor change state
over HTTP, a foreign Host header (DNS rebinding) is refused, a non-loopback server asks
every request and socket for its token, and every answer carries the security headers."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from corpus import mlp_model
from hardening_helpers import NAMESPACE, thread_server

from explorer.testing import app_for_tests

EVIL = ("http://evil.example", "null", "http://127.0.0.1.evil.example")


def upload(client: Any, data: bytes, **headers: str) -> Any:
    return client.post("/api/sessions", data={"file": (io.BytesIO(data), "m.onnx")},
                       content_type="multipart/form-data", headers=headers)


def _connect(base: str, transport: str, headers: dict[str, str]) -> bool:
    import socketio

    client = socketio.Client(reconnection=False)
    try:
        client.connect(base, namespaces=[NAMESPACE], transports=[transport], headers=headers,
                       wait_timeout=10)
    except socketio.exceptions.ConnectionError:
        return False
    client.disconnect()
    return True


@pytest.mark.parametrize("transport", ["websocket", "polling"])
def test_socket_refuses_a_foreign_origin_and_accepts_its_own(app: Any, transport: str) -> None:
    with thread_server(app) as base:
        for origin in EVIL:
            assert not _connect(base, transport, {"Origin": origin}), origin
        # websocket-client always sends its own Origin (the server's): {} is same-origin there
        assert _connect(base, transport, {"Origin": base} if transport == "polling" else {})
        assert _connect(base, transport, {})


def test_state_changing_http_requires_the_own_origin(client: Any) -> None:
    data = mlp_model().SerializeToString()
    for origin in EVIL:
        resp = upload(client, data, Origin=origin)
        assert resp.status_code == 403, (origin, resp.status_code)
        assert resp.get_json()["error"]["code"] == "cross_origin"
        assert client.post("/api/sessions/demo", headers={"Origin": origin}).status_code == 403
    assert client.get("/api/sessions").get_json()["sessions"] == []
    assert upload(client, data, Origin="http://localhost").status_code == 201
    assert upload(client, data).status_code == 201
    assert client.get("/api/sessions", headers={"Origin": EVIL[0]}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:5000", "127.0.0.1.nip.io"])
def test_a_foreign_host_header_is_refused(client: Any, host: str) -> None:
    for path in ("/", "/api/sessions", "/static/dist/app.js"):
        resp = client.get(path, headers={"Host": host})
        assert resp.status_code == 403, (host, path, resp.status_code)
    for ok in ("127.0.0.1:5000", "localhost", "[::1]:8080", "localhost:1"):
        assert client.get("/api/sessions", headers={"Host": ok}).status_code == 200, ok


def test_a_foreign_host_cannot_open_the_socket(app: Any) -> None:
    with thread_server(app) as base:
        assert not _connect(base, "polling", {"Host": "evil.example"})
        assert not _connect(base, "websocket",
                            {"Host": "evil.example", "Origin": "http://evil.example"})


def test_non_loopback_server_requires_its_token(data_dir: Path) -> None:
    with app_for_tests(data_dir) as app:
        app.config.update(ACCESS_TOKEN="s3cret-token", ALLOWED_HOSTS=["10.1.2.3"])
        client = app.test_client()
        assert client.get("/api/sessions").status_code == 401
        assert client.get("/").status_code == 401
        assert client.get("/api/sessions?token=wrong").status_code == 401
        assert client.get("/api/sessions",
                          headers={"Authorization": "token s3cret-token"}).status_code == 200
        first = client.get("/?token=s3cret-token")  # the printed URL: sets the cookie
        assert first.status_code in (200, 302)
        assert "HttpOnly" in first.headers["Set-Cookie"]
        assert client.get("/api/sessions").status_code == 200  # the cookie now
        assert client.get("/api/sessions", headers={
            "Host": "10.1.2.3:5000", "Authorization": "token s3cret-token"}).status_code == 200
        with thread_server(app) as base:
            assert not _connect(base, "polling", {})
            assert _connect(base + "?token=s3cret-token", "polling", {})


def test_answers_carry_security_headers_and_no_version_banner(client: Any) -> None:
    for path in ("/", "/api/sessions", "/api/nope"):
        resp = client.get(path)
        csp = resp.headers.get("Content-Security-Policy", "")
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, (path, csp)
        assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert resp.headers.get("X-Frame-Options") == "DENY"
        assert resp.headers.get("X-Content-Type-Options") == "nosniff"
        assert resp.headers.get("Referrer-Policy") == "no-referrer"
        assert "Werkzeug" not in resp.headers.get("Server", "")


def test_the_page_has_no_inline_script(client: Any) -> None:
    import re

    html = client.get("/").get_data(as_text=True)
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S)
    assert scripts and all("src=" in attrs and not body.strip() for attrs, body in scripts)
    assert not re.search(r"\son[a-z]+=", html)  # no inline event handlers


def test_serve_on_a_non_loopback_address_prints_a_token_url(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from explorer import serving
    from explorer.cli import main

    seen: list[Any] = []
    monkeypatch.setattr(serving, "listen", lambda app, host, port: seen.append(app))
    assert main(["serve", "--host", "0.0.0.0", "--data", str(tmp_path / "d")]) == 0
    token = seen[-1].config["ACCESS_TOKEN"]
    assert token and len(token) >= 24 and f"?token={token}" in capsys.readouterr().out
    assert main(["serve", "--data", str(tmp_path / "d")]) == 0
    assert seen[-1].config["ACCESS_TOKEN"] is None and "token" not in capsys.readouterr().out


def test_a_real_server_has_no_banner_and_no_version_header(tmp_path: Path) -> None:
    import subprocess
    import sys
    import urllib.request

    from hardening_helpers import free_port, wait_http

    port = free_port()
    cmd = [sys.executable, "-m", "explorer.cli", "serve", "--port", str(port), "--data",
           str(tmp_path / "data")]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        try:
            wait_http(f"http://127.0.0.1:{port}")
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as resp:
                server = resp.headers.get("Server", "")
                csp = resp.headers.get("Content-Security-Policy", "")
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=10)
    assert "Werkzeug" not in server and "Python" not in server, server
    assert "frame-ancestors" in csp
    assert "development server" not in err.lower(), err
