"""Sessions: an uploaded model stored under a server-chosen name, checked at upload.

A server's SessionService never parses an uploaded file itself: its inspector
imports it in a probe child (explorer/runs/probe.py), and the runs import it
again in their workers. The CLI's (the user named a local file) inspects in its
own process and keeps the imported module for its run.

Import errors are mapped to `ApiError`s by the engine's error class (table
below), so the client gets a 4xx naming the problem, never a traceback.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import IO, Any

from explorer import compiler
from explorer.compiler import Imported
from explorer.protocol import (
    RUN_ACTIVE,
    ApiError,
    Session,
    TensorInfo,
    bad_request,
)
from explorer.session_inputs import (
    check_elements,
    check_pinned,
    clean_name,
    format_for,
)
from explorer.store import Store
from explorer.upload_copy import copy_hashing
from explorer.uploads import UPLOAD_PREFIX, Body, HashedUpload

# Engine error class name -> (HTTP status, error code). The most specific class wins.
IMPORT_ERRORS: dict[str, tuple[int, str]] = {
    "UnsupportedOperatorError": (422, "unsupported_operators"),
    "TensorTooLargeError": (422, "tensor_too_large"),
    "InvalidGraphError": (422, "invalid_graph"),
    "DynamicShapeError": (422, "dynamic_shape"),
    "ConversionError": (422, "conversion_failed"),
    "TypeInferenceError": (422, "type_error"),
    "UnknownFormatError": (415, "unknown_format"),
    "CorruptModelError": (400, "corrupt_model"),
    "UnsafeModelError": (400, "unsafe_model"),
    "ParseError": (400, "parse_error"),
    "FrontendError": (400, "import_failed"),
    "EngineError": (422, "import_failed"),
}


Shapes = dict[str, list[int]] | None
Inspector = Callable[[str, str, Path, Shapes], tuple[Session, dict[str, Any], int]]
"""(session id, the client's file name, the stored file, input shapes) -> the session,
its frontend graph, the id of the stored snapshot of the imported module."""


def session_snapshot_owner(sid: str) -> str:
    """The owner recorded on a session's upload snapshot (runs own the rest)."""
    return f"session:{sid}"


def new_id() -> str:
    return secrets.token_urlsafe(9)


def import_error(exc: Exception, filename: str, server_path: Path | None = None) -> ApiError:
    """The ApiError for an exception raised while importing `filename` (the client's
    name; the server-side path never appears in the message)."""
    for cls in type(exc).__mro__:
        found = IMPORT_ERRORS.get(cls.__name__)
        if found is not None:
            status, code = found
            detail: dict[str, Any] = {"exception": type(exc).__name__}
            if hasattr(exc, "ops"):
                detail["operators"] = {_text(k): int(v) for k, v in dict(exc.ops).items()}
            if hasattr(exc, "suggested"):  # a dynamic shape: the inputs to pin, and a pin
                detail["inputs"], detail["suggested"] = getattr(exc, "inputs", {}), exc.suggested
            message = _scrub(str(exc), server_path, filename)
            located = message.startswith(f"{filename}:")  # a parse error's file:line:col
            return ApiError(status, code, message if located else f"{filename}: {message}",
                            detail)
    return ApiError(422, "import_failed",
                    f"{filename}: the model could not be imported ({type(exc).__name__})",
                    {"exception": type(exc).__name__})


def _text(value: Any) -> str:
    """Any value as printable text (bytes that are not UTF-8 shown escaped)."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "backslashreplace")
    return str(value)


def _scrub(message: str, server_path: Path | None, filename: str) -> str:
    """Replace the server-side file path (and its folder) by the client's file name."""
    if server_path is not None:
        message = message.replace(str(server_path), filename)
        message = message.replace(str(server_path.parent), "<data>")
        message = message.replace(server_path.name, filename)  # the stored name (its hash)
    return message[:4000]


def _tensor(name: str, ty: Any) -> TensorInfo:
    shape, dtype = compiler.tensor_info(ty)
    return TensorInfo(name=name, shape=shape, dtype=dtype)


def _named_dims(info: TensorInfo, entries: list[dict[str, Any]]) -> TensorInfo:
    """`info` with the frontend's symbol ("batch") in place of each "?" it names."""
    entry = next((e for e in entries if e.get("name") == info["name"]), None)
    symbols = entry.get("shape") if entry else None
    if not isinstance(symbols, list) or len(symbols) != len(info["shape"]):
        return info
    shape = [s if d == "?" and isinstance(s, str) else d for d, s in zip(info["shape"], symbols)]
    return TensorInfo(name=info["name"], shape=shape, dtype=info["dtype"])


def describe(sid: str, name: str, imported: Imported) -> Session:
    mod = imported.mod
    entries = list(imported.graph.get("inputs") or [])
    inputs = [_named_dims(_tensor(n, ty), entries)
              for n, ty in compiler.model_inputs(mod, imported.params)]
    outputs = imported.graph.get("outputs") or []
    ret_type = mod["main"].ret_type
    if not outputs and ret_type is not None:
        outputs = [_tensor("output", ret_type)]
    layers = len(imported.graph.get("layers") or [])
    return Session(id=sid, name=name, format=imported.format, created=time.time(),
                   num_layers=layers, inputs=inputs, outputs=list(outputs))


class SessionService:
    """Creates sessions from uploads or local files (see module docstring)."""

    def __init__(self, store: Store, models_dir: Path, cache_size: int = 4,
                 inspector: Inspector | None = None,
                 data_limit: Callable[[], int | None] | None = None) -> None:
        self.store = store
        self.models_dir = models_dir
        self.models_dir.mkdir(parents=True, exist_ok=True)
        self.inspector: Inspector = inspector or self.inspect
        self.data_limit = data_limit or (lambda: None)
        self._cache: OrderedDict[str, Imported] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.RLock()
        self._pending: Counter[str] = Counter()  # model files of uploads being inspected

    def create(self, filename: str, data: bytes | IO[bytes] | Body | HashedUpload,
               shapes: dict[str, list[int]] | None = None) -> Session:
        """A session for uploaded bytes or an uploaded stream (copied to the store in
        chunks, never whole in memory); `filename` is the client's name, used for display
        and the format hint only. The file is stored under the hash of its content, so
        identical uploads share it; an upload that fails leaves nothing behind."""
        display = clean_name(filename)
        format_for(display)
        path = self._keep_file(data, PurePath(display).suffix.lower(), display)
        return self._open(path, display, shapes)

    def open_local(self, path: Path, shapes: dict[str, list[int]] | None = None) -> Session:
        """A session of a file the user named on this machine (`explorer serve PATH`,
        `explorer run PATH`): opened where it is, never copied into the store, and trusted
        as its folder is: ONNX external data beside it is read (memory-mapped, as its
        weights are). Uploads never get here (`create`): they read no other file."""
        path = path.resolve()
        display = clean_name(path.name)
        format_for(display)
        if not path.is_file():
            raise bad_request("not_found", f"{path}: no such file")
        if path.stat().st_size == 0:
            raise bad_request("empty_file", f"{display}: the file is empty")
        if not self.is_local(path):  # a file of the store itself: kept as an upload is
            with open(path, "rb") as handle:
                return self.create(display, handle, shapes)
        with self._lock:
            self._pending[str(path)] += 1
        return self._open(path, display, shapes)

    def is_local(self, path: Path) -> bool:
        """Whether `path` is a user's own file (open_local) rather than a stored upload."""
        return path.parent != self.models_dir

    def pin(self, sid: str, shapes: dict[str, list[int]]) -> Session:
        """A new session of `sid`'s model with its symbolic input dimensions pinned to
        `shapes` (the original session is kept as it is: its runs stay true to it)."""
        session = self.store.session(sid)
        model_file = self.store.session_model_file(sid)
        if model_file is None:
            raise ApiError(409, "no_model", f"session {sid!r} has no model file (imported run)")
        check_pinned(session, shapes)
        merged = {**(self.store.session_graph(sid).get("input_shapes") or {}), **shapes}
        with self._lock:
            path = self.models_dir / model_file
            if not path.exists():
                raise ApiError(409, "no_model", f"session {sid!r} has lost its model file")
            self._pending[model_file] += 1
        return self._open(path, session["name"], merged)

    def _open(self, path: Path, display: str, shapes: Shapes) -> Session:
        """Inspect the stored file (marked in use by the caller) and store its session."""
        sid = new_id()
        failed = True
        try:
            session, graph, snapshot = self.inspector(sid, display, path, shapes)
            graph["input_shapes"] = shapes
            self.store.add_session(session, graph, self._model_file(path))
            self.store.set_session_snapshot(sid, snapshot)
            failed = False
        finally:
            self._release_file(self._model_file(path), failed)
        self.evict(keep=sid)
        return session

    # --- stored files, deletion, the data limit ------------------------------------------
    def _model_file(self, path: Path) -> str:
        """What the store records: a stored upload's name, or a local file's full path."""
        return str(path) if self.is_local(path) else path.name

    def _keep_file(self, data: bytes | IO[bytes] | Body | HashedUpload, suffix: str,
                   display: str) -> Path:
        """The stored copy of `data` (written once per content, in chunks while hashing;
        an upload already written into the store is renamed), marked in use; an empty
        one is refused."""
        if isinstance(data, HashedUpload) and data.path.parent == self.models_dir:
            return self._keep_upload(data, suffix, display)
        fd, tmp = tempfile.mkstemp(dir=self.models_dir, prefix=UPLOAD_PREFIX)
        try:
            try:
                digest, size = copy_hashing(data, fd, getattr(data, "length", None))
            finally:
                os.close(fd)
            if not size:
                raise bad_request("empty_file", f"{display}: the file is empty")
            path = self.models_dir / f"{digest}{suffix}"
            with self._lock:
                self._pending[path.name] += 1
                if path.exists():
                    Path(tmp).unlink()
                else:
                    os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def _keep_upload(self, upload: HashedUpload, suffix: str, display: str) -> Path:
        if not upload.size:
            raise bad_request("empty_file", f"{display}: the file is empty")
        path = self.models_dir / f"{upload.sha256.hexdigest()}{suffix}"
        with self._lock:
            self._pending[path.name] += 1
            upload.keep(path)
        return path

    def _release_file(self, name: str, check: bool = True) -> None:
        """One use of a model file ended; remove a stored upload when nothing uses it any
        more (a local file is the user's: never removed)."""
        with self._lock:
            self._pending[name] -= 1
            if self._pending[name] <= 0:
                del self._pending[name]
                path = self.models_dir / name
                if check and not self.is_local(path) and self.store.model_file_users(name) == 0:
                    path.unlink(missing_ok=True)

    def delete(self, sid: str) -> None:
        """Delete a session, its runs and snapshots, and its model file unless another
        session shares it. A session with a run in progress is not deleted (409)."""
        if any(run["status"] == "running" for run in self.store.runs_of(sid)):
            raise ApiError(409, RUN_ACTIVE,
                           f"session {sid!r} has a run in progress; cancel it first")
        with self._lock:
            model_file = self.store.delete_session(sid, session_snapshot_owner(sid))
            self._cache.pop(sid, None)
            if model_file is not None:
                self._pending[model_file] += 1
                self._release_file(model_file)

    def delete_run(self, rid: str) -> None:
        if self.store.run(rid)["status"] == "running":
            raise ApiError(409, RUN_ACTIVE, f"run {rid!r} is in progress; cancel it first")
        self.store.delete_run(rid)

    def delete_any(self, key: str) -> str:
        """Delete the session or the run with this id; returns which it was."""
        try:
            self.store.session(key)
        except ApiError:
            self.delete_run(key)
            return "run"
        self.delete(key)
        return "session"

    def data_bytes(self) -> int:
        """What the data limit counts: stored content and model files."""
        files = sum(p.stat().st_size for p in self.models_dir.iterdir() if p.is_file())
        return sum(self.store.data_bytes().values()) + files

    def evict(self, keep: str) -> list[str]:
        """Delete the least recently used sessions (never `keep`, never one with a run in
        progress) until the data folder is under the limit; returns their ids."""
        limit = self.data_limit()
        evicted: list[str] = []
        if limit is None:
            return evicted
        for sid in self.store.sessions_by_use():
            if self.data_bytes() <= limit:
                break
            if sid == keep:
                continue
            try:
                self.delete(sid)
            except ApiError:
                continue
            evicted.append(sid)
        return evicted

    def inspect(self, sid: str, display: str, path: Path, shapes: dict[str, list[int]] | None
                ) -> tuple[Session, dict[str, Any], int]:
        """Import the stored file here: the session's description, its frontend graph and
        the id of the stored snapshot of the imported module. The import is kept (see
        `imported`), so a run in this process does not read the file again."""
        imported = self._import(path, shapes, display)
        text, table = compiler.print_snapshot(imported.mod)  # before the check sets types
        session = describe(sid, display, imported)
        try:
            compiler.check_types(imported.mod)
        except Exception as exc:  # mapped by class at the boundary; see IMPORT_ERRORS
            raise import_error(exc, display, path) from exc
        snapshot = self.store.add_snapshot(session_snapshot_owner(sid), text, table)
        self._remember(sid, imported)  # the CLI's run starts from this import
        return session, dict(imported.graph), snapshot

    def _import(self, path: Path, shapes: dict[str, list[int]] | None,
                display: str) -> Imported:
        try:
            imported = compiler.load_model(path, shapes, trusted=self.is_local(path))
        except (ImportError, MemoryError, RecursionError):
            raise
        except Exception as exc:  # mapped by class at the boundary; see IMPORT_ERRORS
            raise import_error(exc, display, path) from exc
        for name, ty in compiler.model_inputs(imported.mod, {}):
            dims = compiler.static_shape(ty)
            if dims is not None:
                check_elements(name, dims)
        return imported

    def imported(self, sid: str) -> Imported:
        """The session's imported module (re-imported from its stored file after a restart)."""
        with self._lock:
            hit = self._cache.get(sid)
            if hit is not None:
                self._cache.move_to_end(sid)
                compiler.forget_types(hit.mod)  # as imported, whatever ran on it before
                return hit
        session = self.store.session(sid)
        model_file = self.store.session_model_file(sid)
        if model_file is None:
            raise ApiError(409, "no_model", f"session {sid!r} has no model file (imported run)")
        shapes = self.store.session_graph(sid).get("input_shapes")
        imported = self._import(self.models_dir / model_file, shapes, session["name"])
        self._remember(sid, imported)
        return imported

    def _remember(self, sid: str, imported: Imported) -> None:
        with self._lock:
            self._cache[sid] = imported
            self._cache.move_to_end(sid)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
