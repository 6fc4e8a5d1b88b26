"""An upload copied into the store once: read, hashed and written in a pipeline.

`copy_hashing` reads the body into a few reused buffers; while one is being filled (from
the socket, explorer.socket_body), the ones before it are hashed (SHA-256, the file's
name in the store) on one helper thread and written on another. hashlib, file writes
and socket reads all release the GIL, so a 418 MB upload costs its slowest stage, not
the sum of the three.

The file is written around the page cache (O_DIRECT, where the file system allows it):
an uploaded model is written once and its weights are then mostly never read (they are
memory-mapped, and only numerics touch them), so routing them through the page cache
only costs memory: every page must be allocated, filled and later written back
anyway. Allocating hundreds of MB of fresh page cache is what made the write the
slowest stage (1.5-2.3 s for 418 MB on a VM whose idle memory goes back to its host,
against 0.25 s straight to its disk); it also evicts whatever else the machine had
cached. A body of known length gets its room on disk first (one allocation, and a
full disk is known before the body is read).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import itertools
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Protocol, cast

COPY_CHUNK = 1 << 22
"""Bytes read, hashed and written at a time."""
BUFFERS = 3
"""Chunks in flight: one being read, one being hashed, one being written."""
DIRECT_ALIGN = 4096
"""What O_DIRECT writes must be a multiple of (the logical block size of common disks;
the buffers are page-aligned)."""


class Readable(Protocol):
    def readinto(self, view: memoryview) -> int: ...


class StoreFile:
    """The writing end of a file in the store, past the page cache when it can be: a
    write that O_DIRECT cannot take (a short last chunk, a file system that refuses
    it) turns the file back to ordinary writes."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.direct = _set_direct(fd, True)

    def write(self, view: memoryview) -> None:
        if self.direct and len(view) % DIRECT_ALIGN:
            self.buffered()
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except OSError as exc:
                if not self.direct or exc.errno != errno.EINVAL:
                    raise
                self.buffered()  # the device wants more alignment than DIRECT_ALIGN

    def buffered(self) -> None:
        self.direct = False
        _set_direct(self.fd, False)


def copy_hashing(data: bytes | IO[bytes] | Readable, fd: int, length: int | None = None
                 ) -> tuple[str, int]:
    """Write `data` (bytes, or a stream that ends where the upload does) to the file
    `fd` from its start: the SHA-256 and size of what was written. `length` is what the
    client announced, when it did (room is reserved for it)."""
    digest = hashlib.sha256()
    if isinstance(data, bytes | bytearray | memoryview):
        digest.update(data)
        _write_all(fd, memoryview(data))
        return digest.hexdigest(), len(data)
    if length:
        _preallocate(fd, length)
    out = StoreFile(fd)
    buffers = [memoryview(mmap.mmap(-1, COPY_CHUNK)) for _ in range(BUFFERS)]
    busy: list[list[Future[None]]] = [[] for _ in buffers]  # each buffer's hash and write
    size = 0
    # Leaving the executors waits for their jobs, whether or not the reading ended well.
    with ThreadPoolExecutor(1, thread_name_prefix="upload-hash") as hasher, \
            ThreadPoolExecutor(1, thread_name_prefix="upload-write") as writer:
        for turn in itertools.count():
            slot = turn % len(buffers)
            _wait(busy[slot])  # the buffer's chunk before is hashed and written
            got = _fill(data, buffers[slot])
            if not got:
                break
            chunk = buffers[slot][:got]
            busy[slot] = [hasher.submit(digest.update, chunk), writer.submit(out.write, chunk)]
            size += got
        for futures in busy:
            _wait(futures)
    if length and size != length:
        os.ftruncate(fd, size)  # a stream that ended on its own: no reserved tail
    return digest.hexdigest(), size


def _wait(futures: list[Future[None]]) -> None:
    for future in futures:
        future.result()


def _fill(data: IO[bytes] | Readable, view: memoryview) -> int:
    """Read into `view` until it is full or the stream ends: the bytes read."""
    readinto = getattr(data, "readinto", None) or _Reads(cast(IO[bytes], data)).readinto
    filled = 0
    while filled < len(view):
        got = readinto(view[filled:])
        if not got:
            break
        filled += got
    return filled


class _Reads:
    """`readinto` for a stream that only reads."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def readinto(self, view: memoryview) -> int:
        data = self.stream.read(len(view))
        view[:len(data)] = data
        return len(data)


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view):]


def _set_direct(fd: int, on: bool) -> bool:
    """Turn O_DIRECT on or off for `fd`: whether it is now on."""
    direct = getattr(os, "O_DIRECT", 0)
    if not direct:
        return False
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | direct if on else flags & ~direct)
    except OSError:
        return False
    return on


def _preallocate(fd: int, length: int) -> None:
    """Reserve `length` bytes for the file where the file system can."""
    try:
        os.posix_fallocate(fd, 0, length)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise


__all__ = ["COPY_CHUNK", "Readable", "StoreFile", "copy_hashing"]
