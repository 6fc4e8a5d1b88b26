"""A .relay file as TVM prints it, uploaded: its layers are named by line (the text has
no span comments), and the O3 run with relay.build keeps them to the end."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from explorer_helpers import collect_until, start, subscribe, terminal, upload

FIXTURE = Path(__file__).parents[1] / "relay_text" / "conv_bn_relu.relay"


def test_uploaded_tvm_text_has_line_layers_that_the_run_keeps(client, sock) -> None:
    session = upload(client, FIXTURE.read_text(), "conv_bn_relu.relay")
    assert session["format"] == "relay" and session["num_layers"] == 13
    graph = client.get(f"/api/sessions/{session['id']}").get_json()["graph"]
    names = [layer["name"] for layer in graph["layers"]]
    assert names[:3] == ["line 3", "line 4", "line 6"]
    assert {layer["op_type"] for layer in graph["layers"]} >= {"nn.conv2d", "nn.softmax"}

    run_id = start(sock, session["id"], build=True)
    subscribe(sock, run_id)
    events = collect_until(sock, terminal, timeout=120)
    assert events[-1]["type"] == "run_finished", events[-1]
    for name in ("line 3", "line 17"):  # the first conv, fused; the softmax
        found = client.get(f"/api/runs/{run_id}/layers/{quote(name)}").get_json()
        assert found["nodes"], name
        assert all(name in node["spans"] for node in found["nodes"])
    schedules = client.get(f"/api/runs/{run_id}/schedules").get_json()["nodes"]
    assert schedules and all(node["num_steps"] > 0 for node in schedules)
