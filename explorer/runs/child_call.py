"""One request answered by a short-lived child of the fork server (explorer/runs/children.py).

`call_in_child(target, job, timeout, name, code, doing)` starts `target(job, conn)` in a child
(`children.call_child`) and waits for its one answer: `("ok", value)` or `("error", (status, code, message, detail))`, which
comes back as an ApiError. A child that runs out of time or dies without answering is an
ApiError too, its code and message naming what was asked (`code`, `doing`).
In the child, `answer(conn, db_path, work, describe)` opens the store, runs
`work(store)` and sends its result, or the error it raised (`describe` names the
exceptions that are not ApiErrors).
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from explorer.protocol import ApiError
from explorer.runs.children import call_child, die_with_parent
from explorer.store import Store

ErrorTuple = tuple[int, str, str, Any]


def call_in_child(target: Callable[[Any, Any], None], job: Any, timeout: float, name: str,
                  code: str, doing: str) -> Any:
    """The value `target(job, conn)` answered in a child process (see module docstring).
    A child out of time is a 504 `{code}_timeout`, one that ended without answering a 500
    `{code}_crashed`; `doing` ("computing the tensor") names the work in their messages."""
    end = call_child(target, job, name, timeout)
    if end.timed_out:
        raise ApiError(504, f"{code}_timeout", f"{doing} took longer than {timeout:.0f} s")
    if not end.replied:
        raise ApiError(500, f"{code}_crashed", f"the process {doing} stopped ({end.exit})")
    kind, payload = end.reply
    if kind != "ok":
        raise ApiError(*payload)
    return payload


def answer(conn: Any, db_path: str, work: Callable[[Store], Any],
           describe: Callable[[Exception], ErrorTuple]) -> None:
    """In the child: send `work(store)`'s value, or the error it raised, then close."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store = Store(db_path)
    try:
        reply: tuple[str, Any] = ("ok", work(store))
    except ApiError as err:
        reply = ("error", (err.status, err.code, err.message, err.detail))
    except Exception as exc:  # named by the caller, never a bare failure
        reply = ("error", describe(exc))
    finally:
        store.close()
    conn.send(reply)
    conn.close()
