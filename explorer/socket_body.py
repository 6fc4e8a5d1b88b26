"""A raw upload's body read straight off gunicorn's socket, into the caller's buffer.

gunicorn hands the app its body as `wsgi.input`, a `Body` over a `LengthReader` over a
`SocketUnreader`: every chunk is received into a new bytes object, appended to a
BytesIO, copied out of it and sliced, once per layer, and werkzeug's stream wraps it
once more. On a 418 MB upload those copies cost more than the socket itself. A raw
upload only wants its bytes in order, so `SocketBody.of` takes over the reading when the
request is that plain case (a body of known length nobody has read from yet):

- the bytes gunicorn already received with the headers are handed out first;
- the rest is `recv_into` the caller's buffer (one copy, kernel to buffer; the GIL is
  released while waiting);
- gunicorn's reader is told what was taken, so that it neither waits for those bytes
  after the response nor keeps a connection open on a body it believes unread.

Any other request (another server, chunked, HTTP/2, a body already read from) keeps
the server's own stream: `SocketBody.of` answers None.
"""

from __future__ import annotations

import io
import socket
from typing import Any

from werkzeug.exceptions import ClientDisconnected


class SocketBody:
    """The `length` bytes of a request body: `readinto` fills a buffer from what gunicorn
    already holds, then from the socket; a body that ends sooner raises
    ClientDisconnected."""

    def __init__(self, sock: socket.socket, reader: Any, held: bytes, length: int) -> None:
        self.sock, self.reader, self.length = sock, reader, length
        self.held = memoryview(held)
        self.left = length

    @classmethod
    def of(cls, environ: dict[str, Any], length: int) -> SocketBody | None:
        """The body of this gunicorn request read off its socket, or None when the
        request is not the plain case (see module docstring)."""
        try:
            from gunicorn.http.body import Body, LengthReader
            from gunicorn.http.unreader import SocketUnreader
        except ImportError:  # not served by gunicorn
            return None
        body, sock = environ.get("wsgi.input"), environ.get("gunicorn.socket")
        if not isinstance(body, Body) or type(body.reader) is not LengthReader:
            return None
        reader = body.reader
        unreader = reader.unreader
        if (not isinstance(unreader, SocketUnreader) or unreader.sock is not sock
                or reader.length != length or body.buf.getvalue()):
            return None
        buffered = unreader.buf.getvalue()
        unreader.buf = io.BytesIO()
        unreader.buf.write(buffered[length:])  # a pipelined next request stays gunicorn's
        return cls(sock, reader, buffered[:length], length)

    def readinto(self, view: memoryview) -> int:
        """Bytes placed at the start of `view` (0 once the body is complete)."""
        want = min(len(view), self.left)
        if not want:
            return 0
        if self.held:
            got = min(want, len(self.held))
            view[:got] = self.held[:got]
            self.held = self.held[got:]
        else:
            try:
                got = self.sock.recv_into(view[:want])
            except (ConnectionError, TimeoutError) as exc:
                raise ClientDisconnected() from exc
            if not got:
                raise ClientDisconnected()
        self.left -= got
        self.reader.length -= got
        return got


__all__ = ["SocketBody"]
