"""The pieces of TVM's printed Relay text one at a time: info comments (`ty=`, `span=`),
width-suffixed attribute ints, the metadata node graph, free vars, let / if / fn /
tuples, parser spans, and the refusal of ADTs; plus the TVM API details (tvm.error,
tvm.testing, Span)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.ir.errors import ParseError
from engine.ir.expr import Call, Function, If, Let, Tuple, TupleGetItem
from engine.ir.span import SequentialSpan, SourceName, Span, layer_span
from engine.relay.parser import parse, parse_expr
from engine.relay.parser.tvm_json import (
    MetaFormatError,
    load_ndarray,
    meta_section,
    save_ndarray,
)


def test_type_and_span_info_comment() -> None:
    call = parse_expr("nn.relu(%x) /* ty=Tensor[(1, 4), float32] span=aten::relu_0:0:0 */")
    assert call.span == Span(SourceName("aten::relu_0"), 0, 0)
    assert call.span.source_names() == ("aten::relu_0",)
    with pytest.raises(ParseError, match="expected ']'"):
        parse_expr("nn.relu(%x) /* ty=Tensor[(1, 4), float32 */")


def test_attribute_ints_with_a_width_suffix() -> None:
    call = parse_expr("strided_slice(%x, begin=[0i64], end=[2i64], strides=[1i64], axes=None)")
    assert (call.attrs.begin, call.attrs.end, call.attrs.axes) == ((0,), (2,), None)
    assert call.attrs.slice_mode == "end"


def test_hand_written_padding_is_normalised() -> None:
    call = parse_expr("nn.conv2d(%x, %w, padding=[1, 2])")
    assert call.attrs.padding == (1, 2, 1, 2)


@pytest.mark.parametrize("array", [
    np.arange(6, dtype="float32").reshape(2, 3), np.array([True, False]),
    np.array(3, dtype="int64"), np.arange(4, dtype="uint8"), np.ones((0, 2), "float16"),
])
def test_ndarray_save_format_round_trip(array: np.ndarray) -> None:
    back = load_ndarray(save_ndarray(array))
    assert back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back, array)


def test_ndarray_format_matches_tvms_header() -> None:
    blob = save_ndarray(np.array([1.0], "float32"))
    # magic 0xDD5E40F096B4A13F, reserved, kDLCPU 1, device 0, ndim 1, float 32 x1, shape, nbytes
    assert blob[:8] == bytes.fromhex("3fa1b496f0405edd")
    assert blob[16:28] == bytes.fromhex("01000000" "00000000" "01000000")
    assert blob[28:32] == bytes([2, 32, 1, 0])
    with pytest.raises(MetaFormatError, match="magic"):
        load_ndarray(b"\0" * 48)


def test_metadata_node_graph_after_the_module() -> None:
    weight = np.arange(4, dtype="float32")
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(4), float32]) {\n"
            "  add(%x, meta[relay.Constant][0] /* ty=Tensor[(4), float32] */)\n"
            "}\n\n#[metadata]\n" + meta_section({"relay.Constant": [weight]}))
    const = parse(text)["main"].body.args[1]
    np.testing.assert_array_equal(const.data.numpy(), weight)
    with pytest.raises(ParseError, match="invalid metadata section: the metadata root"):
        parse(text.replace('"root": 1', '"root": 2'))  # an Array, not the Map


def test_free_vars_let_if_fn_and_tuples_as_tvm_prints_them() -> None:
    text = """#[version = "0.0.5"]
free_var %c: bool;
free_var %x: Tensor[(2), float32];
let %f: fn (Tensor[(2), float32]) -> Tensor[(2), float32] = fn (%p0: Tensor[(2), float32], Primitive=1) -> Tensor[(2), float32] {
  nn.relu(%p0) /* ty=Tensor[(2), float32] */
} /* ty=fn (Tensor[(2), float32]) -> Tensor[(2), float32] */;
%0 = if (%c) {
  %f(%x) /* ty=Tensor[(2), float32] */
} else {
  negative(%x) /* ty=Tensor[(2), float32] */
};
%1 = (%0, %x) /* ty=(Tensor[(2), float32], Tensor[(2), float32]) */;
%1.1
"""
    mod = parse(text, source_name="prog.relay")
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["c", "x"]
    let = main.body
    assert isinstance(let, Let) and isinstance(let.value, Function)
    assert let.value.attrs["Primitive"] == 1
    item = let.body
    assert isinstance(item, TupleGetItem) and isinstance(item.tuple_value, Tuple)
    assert isinstance(item.tuple_value.fields[0], If)
    assert let.span.line == 4 and item.span.line == 13
    relay.transform.InferType()(mod)


def test_spans_cover_the_expression_text() -> None:
    text = "def @main(%x: Tensor[(2), float32]) {\n  %0 = nn.relu(%x);\n  add(%0, 1f)\n}\n"
    main = parse(text, source_name="a.relay")["main"]
    add = main.body
    assert isinstance(add, Call)
    assert (add.span.line, add.span.column, add.span.end_line, add.span.end_column) == \
        (3, 3, 3, 14)
    assert add.args[0].span == Span(SourceName("a.relay"), 2, 8, 2, 19)
    assert main.params[0].span.source_names() == ("line 1",)


def test_a_span_comment_wins_over_the_position() -> None:
    call = parse_expr("nn.relu(%x) /* relu1 */")
    assert call.span == layer_span("relu1")


@pytest.mark.parametrize("text", [
    "type List[A] { Cons(A, List[A]), Nil }\ndef @main() { 0 }",
    "def @main(%x: Tensor[(2), float32]) { match (%x) { _ => %x } }",
])
def test_adts_are_refused_by_name(text: str) -> None:
    with pytest.raises(ParseError, match="algebraic data types"):
        parse(text)


# --- TVM API details ---------------------------------------------------------------------
def test_tvm_error_is_a_runtime_error_and_the_engines_base() -> None:
    assert issubclass(tvm.error.TVMError, RuntimeError)
    assert issubclass(ParseError, tvm.error.DiagnosticError)
    with pytest.raises(tvm.error.TVMError):
        parse("def @main( {")


def test_tvm_testing_helpers() -> None:
    tvm.testing.assert_allclose(np.ones(3, "float32"), np.ones(3, "float32") + 1e-9)
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(np.ones(3), np.ones(3) * 1.1, rtol=1e-3)
    with pytest.raises(AssertionError):  # no broadcasting, as in TVM
        tvm.testing.assert_allclose(np.ones((1, 3)), np.ones(3))
    assert [t for t, _ in tvm.testing.enabled_targets()] == ["llvm"]
    assert tvm.testing.device_enabled("llvm -mcpu=skylake")
    assert not tvm.testing.device_enabled("cuda")


def test_span_api_matches_tvms() -> None:
    one = Span(SourceName("conv1"), 0, 0, 0, 0)
    both = SequentialSpan([one, layer_span("bn1")])
    assert not hasattr(one, "spans")
    assert both.spans == (one, layer_span("bn1"))
    assert both.source_names() == ("conv1", "bn1")
