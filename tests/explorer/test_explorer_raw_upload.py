"""The page's upload (issue 21): POST /api/sessions with the model file as the raw body
(`Content-Type: application/octet-stream`, its name in `?name=`), streamed into the store
while hashed, then the same session creation and checks as the multipart upload."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import onnx
import pytest
from explorer_helpers import MODEL_TEXT
from onnx import TensorProto, helper
from werkzeug.exceptions import ClientDisconnected

from explorer import create_app
from explorer.protocol import RAW_UPLOAD_TYPE
from explorer.uploads import WholeBody


def put_raw(client: Any, data: bytes, name: str | None, **query: str) -> Any:
    args = {**({"name": name} if name is not None else {}), **query}
    url = "/api/sessions?" + "&".join(f"{k}={quote(v)}" for k, v in args.items())
    return client.post(url, data=data, content_type=RAW_UPLOAD_TYPE,
                       environ_overrides={"CONTENT_LENGTH": str(len(data))})


def stored(data_dir: Path) -> list[Path]:
    return sorted(p for p in (data_dir / "models").rglob("*") if p.is_file())


def external_data_model() -> bytes:
    """An ONNX model whose one initializer keeps its data in a file beside it."""
    weight = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    weight.ClearField("float_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "w.bin"), ("offset", "0"), ("length", "8")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [weight])
    return helper.make_model(graph).SerializeToString()


def test_a_raw_upload_makes_the_same_session_as_multipart(client, data_dir):
    resp = put_raw(client, MODEL_TEXT.encode(), "dir/../raw model.relay")
    assert resp.status_code == 201, resp.get_json()
    session = resp.get_json()["session"]
    assert session["name"] == "raw model.relay" and session["format"] == "relay"
    detail = client.get(f"/api/sessions/{session['id']}").get_json()
    assert detail["session"] == session and detail["graph"]
    files = stored(data_dir)
    assert len(files) == 1 and files[0].read_bytes() == MODEL_TEXT.encode()
    # the same content by multipart shares the stored file
    multi = client.post("/api/sessions", content_type="multipart/form-data",
                        data={"file": (io.BytesIO(MODEL_TEXT.encode()), "m.relay")})
    assert multi.status_code == 201 and stored(data_dir) == files


def test_a_raw_upload_takes_input_shapes_in_the_query(client):
    shapes = json.dumps({"x": [1, 4]})
    bad = put_raw(client, MODEL_TEXT.encode(), "m.relay", input_shapes="{nope")
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "bad_input_shapes"
    resp = put_raw(client, MODEL_TEXT.encode(), "m.relay", input_shapes=shapes)
    assert resp.status_code in (201, 400), resp.get_json()
    if resp.status_code == 400:  # a name the model lacks is refused, naming it
        assert "x" in resp.get_json()["error"]["message"]


@pytest.mark.parametrize(("data", "name", "status", "code"), [
    (MODEL_TEXT.encode(), None, 400, "missing_name"),
    (MODEL_TEXT.encode(), "  ", 400, "missing_name"),
    (MODEL_TEXT.encode(), "model.exe", 415, "unsupported_extension"),
    (MODEL_TEXT.encode(), "../../etc/passwd", 415, "unsupported_extension"),
    (b"", "model.onnx", 400, "empty_file"),
    (b"\x00\x01 not a protobuf at all \xff" * 40, "junk.onnx", None, None),
    (b"def @main( {{{ not relay", "bad.relay", 400, "parse_error"),
])
def test_bad_raw_uploads_are_refused_and_leave_nothing(client, data_dir, data, name, status,
                                                       code):
    resp = put_raw(client, data, name)
    err = resp.get_json()["error"]
    assert 400 <= resp.status_code < 500, err
    if status is not None:
        assert (resp.status_code, err["code"]) == (status, code)
    assert err["message"] and "Traceback" not in err["message"]
    assert stored(data_dir) == []
    assert put_raw(client, MODEL_TEXT.encode(), "ok.relay").status_code == 201  # still up


def test_a_raw_upload_with_external_data_is_refused(client, data_dir):
    assert onnx.load_from_string(external_data_model()).graph.initializer[0].external_data
    resp = put_raw(client, external_data_model(), "ext.onnx")
    assert resp.status_code == 400
    error = resp.get_json()["error"]
    assert error["code"] == "unsafe_model" and "external" in error["message"]
    assert stored(data_dir) == []


def test_a_too_large_raw_upload_is_413_before_its_body_is_read(data_dir):
    app = create_app({"TESTING": True, "DATA_DIR": str(data_dir), "MAX_CONTENT_LENGTH": 1000})
    resp = put_raw(app.test_client(), b"x" * 5000, "big.onnx")
    assert resp.status_code == 413
    assert resp.get_json()["error"]["code"] == "too_large"
    assert resp.get_json()["error"]["detail"] == {"limit": 1000}
    assert stored(data_dir) == []


def test_a_raw_body_cut_short_leaves_nothing(client, data_dir):
    """The client said 4000 bytes and went away after 1000 (an aborted upload)."""
    resp = client.post("/api/sessions?name=cut.onnx", input_stream=io.BytesIO(b"x" * 1000),
                       content_type=RAW_UPLOAD_TYPE, environ_overrides={"CONTENT_LENGTH": "4000"})
    assert resp.status_code == 400
    error = resp.get_json()["error"]
    assert error["code"] == "incomplete_upload" and "cut.onnx" in error["message"]
    assert stored(data_dir) == []


def test_a_raw_upload_without_a_length_is_411(client, data_dir):
    environ = {"wsgi.input": io.BytesIO(MODEL_TEXT.encode())}
    resp = client.open("/api/sessions?name=m.relay", method="POST", environ_overrides=environ,
                       headers={"Content-Type": RAW_UPLOAD_TYPE, "Transfer-Encoding": "chunked"})
    assert resp.status_code == 411
    assert resp.get_json()["error"]["code"] == "length_required"
    assert stored(data_dir) == []


def test_a_body_a_server_ends_early_is_incomplete_too():
    """gunicorn ends a body at its own limit without a word: WholeBody notices."""
    body = WholeBody(io.BytesIO(b"x" * 1000), 4000)
    assert body.read(600) == b"x" * 600 and body.read(600) == b"x" * 400
    with pytest.raises(ClientDisconnected):
        body.read(600)
    whole = WholeBody(io.BytesIO(b"x" * 10), 10)
    assert whole.read(64) == b"x" * 10 and whole.read(64) == b""
