"""HTTP routes for taking a pass apart: its reproducer and its remarks.

    GET /api/runs/<rid>/passes/<index>/reproducer   a zip (see explorer/runs/replay.py)
    GET /api/runs/<rid>/remarks[?pass=I][&node=N]   RemarkList (see explorer/remarks.py)
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from explorer import remarks
from explorer.extensions import services
from explorer.protocol import bad_request
from explorer.runs.replay import ReproJob, recorded_pass, reproducer_zip, safe_name

bp = Blueprint("pass_debug", __name__)


@bp.get("/api/runs/<rid>/passes/<int:index>/reproducer")
def get_reproducer(rid: str, index: int) -> Response:
    svc = services()
    name = safe_name(str(recorded_pass(svc.store, rid, index)["name"]))  # 404 first
    job = ReproJob(rid, index, svc.store.path, str(svc.data_dir / "models"),
                   svc.runs.config.plugins)
    body = reproducer_zip(job)
    return Response(body, mimetype="application/zip", headers={
        "Content-Disposition": f'attachment; filename="repro-{rid}-{index}-{name}.zip"'})


@bp.get("/api/runs/<rid>/remarks")
def get_remarks(rid: str) -> Response:
    svc = services()
    return jsonify(remarks.query(svc.store, svc.snapshots, rid, _opt_int("pass"),
                                 _opt_int("node")))


def _opt_int(name: str) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 15:
        raise bad_request("bad_argument", f"query argument {name!r} must be a whole number")
    return int(raw)
