"""Bad uploads: every file of the seeded corpus gets a 4xx JSON error naming the problem,
never a 5xx; nothing is unpickled or executed; nothing is written outside the data
folder; the server answers normally afterwards."""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from corpus import BadUpload, bad_uploads, mlp_model, tflite_files

from explorer.runs.children import wait_ready

MIN_CORPUS = 300


def post(client: Any, name: str, data: bytes) -> Any:
    """A multipart upload encoded here: werkzeug's own encoder spools big bodies to a
    temporary file it never closes (a ResourceWarning in the test, not in the app)."""
    boundary = "hardening-boundary-7f3a"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    body += data + f"\r\n--{boundary}--\r\n".encode()
    return client.post("/api/sessions", data=io.BytesIO(body),
                       content_type=f"multipart/form-data; boundary={boundary}")


def tree(root: Path, skip: Path | None = None) -> dict[str, int]:
    """Relative path -> size of every file under root (except under `skip`)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if skip is not None and Path(dirpath).resolve() == skip.resolve():
            dirnames.clear()
            continue
        for name in filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = path.stat().st_size
    return out


def problem(case: BadUpload, resp: Any) -> str | None:
    """Why the answer to `case` is wrong (None when it is right)."""
    status = resp.status_code
    if status >= 500:
        return f"{status}: {resp.get_data(as_text=True)[:300]}"
    if status < 400:
        return None if not case.must_reject else f"{status}: accepted a bad file"
    body = resp.get_json(silent=True)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or set(error) != {"code", "message", "detail"}:
        return f"{status}: not an error JSON: {resp.get_data(as_text=True)[:200]}"
    message = str(error["message"])
    if not message.startswith(Path(case.filename).name):
        return f"{status}: message does not start with the file name: {message[:200]}"
    if case.names and not any(n.lower() in message.lower() for n in case.names):
        return f"{status}: message names none of {case.names}: {message[:200]}"
    return None


def test_corpus_is_large_seeded_and_covers_every_kind(tmp_path: Path) -> None:
    first, again = bad_uploads(tmp_path), bad_uploads(tmp_path)
    assert [(c.case, c.data) for c in first] == [(c.case, c.data) for c in again]
    assert sum(c.must_reject for c in first) >= MIN_CORPUS
    kinds = {c.case.split("-")[0].rstrip("0123456789") for c in first}
    for kind in ("empty", "cycle", "undefined", "huge", "unknown", "external", "pickle",
                 "protobuf", "random", "mlp", "conv", "negdim", "dtypes", "gemm", "relaytype",
                 "relaydup", "relaynomain", "deep", "utf8name"):
        assert kind in kinds, kind
    assert any(c.case.startswith(tuple(tflite_files())) for c in first) or not tflite_files()
    assert len({c.case for c in first}) == len(first)


def test_every_bad_upload_is_a_4xx_naming_the_problem(app: Any, client: Any, data_dir: Path,
                                                      tmp_path: Path, audit: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    cases = bad_uploads(markers)
    client.get("/api/sessions")  # the services start, and with them the probes' fork server,
    wait_ready()                 # whose socket folder is multiprocessing's, made before tmp moves
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    monkeypatch.chdir(cwd)
    around = tree(tmp_path, skip=data_dir)

    failures: list[str] = []
    accepted: set[str] = set()  # digests: identical uploads share one stored file
    for case in cases:
        resp = post(client, case.filename, case.data)
        if resp.status_code == 201:
            accepted.add(hashlib.sha256(case.data).hexdigest())
        why = problem(case, resp)
        if why:
            failures.append(f"{case.case}: {why}")
    assert not failures, f"{len(failures)} bad answers:\n" + "\n".join(failures[:40])

    # Nothing unpickled, executed, or written outside the data folder.
    assert not list(markers.iterdir()), "a pickle payload ran"
    kinds = {event for event, _ in audit.events}
    assert not kinds & {"pickle.find_class", "os.system", "subprocess.Popen", "os.exec",
                        "os.posix_spawn"}, kinds
    assert tree(tmp_path, skip=data_dir) == around
    assert not list(cwd.iterdir()) and not list(private_tmp.iterdir())
    stored = sorted(p.name for p in (data_dir / "models").iterdir())
    assert len(stored) == len(accepted)  # rejected uploads leave no file behind
    opened = [Path(arg) for event, arg in audit.events if event == "open"]
    targets = [p for p in opened if any(n in p.name for n in ("passwd", "shadow", "secret"))]
    assert all(p.resolve().is_relative_to(data_dir.resolve()) for p in targets), targets

    # The server still answers normal requests.
    ok = post(client, "fine.onnx", mlp_model().SerializeToString())
    assert ok.status_code == 201, ok.get_json()
    listed = client.get("/api/sessions")
    assert listed.status_code == 200
    assert ok.get_json()["session"]["id"] in {s["id"] for s in listed.get_json()["sessions"]}


def test_bit_flips_that_still_import_are_real_models(client: Any, tmp_path: Path) -> None:
    """A flipped copy the server accepts must describe a usable session (its flip landed
    in weight data), and its run must start and end."""
    flips = [c for c in bad_uploads(tmp_path) if not c.must_reject][:12]
    for case in flips:
        resp = post(client, case.filename, case.data)
        assert resp.status_code < 500, (case.case, resp.get_data(as_text=True)[:300])
        if resp.status_code == 201:
            sid = resp.get_json()["session"]["id"]
            assert client.get(f"/api/sessions/{sid}").status_code == 200


def test_unpickling_is_never_reached_even_for_torch_shaped_archives(
        client: Any, tmp_path: Path, audit: Any) -> None:
    pt2 = [c for c in bad_uploads(tmp_path) if c.case.startswith("pickle")]
    assert len(pt2) == 3
    for case in pt2:
        resp = post(client, case.filename, case.data)
        assert resp.status_code == 400, resp.get_json()
        assert resp.get_json()["error"]["code"] in ("unsafe_model", "corrupt_model")
    assert not list(tmp_path.glob("PWNED*"))
    assert not [e for e, _ in audit.events if e in ("pickle.find_class", "os.system")]
