"""Quantized models in the app: the numerics check in quantization steps (LSBs) over
Socket.IO and in the CLI, and the scales' values in the snapshots' source maps.

The model is a torch conv net quantized by onnxruntime (QOperator, per channel, seeded
calibration; bench/make_explorer_quant_models.py), uploaded as the ONNX file and as its qnn
Relay text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from explorer_helpers import run_leaves, upload
from onnx import numpy_helper

from engine.ir import IRModule
from engine.relay.parser import parse
from engine.relay.testing.numerics import NumericsChecker
from explorer.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import make_explorer_quant_models as quant_models


@pytest.fixture(scope="module")
def qnn_text() -> str:
    return quant_models.qnn_relay_file().read_text()


_leaves = run_leaves


def test_lsb_error_of_a_dequantized_output_counts_steps(client, sock, qnn_text):
    """Each shift of the dequantize's zero point moves the float output by one scale: one
    step is still a match, two are a drift named by the pass that made them."""
    session = upload(client, qnn_text, "convnet_qnn.relay")
    leaves, summary = _leaves(sock, session["id"], check_numerics=True, build=False,
                              passes=["ExplorerTestShiftZeroPoint",
                                      "ExplorerTestShiftZeroPoint", "qnn.CanonicalizeOps",
                                      "FoldConstant"])
    numerics = {leaf["name"]: leaf["numerics"] for leaf in leaves}  # each name's last
    shifts = [leaf["numerics"] for leaf in leaves if leaf["name"] == "ExplorerTestShiftZeroPoint"]
    assert [n["max_lsb_err"] for n in shifts] == [1, 2]
    assert [n["ok"] for n in shifts] == [True, False]
    assert numerics["qnn.CanonicalizeOps"]["max_lsb_err"] == 2  # the lowering is exact
    assert numerics["FoldConstant"]["max_lsb_err"] == 2
    scale = 0.0038358325  # the output's dequantize scale
    assert shifts[1]["max_abs_err"] == pytest.approx(2 * scale, rel=1e-5)
    assert summary["first_numerics_break"] == "ExplorerTestShiftZeroPoint"


def test_o3_pipeline_on_the_onnx_file_is_exact_in_steps(client, sock):
    """The QOperator file as the ONNX importer reads it (QLinearConv as qnn.conv2d and
    qnn.requantize, the output's DequantizeLinear as qnn.dequantize): every pass of the O3 pipeline keeps it
    bit-exact, and the first snapshot carries each conv's per-channel kernel scale."""
    path = quant_models.qoperator_onnx()
    session = upload_file(client, path)
    leaves, summary = _leaves(sock, session["id"], check_numerics=True, build=False)
    assert len(leaves) > 10
    assert all(leaf["numerics"]["max_lsb_err"] == 0 for leaf in leaves)
    assert summary["first_numerics_break"] is None
    snapshot = client.get(f"/api/snapshots/{leaves[0]['before']}").get_json()["snapshot"]
    kernel_scales = list({e["node_id"]: e["qparam"]["values"] for e in snapshot["source_map"]
                          if e.get("qparam", {}).get("role") == "kernel_scale"}.values())
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    assert [np.float32(v).tolist() for v in kernel_scales] == \
        [init["0.weight_scale"].tolist(), init["2.weight_scale"].tolist()]


def upload_file(client: Any, path: Path) -> dict[str, Any]:
    import io

    resp = client.post("/api/sessions", data={"file": (io.BytesIO(path.read_bytes()), path.name)},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()["session"]


def test_float_models_report_no_lsb(client, sock):
    session = upload(client)
    leaves, _ = _leaves(sock, session["id"], check_numerics=True, build=False,
                        passes=["ExplorerTestRebuild"])
    assert "max_lsb_err" not in leaves[0]["numerics"]


def test_snapshot_source_map_carries_the_per_channel_scales(client, sock, qnn_text):
    """The requantize's input scale (x_scale * w_scale, per output channel) is in the
    snapshots' source maps, every value, and in their text as a short note."""
    session = upload(client, qnn_text, "convnet_qnn.relay")
    leaves, _ = _leaves(sock, session["id"], build=False, passes=["ExplorerTestNoop"])
    snapshot = client.get(f"/api/snapshots/{leaves[0]['before']}").get_json()["snapshot"]
    scales = [e["qparam"] for e in snapshot["source_map"]
              if e.get("qparam", {}).get("role") == "input_scale"
              and e["qparam"]["shape"] == [8]]
    model = onnx.load(str(quant_models.qoperator_onnx()))
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    expected = init["input_scale"] * init["0.weight_scale"]
    assert scales, "no qparam for the first requantize's input scale"
    np.testing.assert_array_equal(np.float32(scales[0]["values"]), expected)
    assert "/* values=f32[8] " in snapshot["text"]
    part = client.get(f"/api/snapshots/{leaves[0]['before']}?part=source_map").get_json()
    assert part["snapshot"]["source_map"] == snapshot["source_map"]


def test_cli_reports_the_error_in_steps(capsys):
    path = quant_models.qnn_relay_file()
    assert main(["run", str(path), "--passes", "qnn.CanonicalizeOps,FoldConstant",
                 "--check-numerics"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"numerics: \d+ passes checked against the imported model, "
                     r"max \|err\| 0 = 0 LSB of the quantized outputs: ok", out), out


def test_integer_outputs_are_measured_by_their_integer_difference(qnn_text):
    """Without the final dequantize the output is int8: its error in steps is the largest
    integer difference."""
    mod = parse(qnn_text)
    main_fn = mod["main"]
    int_out = main_fn.body.args[0]  # the last requantize (int8)
    from engine.ir.expr import Call, Constant, Function

    ref = IRModule.from_expr(Function(main_fn.params, int_out))
    checker = NumericsChecker(ref, {})
    bumped = Call(int_out.op, (*int_out.args[:4], Constant(
        int_out.args[4].data.numpy() + 3)), int_out.attrs)
    same = checker(ref)
    off = checker(IRModule.from_expr(Function(main_fn.params, bumped)))
    assert same["max_lsb_err"] == 0 and same["ok"]
    assert off["max_lsb_err"] == 3 and not off["ok"]
