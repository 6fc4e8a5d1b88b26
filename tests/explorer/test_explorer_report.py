"""`explorer report MODEL -o run.html`: one self-contained file holding what the page asks
of the run (the routes' own answers, texts and maps stored once), and clear failures."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from debug_models import conv_model, finished_run

from explorer.cli import main
from explorer.report import ReportError, collect, render


def _data(html: str) -> dict[str, Any]:
    raw = re.search(r'<script type="application/json" id="irx-report-data">(.*?)</script>',
                    html, re.S)
    assert raw is not None
    packed = json.loads(raw.group(1))
    assert packed["encoding"] == "gzip+base64"
    return json.loads(gzip.decompress(base64.b64decode(packed["data"])))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("report")
    model = folder / "convs.onnx"
    model.write_bytes(conv_model())
    out = folder / "run.html"
    assert main(["report", str(model), "-o", str(out), "--check-numerics"]) == 0
    html = out.read_text()
    return html, _data(html)


def test_the_report_is_one_file_with_no_outside_reference(report):
    html, data = report
    assert not re.search(r'<(script|link|img)[^>]+(src|href)=', html)
    assert "http://" not in html.split('id="irx-report-data"')[0]
    assert f'data-run-id="{data["run_id"]}"' in html and 'data-report="1"' in html
    assert html.count("</script>") == 2  # the data and the bundle, nothing closes early


def test_the_report_holds_what_the_page_asks(report):
    _, data = report
    rid, sid = data["run_id"], data["session_id"]
    answers = data["responses"]
    assert answers[f"/api/runs/{rid}"]["run"]["status"] == "finished"
    assert answers[f"/api/sessions/{sid}"]["session"]["name"] == "convs.onnx"
    passes = [e["data"] for e in data["events"] if e["type"] == "pass_finished"]
    for p in passes:
        assert f"/api/runs/{rid}/remarks?pass={p['pass_index']}" in answers
        for key in ("before", "after"):
            snap = data["snapshots"][str(p[key])]
            assert isinstance(data["blobs"][snap["text"]], str)
            assert isinstance(data["blobs"][snap["map"]], list)
        if p["before"] != p["after"]:
            assert f"/api/diff?a={p['before']}&b={p['after']}&part=nodes" in answers
    used = {key for s in data["snapshots"].values() for key in (s["text"], s["map"])}
    assert set(data["blobs"]) == used  # each text and map once, by content
    kernels = answers[f"/api/runs/{rid}/schedules"]["nodes"]
    assert kernels and all(f"/api/runs/{rid}/schedules/{k['index']}" in answers
                           for k in kernels)
    assert any(url.startswith(f"/api/runs/{rid}/backtrace/") for url in answers)


def test_a_report_without_its_bundle_is_refused(tmp_path: Path):
    with pytest.raises(ReportError, match="node build.mjs"):
        render({"session_id": "s", "run_id": "r"}, "m", root=tmp_path)


def test_report_needs_an_output(tmp_path: Path, capsys):
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path / "m.onnx")])
    assert "-o" in capsys.readouterr().err


def test_collected_answers_are_the_routes_answers(client, sock):
    run_id, _ = finished_run(client, sock, conv_model(), "convs.onnx")
    session_id = client.get(f"/api/runs/{run_id}").get_json()["run"]["session_id"]
    data = collect(client, session_id, run_id)
    traces = [url for url in data["responses"] if "/backtrace/" in url]
    assert traces
    for url in traces[:5] + [u for u in data["responses"] if "/remarks?" in u][:3]:
        assert data["responses"][url] == client.get(url).get_json(), url
