"""copy_hashing (explorer/upload_copy.py): a stream copied into a store file through
reused buffers, hashed on one helper thread and written (past the page cache where the
file system allows) on another; what lands on disk and its hash are the stream's."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from werkzeug.exceptions import ClientDisconnected

from explorer import upload_copy
from explorer.upload_copy import DIRECT_ALIGN, StoreFile, copy_hashing
from explorer.uploads import WholeBody

CHUNK = 2 * DIRECT_ALIGN  # small chunks: many turns of the pipeline on a small file


class ReadOnly:
    """A stream with read() alone (no readinto), in pieces smaller than asked for."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, size: int = -1) -> bytes:
        size = min(size, 3000) if size >= 0 else len(self.data)
        piece = self.data[self.pos:self.pos + size]
        self.pos += len(piece)
        return piece


def copied(tmp_path: Path, source: object, length: int | None = None) -> tuple[str, int, bytes]:
    path = tmp_path / "out"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        digest, size = copy_hashing(source, fd, length)  # type: ignore[arg-type]
    finally:
        os.close(fd)
    return digest, size, path.read_bytes()


@pytest.mark.parametrize("size", [1, DIRECT_ALIGN - 1, DIRECT_ALIGN, CHUNK, CHUNK + 1,
                                  7 * CHUNK + 123])
@pytest.mark.parametrize("kind", ["readinto", "read", "body"])
def test_what_is_written_and_hashed_is_the_stream(tmp_path, monkeypatch, size, kind):
    monkeypatch.setattr(upload_copy, "COPY_CHUNK", CHUNK)
    data = os.urandom(size)
    source = {"readinto": io.BytesIO(data), "read": ReadOnly(data),
              "body": WholeBody(ReadOnly(data), size)}[kind]  # type: ignore[arg-type]
    digest, written, stored = copied(tmp_path, source, size if kind == "body" else None)
    assert (digest, written) == (hashlib.sha256(data).hexdigest(), size)
    assert stored == data


def test_bytes_are_written_as_they_are(tmp_path):
    data = os.urandom(10_000)
    assert copied(tmp_path, data) == (hashlib.sha256(data).hexdigest(), 10_000, data)


def test_a_stream_shorter_than_announced_leaves_no_reserved_tail(tmp_path, monkeypatch):
    """A stream that ends on its own (no Content-Length check) before the length it was
    given room for: the file is what arrived, not the reserved size."""
    monkeypatch.setattr(upload_copy, "COPY_CHUNK", CHUNK)
    data = os.urandom(3 * CHUNK + 5)
    digest, size, stored = copied(tmp_path, io.BytesIO(data), 10 * CHUNK)
    assert (size, stored, digest) == (len(data), data, hashlib.sha256(data).hexdigest())


def test_a_body_cut_short_raises_after_the_helpers_are_done(tmp_path, monkeypatch):
    monkeypatch.setattr(upload_copy, "COPY_CHUNK", CHUNK)
    body = WholeBody(io.BytesIO(os.urandom(5 * CHUNK)), 9 * CHUNK)
    with pytest.raises(ClientDisconnected):
        copied(tmp_path, body, 9 * CHUNK)


def test_an_unaligned_write_turns_the_file_back_to_ordinary_writes(tmp_path):
    path = tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        out = StoreFile(fd)
        aligned = memoryview(bytearray(os.urandom(DIRECT_ALIGN)))
        if out.direct:  # the buffer of a bytearray may not be aligned: the write says so
            out.write(aligned)
        out.write(memoryview(b"tail"))
        assert not out.direct
    finally:
        os.close(fd)
    assert path.read_bytes().endswith(b"tail")
