"""The Relay text printer: text format, goldens, source map, line origins, cache, speed.

Regenerate the goldens with `pytest tests/ir/test_ir_printer.py --update-goldens`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from goldens import check_golden
from ir_helpers import assert_parsed_equal, op_call, register_ops

from engine import relay
from engine.ir import (
    IRModule,
    Op,
    SequentialSpan,
    Span,
    layer_span,
)
from engine.ir.type import Any, FuncType, IncompleteType, TensorType, TupleType
from engine.relay import printer
from engine.relay.parser import parse
from engine.relay.printer import astext, print_ir, type_text

GOLDENS = Path(__file__).parent / "goldens"
OPS = ["nn.conv2d", "nn.batch_norm", "nn.relu", "add", "multiply", "nn.bias_add", "greater",
       "nn.max_pool2d", "split"]


@pytest.fixture(autouse=True, scope="module")
def _ops() -> None:
    register_ops(OPS)


call = op_call


# --- programs ----------------------------------------------------------------------------


def conv_bn_relu() -> IRModule:
    rng = np.random.default_rng(0)
    x = relay.var("input", shape=(1, 3, 8, 8), span=layer_span("input"))
    w = relay.const(rng.standard_normal((4, 3, 3, 3)).astype("float32"),
                    span=layer_span("conv1.weight"))
    conv = call("nn.conv2d", x, w, span=layer_span("conv1"), strides=(1, 1),
                padding=(1, 1, 1, 1), channels=4, kernel_size=(3, 3), data_layout="NCHW",
                out_dtype="")
    params = [relay.const(np.full((4,), v, "float32"), span=layer_span(f"bn1.{n}"))
              for v, n in [(1.0, "gamma"), (0.0, "beta"), (0.5, "mean"), (2.0, "var")]]
    bn = call("nn.batch_norm", conv, *params, span=layer_span("bn1"), axis=1, epsilon=1e-5,
              center=True, scale=True)
    item = relay.TupleGetItem(bn, 0, span=layer_span("bn1"))
    relu = call("nn.relu", item, span=SequentialSpan([layer_span("bn1"), layer_span("relu1")]))
    out = call("add", relu, relay.const(1.0), span=layer_span("add1"))
    return IRModule.from_expr(relay.Function([x], out, TensorType((1, 4, 8, 8))))


def let_if() -> IRModule:
    x = relay.var("x", shape=(2, 2))
    c = relay.var("c", "bool")
    y = relay.Var("y", TensorType((2, 2)), span=layer_span("y"))
    z = relay.Var("z")
    shared = call("multiply", x, x)
    branch = relay.If(c, call("add", shared, y), call("nn.relu", shared), span=layer_span("if0"))
    body = relay.Let(y, call("add", x, relay.const(2.0)),
                     relay.Let(z, branch, relay.Tuple([z, shared]), span=layer_span("let_z")))
    return IRModule.from_expr(relay.Function([x, c], body))


def fused() -> IRModule:
    p0 = relay.var("p0", shape=(1, 4))
    p1 = relay.var("p1", shape=(1, 4))
    prim = relay.Function([p0, p1], call("nn.relu", call("add", p0, p1, span=layer_span("add"))),
                          attrs={"Primitive": 1, "Composite": "add_relu"})
    x = relay.var("x", shape=(1, 4))
    helper_x = relay.var("hx", shape=(1, 4))
    mod = IRModule()
    helper = relay.GlobalVar("helper")
    mod[helper] = relay.Function([helper_x], call("multiply", helper_x, helper_x))
    fused_call = relay.Call(prim, [x, x], span=SequentialSpan([layer_span("add"),
                                                              layer_span("relu")]))
    mod["main"] = relay.Function([x], relay.Call(helper, [fused_call]))
    return mod


GOLDEN_PROGRAMS = {"conv_bn_relu": conv_bn_relu, "let_if": let_if, "fused": fused}


@pytest.mark.parametrize("name", sorted(GOLDEN_PROGRAMS))
def test_golden_text(name: str) -> None:
    mod = GOLDEN_PROGRAMS[name]()
    text = astext(mod, show_meta_data=True)
    path = GOLDENS / f"{name}.relay"
    check_golden(path, text)
    assert_parsed_equal(mod, parse(path.read_text()))


def test_conv_text_reads_like_tvm() -> None:
    text = astext(conv_bn_relu(), show_meta_data=False)
    lines = text.splitlines()
    assert lines[0] == '#[version = "0.0.5"]'
    assert lines[1] == ("def @main(%input: Tensor[(1, 3, 8, 8), float32] /* input */) "
                        "-> Tensor[(1, 4, 8, 8), float32] {")
    assert lines[2] == (
        "  %0 = nn.conv2d(%input, meta[relay.Constant][0] /* conv1.weight */, strides=[1, 1], "
        'padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, channels=4, kernel_size=[3, 3], '
        'data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype="") /* conv1 */;')
    assert "epsilon=1e-05f, center=True, scale=True) /* bn1 */;" in lines[3]
    assert lines[4] == "  %2 = %1.0 /* bn1 */;"
    assert lines[5] == "  %3 = nn.relu(%2) /* bn1, relu1 */;"
    assert lines[6] == "  add(%3, 1f) /* add1 */"
    assert lines[7] == "}"
    assert lines[8].startswith("// meta data omitted")


def test_shared_subexpression_printed_once() -> None:
    x = relay.var("x", shape=(3,))
    r = call("nn.relu", x)
    text = astext(relay.Function([x], call("add", r, r)))
    assert text.count("nn.relu(") == 1
    assert "add(%0, %0)" in text


def test_node_shared_by_both_branches_is_bound_before_the_if() -> None:
    x, c = relay.var("x", shape=(3,)), relay.var("c", "bool")
    shared = call("multiply", x, x)
    fn = relay.Function([x, c], relay.If(c, call("add", shared, x), call("nn.relu", shared)))
    text = astext(IRModule.from_expr(fn))
    assert text.count("multiply(") == 1
    assert text.index("multiply(") < text.index("if (%c)")
    back = parse(text)["main"].body
    assert back.true_branch.args[0] is back.false_branch.args[0]  # still one node
    assert_parsed_equal(IRModule.from_expr(fn), parse(text))


def test_nested_function_attrs_and_global_calls() -> None:
    text = astext(fused(), show_meta_data=False)
    assert 'fn (%p0: Tensor[(1, 4), float32], %p1: Tensor[(1, 4), float32], Primitive=1, ' \
           'Composite="add_relu") {' in text
    assert "@helper(%2)" in text
    assert "def @helper(%hx: Tensor[(1, 4), float32]) {" in text


def test_scalar_constants_inline_like_tvm() -> None:
    cases = [(relay.const(1.0), "1f"), (relay.const(0.5), "0.5f"),
             (relay.const(2, "int64"), "2i64"), (relay.const(True), "True"),
             (relay.const(3), "3"), (relay.const(1.5, "float16"), "1.5f16"),
             (relay.const(np.array(0.1)), "0.1f64"), (relay.const(-7, "int8"), "-7i8"),
             (relay.const(float("inf")), "inff"), (relay.const(np.nan), "nanf")]
    for const, expected in cases:
        assert astext(const).splitlines()[1] == expected


def test_tensor_constant_goes_to_metadata() -> None:
    const = relay.const(np.arange(6, dtype="int64").reshape(2, 3))
    text = astext(const)
    assert text.splitlines()[1] == "meta[relay.Constant][0]"
    meta = json.loads(text.split("#[metadata]\n", 1)[1])
    entry = meta["relay.Constant"][0]
    assert entry["dtype"] == "int64" and entry["shape"] == [2, 3]


def test_type_text() -> None:
    assert type_text(TensorType((1, 3, 224, 224))) == "Tensor[(1, 3, 224, 224), float32]"
    assert str(TensorType((Any(), 3), "float16")) == "Tensor[(?, 3), float16]"
    assert str(TensorType((), "int64")) == "int64"
    assert type_text(TensorType((5,))) == "Tensor[(5), float32]"
    tup = TupleType([TensorType((1,)), TensorType((2,), "int32")])
    assert str(tup) == "(Tensor[(1), float32], Tensor[(2), int32])"
    assert type_text(TupleType([TensorType((1,))])) == "(Tensor[(1), float32],)"
    fn = FuncType([TensorType((1,))], TupleType([]))
    assert str(fn) == "fn (Tensor[(1), float32]) -> ()"
    assert type_text(IncompleteType()) == "_"
    assert astext(tup) == str(tup)


def test_span_names_quoted_and_escaped() -> None:
    weird = ['a b', 'x,y', 'q"uote', 'end*/here', '<img src=x onerror=alert(1)>', 'naïve', 'ty=1']
    x = relay.var("x", shape=(1,))
    body = call("nn.relu", x, span=SequentialSpan([layer_span(n) for n in weird]))
    text = astext(relay.Function([x], body))
    comment = text.splitlines()[2]
    assert comment.count("*/") == 1 and comment.rstrip().endswith("*/")
    # names read as written: markup and letters are text for the page, not escapes
    assert '"<img src=x onerror=alert(1)>"' in text and '"naïve"' in text
    assert '"end*\\/here"' in text
    assert '"a b", "x,y", "q\\"uote"' in text


def test_span_positions_printed() -> None:
    x = relay.var("x", shape=(1,))
    body = call("nn.relu", x, span=Span("model.py", 3, 7, 0, 0))
    text = astext(relay.Function([x], call("add", body, x, span=Span("m.py", 1, 2, 3, 4))))
    assert "/* model.py:3:7 */" in text and "/* m.py:1:2-3:4 */" in text


def test_var_names_unique_and_sanitized() -> None:
    a, b, c = relay.var("x", shape=(1,)), relay.var("x", shape=(1,)), relay.var("input.1")
    text = astext(relay.Function([a, b, c], relay.Tuple([a, b, c])))
    assert "%x: Tensor[(1), float32], %x1: Tensor[(1), float32], %input_1" in text
    assert "(%x, %x1, %input_1)" in text


def test_show_types_comment() -> None:
    x = relay.var("x", shape=(2,))
    relu = call("nn.relu", x, span=layer_span("r"))
    relu.set_checked_type(TensorType((2,)))
    text = astext(relay.Function([x], call("add", relu, x)), show_types=True)
    assert "nn.relu(%x) /* ty=Tensor[(2), float32] */ /* r */;" in text


def test_every_node_kind_has_a_printer() -> None:
    from engine.relay.expr_functor import NODE_KINDS
    from engine.relay.printer.expr import ExprPrinter, MetaTable
    from engine.relay.printer.writer import Writer

    table = ExprPrinter(Writer(), MetaTable())._render_table
    assert set(NODE_KINDS) <= set(table)


def test_print_ir_rejects_non_ir() -> None:
    with pytest.raises(TypeError, match="cannot print int"):
        print_ir(3)  # type: ignore[arg-type]


# --- source map ------------------------------------------------------------------------------


def _slice(lines: list[str], entry: printer.SourceMapEntry) -> str:
    (sl, sc), (el, ec) = entry.start, entry.end
    if sl == el:
        return lines[sl - 1][sc:ec]
    return "\n".join([lines[sl - 1][sc:], *lines[sl:el - 1], lines[el - 1][:ec]])


def test_source_map_ranges_are_exact() -> None:
    mod = conv_bn_relu()
    result = print_ir(mod)
    lines = result.text.split("\n")
    by_id: dict[int, list[printer.SourceMapEntry]] = {}
    for entry in result.source_map:
        by_id.setdefault(entry.node_id, []).append(entry)
    main = mod["main"]
    add = main.body
    relu = add.args[0]
    (add_entry,) = by_id[add.node_id]
    assert _slice(lines, add_entry) == "add(%3, 1f) /* add1 */"
    assert add_entry.op == "add" and add_entry.spans == ("add1",) and add_entry.kind == "call"
    definition, use = sorted(by_id[relu.node_id], key=lambda e: e.is_ref)
    assert _slice(lines, definition) == "%3 = nn.relu(%2) /* bn1, relu1 */"
    assert _slice(lines, use) == "%3" and use.is_ref
    assert definition.spans == ("bn1", "relu1")
    weight = relu.args[0].tuple_value.args[0].args[1]
    (w_entry,) = by_id[weight.node_id]
    assert _slice(lines, w_entry) == "meta[relay.Constant][0] /* conv1.weight */"
    (fn_entry,) = by_id[main.node_id]
    assert fn_entry.start == (2, 0) and fn_entry.end == (len(lines) - 1, 1)
    param = [e for e in by_id[main.params[0].node_id] if not e.is_ref][0]
    assert _slice(lines, param) == "%input: Tensor[(1, 3, 8, 8), float32] /* input */"


def test_every_node_printed_has_an_entry() -> None:
    mod = let_if()
    ids = print_ir(mod).node_ids()
    seen: set[int] = set()
    relay.analysis.post_order_visit(
        mod["main"], lambda n: seen.add(n.node_id) if not isinstance(n, Op) else None)
    assert seen <= ids


def test_source_map_json_matches_protocol() -> None:
    result = print_ir(fused())
    payload = json.loads(json.dumps(result.to_json()))
    keys = {"node_id", "kind", "start", "end", "spans", "op"}
    assert payload and all(set(e) - {"ref"} == keys for e in payload)
    assert any(e.get("ref") is True for e in payload)
    assert payload == [e.as_dict() for e in result.source_map]
    starts = [tuple(e["start"]) for e in payload]
    assert starts == sorted(starts)
    for e in payload:
        assert tuple(e["start"]) <= tuple(e["end"])
    assert len(result.to_json(include_refs=False)) < len(payload)


def test_line_origins() -> None:
    mod = conv_bn_relu()
    result = print_ir(mod)
    origins = result.line_origins
    assert len(origins) == result.line_count == len(result.text.splitlines())
    main = mod["main"]
    relu = main.body.args[0]
    assert origins[0] == ()
    assert main.node_id in origins[1] and main.params[0].node_id in origins[1]
    assert origins[5] == (relu.node_id,)
    assert origins[7] == (main.node_id,)  # the closing brace


def test_multi_function_module_offsets() -> None:
    result = print_ir(fused())
    lines = result.text.split("\n")
    for entry in result.source_map:
        if entry.kind == "global_var" and not entry.is_ref:
            assert _slice(lines, entry) in ("@helper", "@main")


# --- cache and speed ---------------------------------------------------------------------------


def test_unchanged_functions_reuse_their_printed_block() -> None:
    mod = fused()
    first = print_ir(mod)
    new_main = relay.Function(mod["main"].params, call("nn.relu", mod["main"].body))
    mod2 = mod.shallow_copy()
    mod2["main"] = new_main
    second = print_ir(mod2)
    blocks1 = {id(b) for _, b in first._placed}
    blocks2 = {id(b) for _, b in second._placed}
    assert len(blocks1 & blocks2) == 1  # @helper reused, @main re-printed
    assert second.text.startswith(first.text.split("def @main")[0])
    assert "nn.relu(%3)" in second.text


def _chain(n: int):
    x = relay.var("x", shape=(1, 8))
    node = x
    for i in range(n):
        node = call("nn.relu" if i % 2 else "add", node, *([] if i % 2 else [x]),
                    span=layer_span(f"l{i}"))
    return relay.Function([x], node)


def test_100k_chain_prints_iteratively_and_round_trips() -> None:
    fn = _chain(100_000)
    start = time.perf_counter()
    result = print_ir(IRModule.from_expr(fn))
    elapsed = time.perf_counter() - start
    assert result.line_count == 100_000 + 3
    assert len(result.to_json()) > 100_000
    mod = parse(result.text)
    assert_parsed_equal(IRModule.from_expr(fn), mod)
    assert elapsed < 30  # generous: the point is no RecursionError; numbers in the report


# --- column source map, memoized pieces, naming at scale ---------------------------------------


@pytest.mark.parametrize("make", [conv_bn_relu, let_if, fused])
def test_source_map_table_matches_the_entries(make) -> None:
    result = print_ir(make(), show_types=True)
    table = result.source_map_table()
    assert table.to_json() == result.to_json()
    assert table.json_bytes() == json.dumps(result.to_json(), separators=(",", ":")).encode()
    assert result.source_map_table(include_refs=False).to_json() == \
        result.to_json(include_refs=False)
    assert len(table) == len(result.source_map)
    assert set(table.node_ids().tolist()) == result.node_ids()


def test_source_map_table_round_trips_through_json_and_columns() -> None:
    from engine.relay.printer.table import SourceMapTable

    entries = print_ir(fused()).to_json()
    table = SourceMapTable.from_json(entries)
    assert table.to_json() == entries
    again = SourceMapTable.from_columns_bytes(table.columns_bytes(), table.names,
                                              table.span_sets)
    assert again.to_json() == entries
    assert len(SourceMapTable.from_json([])) == 0 and SourceMapTable.from_json([]).to_json() == []


def test_multi_function_table_interns_across_functions() -> None:
    result = print_ir(fused())
    table = result.source_map_table()
    assert len(set(table.names)) == len(table.names)
    assert len(set(table.span_sets)) == len(table.span_sets)
    firsts = [e["start"][0] for e in table.to_json()]
    assert firsts == sorted(firsts)  # @helper's block, then @main's, shifted to absolute lines


def test_equal_spans_in_distinct_objects_print_and_map_alike() -> None:
    x = relay.var("x", shape=(2,))
    a = call("nn.relu", x, span=SequentialSpan([layer_span("p"), layer_span("q")]))
    b = call("nn.relu", a, span=SequentialSpan([layer_span("p"), layer_span("q")]))
    result = print_ir(IRModule.from_expr(relay.Function([x], b)))
    assert result.text.count("/* p, q */") == 2
    table = result.source_map_table()
    assert table.span_sets.count(("p", "q")) == 1


def test_registered_type_text_replaces_memoized_trailers() -> None:
    from engine.relay.printer.format import register_type_text

    class Opaque(IncompleteType):
        pass

    x = relay.var("x", shape=(2,))
    relu = call("nn.relu", x)
    ty = Opaque()
    relu.set_checked_type(ty)
    fn = relay.Function([x], relu)
    assert "/* ty=Opaque */" in astext(fn, show_types=True)
    register_type_text(Opaque, lambda t: "opaque!")
    assert "/* ty=opaque! */" in astext(relay.Function([x], relu), show_types=True)


def test_colliding_var_names_get_the_next_free_suffix() -> None:
    names = ["x", "x1", "x", "x", "x2", "p0", "p0", "p01"]
    params = [relay.var(n, shape=(1,)) for n in names]
    text = astext(relay.Function(params, relay.Tuple(params)))
    got = re.findall(r"(%\w+): Tensor", text.splitlines()[1])
    assert got == ["%x", "%x1", "%x2", "%x3", "%x21", "%p0", "%p01", "%p011"]


def test_many_same_named_vars_are_named_in_linear_time() -> None:
    def run(n: int) -> float:
        params = [relay.var("p0", shape=(1,)) for _ in range(n)]
        fn = relay.Function(params, relay.Tuple(params))
        start = time.perf_counter()
        text = astext(fn)
        elapsed = time.perf_counter() - start
        assert f"%p0{n - 1}:" in text and text.count("%p0") == 2 * n
        return elapsed

    small, big = run(1_000), run(8_000)
    assert big < 20 * small + 0.5  # 8x the vars; the old suffix search was 64x
