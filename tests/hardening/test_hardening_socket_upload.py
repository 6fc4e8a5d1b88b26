"""The page's raw upload under the production server (gunicorn): the body is read straight
off the socket (explorer/socket_body.py), so gunicorn's own reader must still know where
the request ends: the stored file is the body exactly, the connection serves its next
request, and a body cut short stores nothing and leaves the server up."""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from corpus import mlp_model
from hardening_helpers import real_server

from explorer.protocol import RAW_UPLOAD_TYPE


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("socket-upload")
    with real_server(data) as base:
        yield base, data / "models"


def stored(models: Path) -> list[Path]:
    return sorted(p for p in models.iterdir() if p.is_file())


def test_a_raw_upload_is_stored_whole_and_its_connection_goes_on(served):
    base, models = served
    body = mlp_model(hidden=70_000).SerializeToString()  # several copy chunks, an odd tail
    assert len(body) > 5 << 20 and len(body) % 4096
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
    try:
        conn.request("POST", "/api/sessions?name=mlp.onnx", body=body,
                     headers={"Content-Type": RAW_UPLOAD_TYPE})
        answer = conn.getresponse()
        created = json.loads(answer.read())
        assert answer.status == 201, created
        conn.request("GET", f"/api/sessions/{created['session']['id']}")  # same connection
        again = conn.getresponse()
        assert again.status == 200 and json.loads(again.read())["session"] == created["session"]
    finally:
        conn.close()
    files = stored(models)
    assert [p.name for p in files] == [f"{hashlib.sha256(body).hexdigest()}.onnx"]
    assert files[0].read_bytes() == body


def test_a_raw_body_cut_short_stores_nothing(served):
    base, models = served
    before = stored(models)
    url = urlsplit(base)
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock:
        sock.sendall(f"POST /api/sessions?name=cut.onnx HTTP/1.1\r\nHost: {url.netloc}\r\n"
                     f"Content-Type: {RAW_UPLOAD_TYPE}\r\nContent-Length: 9000000\r\n\r\n"
                     .encode() + b"x" * 3_000_000)
        sock.shutdown(socket.SHUT_WR)  # the client went away mid-body
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"incomplete_upload" in answer
    assert stored(models) == before  # no part of it kept, no temporary file left
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    conn.request("GET", "/api/sessions")
    assert conn.getresponse().status == 200  # still up
    conn.close()
