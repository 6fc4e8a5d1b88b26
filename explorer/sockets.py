"""The Socket.IO namespace `/explorer`: start, watch (with replay), cancel, and debug runs
(breakpoints, resume)."""

from __future__ import annotations

from typing import Any

from flask import current_app, request
from flask_socketio import Namespace, join_room, leave_room

from explorer.extensions import run_room, services
from explorer.protocol import (
    MAX_SAFE_INT,
    NAMESPACE,
    RUN_EVENT,
    ApiError,
    RunEvent,
    RunOptions,
    bad_request,
    check_action,
    check_breakpoints,
    check_pause_at,
    error_response,
)

Ack = dict[str, Any]


def _run_id(payload: Any) -> str:
    if not isinstance(payload, dict) or not isinstance(payload.get("run_id"), str):
        raise bad_request("bad_payload", "the payload needs a string 'run_id'")
    run_id: str = payload["run_id"]
    return run_id


def _guard(handler: Any) -> Any:
    """Answer an ApiError as the ack `{"error": {...}}` instead of dropping it."""
    def wrapped(self: Namespace, payload: Any = None) -> Ack:
        try:
            answer: Ack = handler(self, payload)
            return answer
        except ApiError as err:
            return dict(err.body())
        except Exception as exc:  # answered, never dropped: the client waits for its ack
            current_app.logger.exception("unexpected error in %s", handler.__name__)
            return dict(error_response(code="internal_error",
                                       message="the server failed on this request",
                                       detail={"exception": type(exc).__name__}))
    wrapped.__name__ = handler.__name__
    return wrapped


class ExplorerNamespace(Namespace):  # type: ignore[misc]  # flask_socketio is untyped
    @_guard
    def on_start_run(self, payload: Any) -> Ack:
        if not isinstance(payload, dict) or not isinstance(payload.get("session_id"), str):
            raise bad_request("bad_payload", "the payload needs a string 'session_id'")
        options = RunOptions.from_json(payload.get("options"))
        breakpoints = check_breakpoints(payload.get("breakpoints"))
        svc = services()
        run_id = svc.runs.start(payload["session_id"], options, breakpoints)
        svc.store.touch_session(payload["session_id"])
        return {"run_id": run_id}

    @_guard
    def on_subscribe(self, payload: Any) -> Ack:
        run_id = _run_id(payload)
        since = payload.get("since", 0)
        if not isinstance(since, int) or isinstance(since, bool) or not 0 <= since <= MAX_SAFE_INT:
            raise bad_request("bad_payload",
                              f"'since' must be an integer between 0 and {MAX_SAFE_INT}")
        svc = services()
        svc.store.run(run_id)
        sid = request.sid  # type: ignore[attr-defined]

        def send(event: RunEvent) -> None:
            self.emit(RUN_EVENT, event, room=sid)

        def join() -> None:
            join_room(run_room(run_id), sid=sid, namespace=NAMESPACE)

        replayed = svc.hub.subscribe(run_id, since, send, join)
        return {"ok": True, "replayed": replayed}

    @_guard
    def on_unsubscribe(self, payload: Any) -> Ack:
        run_id = _run_id(payload)
        leave_room(run_room(run_id), sid=request.sid, namespace=NAMESPACE)  # type: ignore[attr-defined]
        return {"ok": True}

    @_guard
    def on_cancel_run(self, payload: Any) -> Ack:
        return {"ok": services().runs.cancel(_run_id(payload))}

    @_guard
    def on_set_breakpoints(self, payload: Any) -> Ack:
        run_id = _run_id(payload)
        breakpoints = check_breakpoints(payload.get("breakpoints"))
        live = services().runs.set_breakpoints(run_id, breakpoints)
        return {"breakpoints": breakpoints if live else [], "live": live}

    @_guard
    def on_resume_run(self, payload: Any) -> Ack:
        run_id = _run_id(payload)
        return {"ok": services().runs.resume(run_id, check_action(payload.get("action")),
                                             check_pause_at(payload.get("at")))}
