"""Uploaded files written once, straight into the store, hashed as they arrive.

Werkzeug parses a multipart upload into a temporary file of its own, which the store
would then copy (a 418 MB BERT written twice). `UploadRequest` hands werkzeug a
`HashedUpload` instead: a file in the store's models folder whose SHA-256 grows with
every chunk written, so that keeping the upload (`SessionService.create`) is a rename to
its content's name, not a copy. A file nobody keeps (a request refused later) is
removed when werkzeug closes it.

The page sends no multipart at all (`raw_upload`): its File is the request body
(`Content-Type: application/octet-stream`, the name in `?name=`), read in large chunks
straight into the store while hashing, the same `SessionService.create` path as a stream.
Werkzeug's multipart parser, pure Python, costs seconds on a 418 MB body; a raw body
costs the copy alone.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Protocol, cast

from flask import Request, current_app
from werkzeug.exceptions import ClientDisconnected
from werkzeug.formparser import FormDataParser, MultiPartParser

from explorer.protocol import ApiError, bad_request
from explorer.socket_body import SocketBody

UPLOAD_PREFIX = ".upload-"


class HashedUpload:
    """A write-then-read file in `folder` that knows the hash and size of what it holds."""

    def __init__(self, folder: Path) -> None:
        fd, name = tempfile.mkstemp(dir=folder, prefix=UPLOAD_PREFIX)
        self.path = Path(name)
        self.file: IO[bytes] = os.fdopen(fd, "w+b")
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.kept = False

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self.file.write(data)

    def read(self, size: int = -1) -> bytes:
        return self.file.read(size)

    def readinto(self, view: memoryview) -> int:
        return cast(io.BufferedRandom, self.file).readinto(view)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    def tell(self) -> int:
        return self.file.tell()

    def flush(self) -> None:
        self.file.flush()

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def keep(self, target: Path) -> None:
        """Move the file to `target` (or drop it when `target` exists: same content)."""
        self.file.close()
        if target.exists():
            self.path.unlink(missing_ok=True)
        else:
            os.replace(self.path, target)
        self.kept = True

    def close(self) -> None:
        if not self.file.closed:
            self.file.close()
        if not self.kept:
            self.path.unlink(missing_ok=True)

    @property
    def closed(self) -> bool:
        return self.file.closed


PARSE_CHUNK = 1 << 18
"""Bytes the multipart parser takes at a time: four times werkzeug's default (fewer
Python-level boundary searches over a 418 MB upload), within Flask's 500 KB form memory
limit (a bigger buffer makes werkzeug answer 413)."""


class BigChunkFormParser(FormDataParser):
    """Werkzeug's form parser reading multipart bodies PARSE_CHUNK bytes at a time."""

    def _parse_multipart(self, stream: IO[bytes], mimetype: str, content_length: int | None,
                         options: dict[str, str]) -> Any:
        parser = MultiPartParser(stream_factory=self.stream_factory,
                                 max_form_memory_size=self.max_form_memory_size,
                                 max_form_parts=self.max_form_parts, cls=self.cls,
                                 buffer_size=PARSE_CHUNK)
        boundary = options.get("boundary", "").encode("ascii")
        if not boundary:
            raise ValueError("Missing boundary")
        form, files = parser.parse(stream, boundary, content_length)
        return stream, form, files


class UploadRequest(Request):
    """Flask's request, its uploaded files written as HashedUploads in the store."""

    form_data_parser_class = BigChunkFormParser

    def _get_file_stream(self, total_content_length: int | None, content_type: str | None,
                         filename: str | None = None, content_length: int | None = None
                         ) -> Any:
        # The app's explorer extension (explorer.extensions, which imports the sessions and
        # so this module) is looked up on the app, not imported.
        explorer = current_app.extensions["explorer"].start()
        return HashedUpload(explorer.sessions.models_dir)


def raw_upload(req: Request) -> tuple[str, Body]:
    """The client's file name (`?name=`) and the body of a raw upload, checked before a
    byte of it is read: a name, a length (413 beyond MAX_CONTENT_LENGTH, raised by
    werkzeug as the stream is opened). The body ends at Content-Length; one cut short
    raises ClientDisconnected while it is copied. Under gunicorn it is read straight
    off the socket (explorer.socket_body)."""
    name = req.args.get("name", "")
    if not name.strip():
        raise bad_request("missing_name", "a raw upload names its file: "
                          "POST /api/sessions?name=FILE with the file as the body")
    if req.content_length is None and "wsgi.input_terminated" not in req.environ:
        raise ApiError(411, "length_required", "a raw upload needs a Content-Length header")
    stream = req.stream  # raises 413 when the length is over the limit
    if req.content_length is None:
        return name, WholeBody(stream, None)
    direct = SocketBody.of(req.environ, req.content_length)
    return name, direct or WholeBody(stream, req.content_length)


class Body(Protocol):
    """What `copy_hashing` reads: bytes into a buffer, and the length announced."""

    @property
    def length(self) -> int | None: ...

    def readinto(self, view: memoryview) -> int: ...


class WholeBody:
    """A request body that must bring all of its Content-Length: one that ends sooner
    (the client went away) raises ClientDisconnected, whichever server ran the request
    (werkzeug's stream does so itself; gunicorn's just ends, as the limit is its own).
    With no length (`wsgi.input_terminated`), the stream's end is the body's."""

    def __init__(self, stream: IO[bytes], length: int | None) -> None:
        self.stream, self.length, self.seen = stream, length, 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.seen += len(data)
        if not data and size and self.length is not None and self.seen < self.length:
            raise ClientDisconnected()
        return data

    def readinto(self, view: memoryview) -> int:
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)


__all__ = ["Body", "HashedUpload", "UPLOAD_PREFIX", "UploadRequest", "WholeBody", "raw_upload"]
