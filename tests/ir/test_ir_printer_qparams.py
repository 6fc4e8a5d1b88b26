"""Scales and zero points of qnn calls in the printed text: scalars as their values, tensors
as `meta[...]` plus a `/* values=... */` note the parser skips; every value in the source map."""

from __future__ import annotations

import json

import numpy as np
from ir_helpers import assert_parsed_equal

from engine import relay
from engine.ir import IRModule, layer_span
from engine.relay.parser import parse
from engine.relay.printer import astext, print_ir
from engine.relay.printer.qparams import values_summary
from engine.relay.printer.table import SourceMapTable
from explorer.store import decode_source_map, encode_source_map

qnn = relay.qnn.op
SCALES = np.array([0.0012, 0.0045, 0.031, 0.0078], dtype="float32")


def requantize_module() -> IRModule:
    """conv output (int32, 4 channels) requantized per channel to int8, then dequantized."""
    x = relay.var("x", shape=(1, 4, 3, 3), dtype="int32")
    scale = relay.const(SCALES)
    req = qnn.requantize(x, scale, relay.const(np.zeros(4, "int32")),
                         relay.const(np.float32(0.0235)), relay.const(np.int32(-128)),
                         axis=1, out_dtype="int8")
    req = relay.Call(req.op, req.args, req.attrs, span=layer_span("conv1"))
    out = qnn.dequantize(req, relay.const(np.float32(0.0235)), relay.const(np.int32(-128)))
    return relay.transform.InferType()(IRModule.from_expr(relay.Function([x], out)))


def test_scalars_print_as_values_and_tensors_as_meta_with_a_note() -> None:
    text = astext(requantize_module(), show_meta_data=False)
    line = next(ln for ln in text.splitlines() if "qnn.requantize" in ln)
    assert "meta[relay.Constant][0] /* values=f32[4] 0.0012, 0.0045, 0.031, 0.0078 */" in line
    assert "meta[relay.Constant][1] /* values=i32[4] 0 */" in line
    assert ", 0.0235f, -128, axis=1" in line
    assert "qnn.dequantize(%0, 0.0235f, -128" in text


def test_values_summary_writes_a_range_past_four_values() -> None:
    assert values_summary(np.linspace(0.0012, 0.031, 64, dtype="float32")) == \
        "f32[64] 0.0012..0.031"
    assert values_summary(np.arange(-3, 5, dtype="int8")) == "i8[8] -3..4"
    assert values_summary(np.full((1,), 0.5, "float32")) == "f32[1] 0.5"


def test_text_with_notes_parses_back_to_the_same_module() -> None:
    mod = requantize_module()
    for types in (False, True):
        text = astext(mod, show_meta_data=True, show_types=types)
        assert "/* values=" in text
        assert_parsed_equal(mod, relay.transform.InferType()(parse(text)))


def test_a_note_beside_span_and_type_comments_parses() -> None:
    text = astext(requantize_module(), show_types=True)
    again = parse(text)
    req = again["main"].body.args[0]
    assert req.op.name == "qnn.requantize" and req.span.source_names() == ("conv1",)
    np.testing.assert_array_equal(req.args[1].data.numpy(), SCALES)


def test_source_map_carries_every_value_of_a_qparam() -> None:
    result = print_ir(requantize_module(), show_types=True)
    # the requantize's (printed first: it is bound before the dequantize that uses it)
    notes: dict[str, dict] = {}
    for entry in result.to_json():
        if "qparam" in entry:
            notes.setdefault(entry["qparam"]["role"], entry)
    scale = notes["input_scale"]["qparam"]
    assert scale["dtype"] == "float32" and scale["shape"] == [4]
    assert np.array_equal(np.float32(scale["values"]), SCALES)
    assert notes["output_zero_point"]["qparam"]["values"] == [-128]
    # the entry covers the meta reference and its note (a hover anywhere on it finds it)
    line = result.text.splitlines()[notes["input_scale"]["start"][0] - 1]
    start, end = notes["input_scale"]["start"][1], notes["input_scale"]["end"][1]
    assert line[start:end].startswith("meta[relay.Constant][0] /* values=")
    assert line[start:end].endswith("*/")


def test_qparams_survive_json_columns_and_the_store_encoding() -> None:
    result = print_ir(requantize_module(), show_types=True)
    entries = result.to_json()
    table = result.source_map_table()
    assert table.json_bytes() == json.dumps(entries, separators=(",", ":")).encode()
    assert SourceMapTable.from_json(entries).to_json() == entries
    stored = decode_source_map(encode_source_map(table))
    assert stored is not None and stored.to_json() == entries


def test_non_qnn_constants_get_no_note() -> None:
    x = relay.var("x", shape=(4,))
    text = astext(relay.add(x, relay.const(SCALES)))
    assert "values=" not in text
    assert all("qparam" not in e for e in print_ir(relay.add(x, relay.const(SCALES))).to_json())
