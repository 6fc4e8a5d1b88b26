"""Probing an upload: the server never parses an uploaded file itself.

`probe_upload` imports a stored upload in a short-lived child of the run
workers' fork server (`ProbeJob` in, `Probed` or an `ApiError` out), so an
importer that crashes, hangs or exhausts memory on a hostile file takes only
that child down; the upload is answered with an error that names the problem
and the server stays up. The child checks the model as every run will see it,
describes it for the session, and stores the imported module's printed
snapshot (the session's first view of its model) through its own store
connection. The runs import the file again in their own workers.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.protocol import ApiError, Session
from explorer.runs.children import call_child, die_with_parent, load_plugins
from explorer.sessions import Inspector, SessionService, Shapes
from explorer.store import Store

PROBE_TIMEOUT = 300.0
"""Seconds an import may take before the upload is refused."""


@dataclass(frozen=True, slots=True)
class ProbeJob:
    """What the child needs (pickled to it): the stored file and where to write."""

    sid: str
    display: str
    path: str
    shapes: dict[str, list[int]] | None
    db_path: str
    models_dir: str
    plugins: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Probed:
    """What the child sends back: the session, its frontend graph, its first snapshot."""

    session: Session
    graph: dict[str, Any]
    snapshot: int


def isolated_inspector(db_path: str, models_dir: str, plugins: tuple[str, ...],
                       timeout: float | None = None) -> Inspector:
    """A SessionService inspector that imports each upload in a probe child."""
    def inspect(sid: str, display: str, path: Path, shapes: Shapes
                ) -> tuple[Session, dict[str, Any], int]:
        probed = probe_upload(ProbeJob(sid, display, str(path), shapes, db_path, models_dir,
                                       plugins), timeout or PROBE_TIMEOUT)
        return probed.session, probed.graph, probed.snapshot

    return inspect


def probe_upload(job: ProbeJob, timeout: float = PROBE_TIMEOUT) -> Probed:
    """Import `job.path` in a child process; the ApiError it raised, or one naming how
    it died."""
    end = call_child(_probe_main, job, f"explorer-probe-{job.sid}", timeout)
    if end.timed_out:
        raise ApiError(422, "import_timeout",
                       f"{job.display}: the import took longer than {timeout:.0f} s")
    if not end.replied:
        raise ApiError(422, "import_crashed",
                       f"{job.display}: the process importing this file stopped ({end.exit}) "
                       "before it could answer", {"exit": end.exit})
    reply = _decode(*end.reply)
    if isinstance(reply, ApiError):
        raise reply
    return reply


def _decode(kind: str, payload: Any) -> Probed | ApiError:
    if kind == "ok":
        return Probed(*payload)
    status, code, message, detail = payload
    return ApiError(status, code, message, detail)


# --- the child ------------------------------------------------------------------------------
def _probe_main(job: ProbeJob, conn: Any) -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    store = Store(job.db_path)
    try:
        load_plugins(job.plugins)
        sessions = SessionService(store, Path(job.models_dir))
        session, graph, snapshot = sessions.inspect(job.sid, job.display, Path(job.path),
                                                    job.shapes)
        reply: tuple[str, Any] = ("ok", (session, graph, snapshot))
    except ApiError as err:
        reply = ("error", (err.status, err.code, err.message, err.detail))
    except RecursionError:
        reply = ("error", (422, "nested_too_deep",
                           f"{job.display}: the model is nested too deeply to import "
                           "(expressions, types or subgraphs inside each other)",
                           {"exception": "RecursionError"}))
    except Exception as exc:  # not one of the importers' typed errors: still named
        reply = ("error", (422, "import_failed",
                           f"{job.display}: the model could not be imported "
                           f"({type(exc).__name__})", {"exception": type(exc).__name__}))
    finally:
        store.close()
    conn.send(reply)
    conn.close()
