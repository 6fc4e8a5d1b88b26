"""HTTP blueprint: pages and the JSON API of docs/PROTOCOL.md, each a thin adapter."""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import ClientDisconnected, HTTPException, RequestEntityTooLarge

from explorer import exchange, graphserve, queries
from explorer.demo import demo_session
from explorer.extensions import services
from explorer.protocol import MAX_SAFE_INT, RAW_UPLOAD_TYPE, ApiError, bad_request
from explorer.runs.schedules import node_json
from explorer.runs.tensors import inspect_tensor
from explorer.uploads import raw_upload

bp = Blueprint("explorer", __name__)


# --- pages -------------------------------------------------------------------------------
@bp.get("/")
@bp.get("/s/<session_id>")
@bp.get("/s/<session_id>/r/<run_id>")
def index(session_id: str | None = None, run_id: str | None = None) -> str:
    return render_template("index.html", session_id=session_id, run_id=run_id)


# --- sessions --------------------------------------------------------------------------
@bp.post("/api/sessions")
def create_session() -> tuple[Response, int]:
    from explorer.session_inputs import parse_input_shapes

    if request.mimetype == RAW_UPLOAD_TYPE:  # the page's upload: the body is the file
        name, stream = raw_upload(request)
        shapes = parse_input_shapes(request.args.get("input_shapes"))
        try:
            session = services().sessions.create(name, stream, shapes)
        except ClientDisconnected:  # nothing is stored (the copy removes its file)
            raise bad_request("incomplete_upload", f"{name}: the body ended before its "
                              f"{request.content_length} bytes") from None
        return jsonify({"session": session}), 201
    upload = request.files.get("file")
    if upload is None:
        raise bad_request("missing_file", "send the model as the multipart field 'file' "
                          f"or as a {RAW_UPLOAD_TYPE} body with ?name=FILE")
    shapes = parse_input_shapes(request.form.get("input_shapes"))
    try:  # streamed into the store in chunks, never whole in memory
        session = services().sessions.create(upload.filename or "", upload.stream, shapes)
    finally:
        upload.close()
    return jsonify({"session": session}), 201


def _read_and_close(upload: Any) -> bytes:
    """An uploaded file's bytes; its spooled temporary file (werkzeug keeps a large one on
    disk) is closed now, not whenever the garbage collector gets to it."""
    try:
        return bytes(upload.read())
    finally:
        upload.close()


@bp.post("/api/sessions/<sid>/pin")
def pin_session(sid: str) -> tuple[Response, int]:
    """A new session of the same model with its symbolic input dimensions fixed."""
    from explorer.session_inputs import check_input_shapes

    body = request.get_json(silent=True)
    if not isinstance(body, dict) or "input_shapes" not in body:
        raise bad_request("bad_payload", 'send {"input_shapes": {"input": [dims]}} as JSON')
    session = services().sessions.pin(sid, check_input_shapes(body["input_shapes"]))
    return jsonify({"session": session}), 201


@bp.post("/api/sessions/demo")
def create_demo_session() -> tuple[Response, int]:
    svc = services()
    return jsonify({"session": demo_session(svc.sessions, svc.data_dir)}), 201


@bp.get("/api/sessions")
def list_sessions() -> Response:
    return jsonify({"sessions": services().store.sessions()})


@bp.get("/api/sessions/<sid>")
def get_session(sid: str) -> Response:
    store = services().store
    store.session(sid)
    store.touch_session(sid)
    graph = {k: v for k, v in store.session_graph(sid).items() if k != "input_shapes"}
    return jsonify({"session": store.session(sid), "graph": graph, "runs": store.runs_of(sid)})


@bp.patch("/api/sessions/<sid>")
def rename_session(sid: str) -> Response:
    """Rename a session: JSON {"name": "..."} -> {"session": Session}."""
    from explorer.session_inputs import check_name

    body = request.get_json(silent=True)
    if not isinstance(body, dict) or "name" not in body:
        raise bad_request("bad_payload", 'send {"name": "new name"} as JSON')
    return jsonify({"session": services().store.rename_session(sid, check_name(body["name"]))})


@bp.delete("/api/sessions/<sid>")
def delete_session(sid: str) -> Response:
    services().sessions.delete(sid)
    return jsonify({"ok": True})


@bp.delete("/api/runs/<rid>")
def delete_run(rid: str) -> Response:
    services().sessions.delete_run(rid)
    return jsonify({"ok": True})


@bp.get("/api/passes")
def list_passes() -> Response:
    from explorer import compiler

    return jsonify({"passes": compiler.registered_passes()})


# --- runs ------------------------------------------------------------------------------
@bp.get("/api/runs/<rid>")
def get_run(rid: str) -> Response:
    return jsonify({"run": services().store.run(rid)})


@bp.get("/api/runs/<rid>/events")
def get_events(rid: str) -> Response:
    since = _int_arg("since", 0)
    return jsonify({"events": services().store.events(rid, since)})


@bp.get("/api/snapshots/<int:snapshot_id>")
def get_snapshot(snapshot_id: int) -> Response:
    part = request.args.get("part")
    if part is not None:
        return _snapshot_part(snapshot_id, part)
    snap = services().store.snapshot(snapshot_id)
    return jsonify({"snapshot": {k: snap[k] for k in ("id", "text", "source_map",
                                                      "line_count")}})


def _snapshot_part(snapshot_id: int, part: str) -> Response:
    """`?part=text` or `?part=source_map`: one part, the source map spliced in from its stored
    JSON without decoding it (a 50,000-line module's map is ~11 MB)."""
    if part not in ("text", "source_map"):
        raise bad_request("bad_part", f"part must be 'text' or 'source_map', not {part!r}")
    raw = services().store.snapshot_part(snapshot_id, part)
    value = json.dumps(raw.decode()).encode() if part == "text" else raw
    body = b'{"snapshot":{"id":%d,"%s":%s}}' % (snapshot_id, part.encode(), value)
    return Response(body, mimetype="application/json")


@bp.get("/api/snapshots/<int:snapshot_id>/graph")
def get_snapshot_graph(snapshot_id: int) -> Response:
    return graphserve.snapshot_graph(services().store, snapshot_id)


@bp.get("/api/snapshots/<int:snapshot_id>/graph/members")
def get_graph_members(snapshot_id: int) -> Response:
    return graphserve.graph_members(services().store, snapshot_id, request.args.get("groups"))


@bp.get("/api/snapshots/<int:snapshot_id>/graph/search")
def get_graph_search(snapshot_id: int) -> Response:
    return graphserve.graph_search(services().store, snapshot_id, request.args.get("q"),
                                   request.args.getlist("layer"),
                                   request.args.get("constants") == "1")


@bp.get("/api/diff")
def get_diff() -> Response:
    part = request.args.get("part")
    if part not in (None, "nodes"):
        raise bad_request("bad_part", f"part must be 'nodes' or absent, not {part!r}")
    return jsonify(queries.diff(services().store, _int_arg("a"), _int_arg("b"),
                                text=part is None))


@bp.get("/api/runs/<rid>/backtrace/<int:node_id>")
def get_backtrace(rid: str, node_id: int) -> Response:
    svc = services()
    return jsonify(queries.backtrace(svc.store, svc.snapshots, rid, node_id))


@bp.get("/api/runs/<rid>/layers/<path:layer>")
def get_layer(rid: str, layer: str) -> Response:
    svc = services()
    return jsonify(queries.layer_nodes(svc.store, svc.snapshots, rid, layer))


@bp.get("/api/runs/<rid>/tensors/<int:snapshot_id>/<int:node_id>")
def get_tensor(rid: str, snapshot_id: int, node_id: int) -> Response:
    svc = services()
    return jsonify({"tensor": inspect_tensor(svc.store, rid, snapshot_id, node_id,
                                             str(svc.data_dir / "models"),
                                             svc.runs.config.plugins,
                                             svc.runs.config.numerics_weight_limit)})


@bp.get("/api/runs/<rid>/timing")
def get_timing(rid: str) -> Response:
    store = services().store
    store.run(rid)
    return jsonify(queries.timing_tree(store, rid))


@bp.get("/api/runs/<rid>/schedules")
def get_schedules(rid: str) -> Response:
    return jsonify({"nodes": [node_json(r) for r in services().kernel_steps.records(rid)]})


@bp.get("/api/runs/<rid>/schedules/<int:index>")
def get_schedule(rid: str, index: int) -> Response:
    return jsonify(services().kernel_steps.detail(rid, index))


@bp.get("/api/runs/<rid>/export")
def export_run(rid: str) -> Response:
    doc = exchange.export_run(services().store, rid)
    return Response(json.dumps(doc), mimetype="application/json", headers={
        "Content-Disposition": f'attachment; filename="run-{rid}.json"'})


@bp.post("/api/runs/import")
def import_run() -> tuple[Response, int]:
    upload = request.files.get("file")
    if upload is None:
        raise bad_request("missing_file", "send the export as the multipart field 'file'")
    session, run = exchange.import_run(services().store, _read_and_close(upload))
    return jsonify({"session": session, "run": run}), 201


def _int_arg(name: str, default: int | None = None) -> int:
    raw = request.args.get(name)
    if raw is None and default is not None:
        return default
    try:
        value = int(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise bad_request("bad_argument", f"query argument {name!r} must be an integer") from None
    if not 0 <= value <= MAX_SAFE_INT:
        raise bad_request("bad_argument",
                          f"query argument {name!r} must be between 0 and {MAX_SAFE_INT}")
    return value


# --- errors at the boundary -----------------------------------------------------------
def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(ApiError, _api_error)
    app.register_error_handler(RequestEntityTooLarge, _too_large)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)


def _api_error(err: ApiError) -> tuple[Response, int]:
    return jsonify(err.body()), err.status


def _too_large(_: RequestEntityTooLarge) -> tuple[Response, int]:
    from flask import current_app

    limit = current_app.config["MAX_CONTENT_LENGTH"]
    err = ApiError(413, "too_large", f"the upload exceeds the limit of {limit} bytes",
                   {"limit": limit})
    return jsonify(err.body()), 413


def _http_error(exc: HTTPException) -> tuple[Response, int] | HTTPException:
    if not request.path.startswith("/api/"):
        return exc
    code = (exc.name or "error").lower().replace(" ", "_")
    err = ApiError(exc.code or 500, code, exc.description or exc.name or "error")
    return jsonify(err.body()), err.status


def _unexpected(exc: Exception) -> tuple[Response, int]:
    from flask import current_app

    current_app.logger.exception("unexpected error on %s", request.path)
    err = ApiError(500, "internal_error", "the server failed on this request",
                   {"exception": type(exc).__name__})
    return jsonify(err.body()), 500
