"""SQLite persistence: sessions, runs, their events, snapshots and run artifacts.

Snapshot texts and source maps are content-addressed blobs (sha256 of the
bytes, zlib-compressed at a fast level), so a module state printed twice is
stored once. A source map is stored as columns (`SourceMapTable`: a small JSON
header of interned strings, then little-endian int64 columns) and turned into
the protocol's SourceMapEntry JSON when read; maps stored as JSON by older
versions are read as they are. Run artifacts are blobs too (those older versions stored
inline are moved into blobs when the store opens). One connection per Store, guarded by a lock:
handlers and background runs share it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from explorer.compiler import SourceMapTable
from explorer.protocol import RunEvent, RunSummary, Session, not_found

SourceMapLike = SourceMapTable | list[dict[str, Any]]

_MAP_MAGIC = b"IRX-SOURCE-MAP-COLUMNS-1\n"
_ZLIB_LEVEL = 1  # ~4x faster than 6; snapshots still take ~1/7 of their text


def encode_source_map(source_map: SourceMapLike) -> bytes:
    """The stored form of a source map: magic, header length, JSON header, int64 columns.
    Dicts that are not exactly protocol entries are kept as JSON, so they read back as
    they were given."""
    table = source_map if isinstance(source_map, SourceMapTable) \
        else _table_of_dicts(source_map)
    if table is None:
        return json.dumps(source_map, separators=(",", ":")).encode()
    table = table.canonical()
    fields: dict[str, Any] = {"rows": len(table), "names": table.names,
                              "span_sets": table.span_sets}
    if table.qparams:  # the values of qnn scales and zero points, by node id
        fields["qparams"] = [[k, v] for k, v in table.qparams.items()]
    header = json.dumps(fields, separators=(",", ":")).encode()
    return b"".join((_MAP_MAGIC, struct.pack("<I", len(header)), header,
                     table.columns_bytes()))


def _table_of_dicts(entries: list[dict[str, Any]]) -> SourceMapTable | None:
    try:
        table = SourceMapTable.from_json(entries)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return table if table.to_json() == entries else None


def decode_source_map(raw: bytes) -> SourceMapTable | None:
    """The table of a stored map; None for a map stored as JSON (read it as it is)."""
    if not raw.startswith(_MAP_MAGIC):
        return None
    start = len(_MAP_MAGIC) + 4
    (size,) = struct.unpack_from("<I", raw, len(_MAP_MAGIC))
    header = json.loads(raw[start:start + size])
    return SourceMapTable.from_columns_bytes(raw[start + size:], header["names"],
                                             header["span_sets"],
                                             dict(header.get("qparams", [])))

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, created REAL NOT NULL, model_file TEXT,
    session TEXT NOT NULL, graph TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL,
    text_hash TEXT NOT NULL, map_hash TEXT NOT NULL, line_count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, created REAL NOT NULL,
    status TEXT NOT NULL, summary TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs(session_id, created);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL, idx INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (run_id, idx));
CREATE TABLE IF NOT EXISTS session_snapshots (
    session_id TEXT PRIMARY KEY, snapshot_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS artifact_refs (
    run_id TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (run_id, key));
CREATE INDEX IF NOT EXISTS snapshots_by_run ON snapshots(run_id);
"""
_BLOBS_IN_USE = ("SELECT text_hash FROM snapshots UNION SELECT map_hash FROM snapshots "
                 "UNION SELECT hash FROM artifact_refs")


def strict_json(value: Any) -> str:
    """JSON text for storage; NaN and infinities are refused (ValueError), since what is
    stored is served again and must stay valid JSON for every client."""
    return json.dumps(value, allow_nan=False)


class Store:
    """All persistent state of the explorer (one SQLite file, or `:memory:`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._upgrade()

    def _upgrade(self) -> None:
        """Bring a database of an older version up to date: sessions get their `used`
        column; artifacts stored inline (table `artifacts`, JSON text) move into compressed
        content-addressed blobs, byte for byte, and the old table is dropped."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(sessions)")}
        if "used" not in columns:
            self._db.execute("ALTER TABLE sessions ADD COLUMN used REAL")
        if not self._has_inline_artifacts():  # the usual case: no write lock taken
            return
        with self._tx() as db:
            if not self._has_inline_artifacts():  # another process moved them meanwhile
                return
            for run_id, key, text in db.execute("SELECT run_id, key, data FROM artifacts"
                                                ).fetchall():
                digest = self._put_blob(db, text.encode())
                db.execute("INSERT OR IGNORE INTO artifact_refs VALUES (?, ?, ?)",
                           (run_id, key, digest))  # a ref already there is the newer one
            db.execute("DROP TABLE artifacts")
            self._collect_blobs(db)

    def _has_inline_artifacts(self) -> bool:
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                "AND name = 'artifacts'").fetchone() is not None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _one(self, sql: str, args: tuple[Any, ...]) -> Any:
        with self._lock:
            return self._db.execute(sql, args).fetchone()

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # --- sessions ---------------------------------------------------------------
    def add_session(self, session: Session, graph: dict[str, Any], model_file: str | None) -> None:
        with self._tx() as db:
            db.execute("INSERT INTO sessions (id, created, model_file, session, graph, used) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (session["id"], session["created"], model_file,
                        strict_json(session), strict_json(graph), time.time()))

    def session(self, sid: str) -> Session:
        row = self._one("SELECT session FROM sessions WHERE id = ?", (sid,))
        if row is None:
            raise not_found("session", sid)
        return cast(Session, json.loads(row[0]))

    def rename_session(self, sid: str, name: str) -> Session:
        """Store a new display name for the session; returns the renamed session."""
        session = self.session(sid)
        session["name"] = name
        with self._tx() as db:
            db.execute("UPDATE sessions SET session = ? WHERE id = ?", (strict_json(session), sid))
        return session

    def session_graph(self, sid: str) -> dict[str, Any]:
        row = self._one("SELECT graph FROM sessions WHERE id = ?", (sid,))
        if row is None:
            raise not_found("session", sid)
        return cast(dict[str, Any], json.loads(row[0]))

    def session_model_file(self, sid: str) -> str | None:
        row = self._one("SELECT model_file FROM sessions WHERE id = ?", (sid,))
        if row is None:
            raise not_found("session", sid)
        return cast(str | None, row[0])

    def set_session_snapshot(self, sid: str, snapshot_id: int) -> None:
        """The snapshot of the session's imported module, made at upload."""
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO session_snapshots VALUES (?, ?)",
                       (sid, snapshot_id))

    def session_snapshot(self, sid: str) -> int | None:
        row = self._one("SELECT snapshot_id FROM session_snapshots WHERE session_id = ?", (sid,))
        return None if row is None else int(row[0])

    def touch_session(self, sid: str) -> None:
        """Mark the session as just used (least recently used sessions are evicted first)."""
        with self._tx() as db:
            db.execute("UPDATE sessions SET used = ? WHERE id = ?", (time.time(), sid))

    def sessions_by_use(self) -> list[str]:
        """Session ids, least recently used first."""
        rows = self._all("SELECT id FROM sessions ORDER BY COALESCE(used, created), rowid")
        return [str(r[0]) for r in rows]

    def model_file_users(self, model_file: str) -> int:
        row = self._one("SELECT COUNT(*) FROM sessions WHERE model_file = ?", (model_file,))
        return int(row[0])

    def delete_session(self, sid: str, snapshot_owner: str) -> str | None:
        """Delete a session, its runs and what only they use; returns its model file name
        (the caller removes the file when no other session uses it)."""
        model_file = self.session_model_file(sid)
        with self._tx() as db:
            for (rid,) in db.execute("SELECT id FROM runs WHERE session_id = ?",
                                     (sid,)).fetchall():
                self._delete_run_rows(db, rid)
            db.execute("DELETE FROM snapshots WHERE run_id = ?", (snapshot_owner,))
            db.execute("DELETE FROM session_snapshots WHERE session_id = ?", (sid,))
            db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
            self._collect_blobs(db)
        return model_file

    def delete_run(self, rid: str) -> None:
        self.run(rid)
        with self._tx() as db:
            self._delete_run_rows(db, rid)
            self._collect_blobs(db)

    @staticmethod
    def _delete_run_rows(db: sqlite3.Connection, rid: str) -> None:
        for table in ("events", "artifact_refs", "snapshots"):
            db.execute(f"DELETE FROM {table} WHERE run_id = ?", (rid,))
        db.execute("DELETE FROM runs WHERE id = ?", (rid,))

    @staticmethod
    def _collect_blobs(db: sqlite3.Connection) -> None:
        db.execute(f"DELETE FROM blobs WHERE hash NOT IN ({_BLOBS_IN_USE})")

    def data_bytes(self) -> dict[str, int]:
        """Bytes of stored content by kind (what the data limit counts besides model files)."""
        sizes = {}
        for name, sql in (("blobs", "SELECT SUM(LENGTH(data)) FROM blobs"),
                          ("events", "SELECT SUM(LENGTH(data)) FROM events"),
                          ("sessions", "SELECT SUM(LENGTH(session) + LENGTH(graph)) "
                                       "FROM sessions")):
            sizes[name] = int(self._one(sql, ())[0] or 0)
        return sizes

    def sessions(self) -> list[Session]:
        rows = self._all("SELECT session FROM sessions ORDER BY created DESC, rowid DESC")
        return [json.loads(r[0]) for r in rows]

    # --- runs ---------------------------------------------------------------------
    def add_run(self, summary: RunSummary) -> None:
        with self._tx() as db:
            db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
                       (summary["id"], summary["session_id"], time.time(), summary["status"],
                        strict_json(summary)))

    def update_run(self, summary: RunSummary) -> None:
        with self._tx() as db:
            db.execute("UPDATE runs SET status = ?, summary = ? WHERE id = ?",
                       (summary["status"], strict_json(summary), summary["id"]))

    def run(self, rid: str) -> RunSummary:
        row = self._one("SELECT summary FROM runs WHERE id = ?", (rid,))
        if row is None:
            raise not_found("run", rid)
        return cast(RunSummary, json.loads(row[0]))

    def runs_of(self, sid: str) -> list[RunSummary]:
        rows = self._all("SELECT summary FROM runs WHERE session_id = ? "
                         "ORDER BY created DESC, rowid DESC", (sid,))
        return [json.loads(r[0]) for r in rows]

    def running_runs(self) -> list[RunSummary]:
        return [json.loads(r[0]) for r in
                self._all("SELECT summary FROM runs WHERE status = 'running'")]

    # --- events (index per run, no gaps) ----------------------------------------
    def append_event(self, run_id: str, session_id: str, etype: str,
                     data: Mapping[str, Any]) -> RunEvent:
        with self._tx() as db:
            row = db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM events WHERE run_id = ?",
                             (run_id,)).fetchone()
            index = int(row[0])
            db.execute("INSERT INTO events VALUES (?, ?, ?, ?)",
                       (run_id, index, etype, strict_json(data)))
        return RunEvent(run_id=run_id, session_id=session_id, index=index, type=etype,
                        data=dict(data))

    def events(self, run_id: str, since: int = 0) -> list[RunEvent]:
        summary = self.run(run_id)
        rows = self._all("SELECT idx, type, data FROM events WHERE run_id = ? AND idx >= ? "
                         "ORDER BY idx", (run_id, since))
        return [RunEvent(run_id=run_id, session_id=summary["session_id"], index=i, type=t,
                         data=json.loads(d)) for i, t, d in rows]

    # --- snapshots (content-addressed blobs) --------------------------------------
    def _put_blob(self, db: sqlite3.Connection, raw: bytes) -> str:
        digest = hashlib.sha256(raw).hexdigest()
        if db.execute("SELECT 1 FROM blobs WHERE hash = ?", (digest,)).fetchone() is None:
            db.execute("INSERT INTO blobs VALUES (?, ?)", (digest, zlib.compress(raw, _ZLIB_LEVEL)))
        return digest

    def _blob(self, digest: str) -> bytes:
        row = self._one("SELECT data FROM blobs WHERE hash = ?", (digest,))
        if row is None:
            raise not_found("blob", digest)
        return zlib.decompress(row[0])

    def add_snapshot(self, run_id: str, text: str, source_map: SourceMapLike) -> int:
        """Store one printed module state; `source_map` is the printer's column table or
        the protocol's SourceMapEntry dicts."""
        text_raw = text.encode()
        map_raw = encode_source_map(source_map)
        with self._tx() as db:
            text_hash = self._put_blob(db, text_raw)
            map_hash = self._put_blob(db, map_raw)
            cur = db.execute("INSERT INTO snapshots (run_id, text_hash, map_hash, line_count) "
                             "VALUES (?, ?, ?, ?)",
                             (run_id, text_hash, map_hash, text.count("\n") + 1))
            return int(cur.lastrowid or 0)

    def copy_snapshot(self, snapshot_id: int, run_id: str) -> int:
        """A new snapshot of `run_id` sharing the blobs of `snapshot_id` (nothing re-encoded)."""
        with self._tx() as db:
            row = db.execute("SELECT text_hash, map_hash, line_count FROM snapshots "
                             "WHERE id = ?", (snapshot_id,)).fetchone()
            if row is None:
                raise not_found("snapshot", snapshot_id)
            cur = db.execute("INSERT INTO snapshots (run_id, text_hash, map_hash, line_count) "
                             "VALUES (?, ?, ?, ?)", (run_id, *row))
            return int(cur.lastrowid or 0)

    def snapshot(self, snapshot_id: int) -> dict[str, Any]:
        row = self._one("SELECT text_hash, map_hash, line_count, run_id FROM snapshots "
                        "WHERE id = ?", (snapshot_id,))
        if row is None:
            raise not_found("snapshot", snapshot_id)
        return {"id": snapshot_id, "run_id": row[3], "text": self._blob(row[0]).decode(),
                "source_map": self._map_json(row[1]), "line_count": row[2],
                "text_hash": row[0]}

    def snapshot_part(self, snapshot_id: int, part: str) -> bytes:
        """One part as bytes ("text": UTF-8, "source_map": the SourceMapEntry list as compact
        JSON, built from the stored columns without decoding into dicts)."""
        column = {"text": "text_hash", "source_map": "map_hash"}[part]
        row = self._one(f"SELECT {column} FROM snapshots WHERE id = ?", (snapshot_id,))
        if row is None:
            raise not_found("snapshot", snapshot_id)
        raw = self._blob(str(row[0]))
        if part == "text":
            return raw
        table = decode_source_map(raw)
        return raw if table is None else table.json_bytes()

    def snapshot_source_map_table(self, snapshot_id: int) -> SourceMapTable:
        """The source map of a snapshot as the printer's column table."""
        row = self._one("SELECT map_hash FROM snapshots WHERE id = ?", (snapshot_id,))
        if row is None:
            raise not_found("snapshot", snapshot_id)
        raw = self._blob(str(row[0]))
        table = decode_source_map(raw)
        return table if table is not None else SourceMapTable.from_json(json.loads(raw))

    def _map_json(self, digest: str) -> list[dict[str, Any]]:
        raw = self._blob(digest)
        table = decode_source_map(raw)
        return json.loads(raw) if table is None else table.to_json()

    def holds(self, snapshot_id: int, text: str, source_map: SourceMapLike) -> bool:
        """Whether snapshot `snapshot_id` is exactly this text and source map."""
        row = self._one("SELECT text_hash, map_hash FROM snapshots WHERE id = ?",
                        (snapshot_id,))
        if row is None:
            raise not_found("snapshot", snapshot_id)
        return bool(hashlib.sha256(text.encode()).hexdigest() == row[0]
                    and hashlib.sha256(encode_source_map(source_map)).hexdigest() == row[1])

    def snapshot_text_hash(self, snapshot_id: int) -> str:
        row = self._one("SELECT text_hash FROM snapshots WHERE id = ?", (snapshot_id,))
        if row is None:
            raise not_found("snapshot", snapshot_id)
        return str(row[0])

    # --- artifacts (timing tree, schedules, numerics inputs...) -------------------
    def put_artifact(self, run_id: str, key: str, data: Any) -> None:
        """Store a run's artifact as a content-addressed blob (compressed; two runs with
        the same schedules share it)."""
        raw = strict_json(data).encode()
        with self._tx() as db:
            digest = self._put_blob(db, raw)
            db.execute("INSERT OR REPLACE INTO artifact_refs VALUES (?, ?, ?)",
                       (run_id, key, digest))

    def artifact(self, run_id: str, key: str, default: Any = None) -> Any:
        row = self._one("SELECT hash FROM artifact_refs WHERE run_id = ? AND key = ?",
                        (run_id, key))
        return default if row is None else json.loads(self._blob(str(row[0])))

    def artifacts(self, run_id: str) -> dict[str, Any]:
        """Every artifact of a run."""
        return {key: json.loads(self._blob(str(digest))) for key, digest in
                self._all("SELECT key, hash FROM artifact_refs WHERE run_id = ?", (run_id,))}

    # --- sizes (benchmarks) -----------------------------------------------------
    def run_bytes(self, run_id: str) -> int:
        """Bytes this run occupies: its events and the blobs its snapshots and artifacts
        use."""
        with self._lock:
            events = self._db.execute("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM events "
                                      "WHERE run_id = ?", (run_id,)).fetchone()[0]
            blobs = self._db.execute(
                "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM blobs WHERE hash IN "
                "(SELECT text_hash FROM snapshots WHERE run_id = ? "
                " UNION SELECT map_hash FROM snapshots WHERE run_id = ?"
                " UNION SELECT hash FROM artifact_refs WHERE run_id = ?)",
                (run_id, run_id, run_id)).fetchone()[0]
        return int(events) + int(blobs)

    def mark_interrupted_run(self, run_id: str) -> None:
        """A run left `running` by a server that died becomes `interrupted`."""
        summary = self.run(run_id)
        summary["status"] = "interrupted"
        summary["error"] = summary.get("error") or "the server stopped during the run"
        last = self._one("SELECT MAX(id) FROM snapshots WHERE run_id = ?", (run_id,))
        if last is not None and last[0] is not None:
            summary["final_snapshot"] = int(last[0])
        self.update_run(summary)
