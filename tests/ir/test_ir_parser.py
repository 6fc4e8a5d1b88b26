"""The Relay text parser: print -> parse -> structural_equal (spans included) on every
program kind, the metadata section, and located parse errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ir_helpers import assert_parsed_equal, register_ops

from engine import relay
from engine.ir import (
    Attrs,
    IRModule,
    Op,
    ParseError,
    SequentialSpan,
    Span,
    layer_span,
)
from engine.ir.type import Any, FuncType, IncompleteType, TensorType, TupleType
from engine.relay.parser import fromtext, parse, parse_expr, parse_type
from engine.relay.printer import astext

OPS = ["nn.conv2d", "nn.relu", "add", "multiply", "greater", "split", "nn.dense"]


@pytest.fixture(autouse=True, scope="module")
def _ops() -> None:
    register_ops(OPS)


def call(name: str, *args, span=None, **attrs):
    kw = {"span": span} if span is not None else {}
    return relay.Call(Op.get(name), list(args), Attrs(attrs), **kw)


def _read(node: relay.Expr | IRModule, text: str) -> IRModule | relay.Expr:
    return parse(text) if isinstance(node, IRModule) else parse_expr(text)


def round_trip(node: relay.Expr | IRModule) -> IRModule | relay.Expr:
    """Print and parse back (`assert_parsed_equal`); printing what was read is then a fixed
    point."""
    back = _read(node, astext(node, show_meta_data=True))
    assert_parsed_equal(node, back)
    again = astext(back, show_meta_data=True)
    assert astext(_read(node, again), show_meta_data=True) == again
    return back


def module(body_fn) -> IRModule:
    x = relay.var("x", shape=(2, 3), span=layer_span("x"))
    return IRModule.from_expr(relay.Function([x], body_fn(x)))


# --- round trips -------------------------------------------------------------------------


def test_every_node_kind() -> None:
    x = relay.var("x", shape=(2, 3))
    c = relay.var("c", "bool")
    v = relay.Var("v", TensorType((2, 3)))
    tup = relay.Tuple([x, call("nn.relu", x)], span=layer_span("tup"))
    item = relay.TupleGetItem(tup, 1, span=layer_span("item"))
    inner = relay.Function([v], call("add", v, relay.const(1.0)), span=layer_span("inner"))
    applied = relay.Call(inner, [item], span=layer_span("apply"))
    ite = relay.If(c, applied, x, span=layer_span("ite"))
    w = relay.Var("w", span=layer_span("w"))
    let = relay.Let(w, ite, relay.Tuple([w, relay.Tuple([])]), span=layer_span("let"))
    fn = relay.Function([x, c], let, TupleType([TensorType((2, 3)), TupleType([])]),
                        span=layer_span("main"))
    mod = IRModule.from_expr(fn)
    mod["other"] = relay.Function([], relay.Call(mod.get_global_var("main"),
                                                 [relay.const(np.zeros((2, 3), "float32")),
                                                  relay.const(False)]))
    round_trip(mod)


def test_let_chain_and_nested_if() -> None:
    sb = relay.ScopeBuilder()
    x = relay.var("x", shape=(4,))
    a = sb.let("a", call("nn.relu", x))
    b = sb.let(("b", TensorType((4,))), call("add", a, a))
    cond = call("greater", relay.const(1.0), relay.const(0.5))
    with sb.if_scope(cond):
        sb.ret(call("multiply", a, b))
    with sb.else_scope():
        sb.ret(relay.If(relay.const(True), b, a))
    round_trip(module(lambda _: relay.Function([x], sb.get())))


def test_non_tail_let_is_a_block() -> None:
    x = relay.var("x", shape=(1,))
    y = relay.Var("y")
    inner = relay.Let(y, call("nn.relu", x), call("add", y, y))
    mod = IRModule.from_expr(relay.Function([x], call("multiply", inner, x)))
    back = round_trip(mod)
    assert isinstance(back["main"].body.args[0], relay.Let)


def test_shared_nodes_across_scopes_stay_valid() -> None:
    x = relay.var("x", shape=(3,))
    c = relay.var("c", "bool")
    shared = call("nn.relu", x)
    body = call("add", relay.If(c, shared, call("add", shared, shared)), shared)
    round_trip(IRModule.from_expr(relay.Function([x, c], body)))


def test_closure_captures_outer_binding() -> None:
    x = relay.var("x", shape=(3,))
    p = relay.var("p", shape=(3,))
    outer = call("nn.relu", x)
    fn = relay.Function([p], call("add", p, outer), attrs={"Primitive": 1})
    body = relay.Tuple([outer, relay.Call(fn, [x])])
    round_trip(IRModule.from_expr(relay.Function([x], body)))


def test_attrs_of_every_value_type() -> None:
    def body(x: relay.Var) -> relay.Expr:
        return call("nn.relu", x, i=3, neg=-2, f=0.5, tiny=1e-5, big=1e300, whole=2.0,
                    inf=float("inf"), ninf=float("-inf"), nan=float("nan"), s="NCHW",
                    esc='q"\\/<x>é', empty="", none=None, yes=True, no=False,
                    tup=(1, 1), nested=((1, 2), (), ("a", 0.25)), one=(7,),
                    d={"k": 1, "l": [1.5, None]}, **{"odd key": 1})
    round_trip(module(body))


def test_function_attrs() -> None:
    x = relay.var("x", shape=(1,))
    fn = relay.Function([x], x, attrs={"Primitive": 1, "global_symbol": "f", "hash": "ab12"})
    round_trip(IRModule.from_expr(fn))


@pytest.mark.parametrize("value", [
    np.float32(1.5), np.float32(-0.1), np.float32(3.4e38), np.float32(1e-30),
    np.float64(0.1), np.float64(-2.5e-300), np.float16(0.1), np.float16(65504),
    np.int32(-7), np.int64(2**40), np.int8(-128), np.int16(300), np.uint8(255),
    np.uint16(65535), np.uint32(2**32 - 1), np.uint64(2**64 - 1), np.bool_(True),
    np.bool_(False), np.float32(np.inf), np.float32(-np.inf), np.float32(np.nan),
])
def test_scalar_constants(value: np.generic) -> None:
    const = relay.Constant(np.array(value), span=layer_span("c"))
    text = astext(const)
    assert "meta[" not in text
    back = round_trip(module(lambda x: call("add", x, const)))
    got = back["main"].body.args[1].data.numpy()
    assert got.dtype == np.array(value).dtype


@pytest.mark.parametrize("array", [
    np.arange(12, dtype="float32").reshape(3, 4), np.array([True, False, True]),
    np.arange(6, dtype="int64").reshape(2, 3) - 3, np.array([[0.1, 65504]], "float16"),
    np.zeros((0, 3), "float32"), np.array([1.0, np.nan, -np.inf]), np.arange(4, dtype="uint8"),
    np.array([[1 + 2j]], "complex64"), np.array(1 + 2j, "complex128"),
    np.array([0.5, -448, np.nan], ml_dtypes.float8_e4m3fn), np.array([1.5, -2], "bfloat16"),
    np.array([[-8, 7, -1]], ml_dtypes.int4), np.array([-6, 0.5], ml_dtypes.float4_e2m1fn),
    np.array(3, ml_dtypes.uint2), np.array([2**-127, 1.0], ml_dtypes.float8_e8m0fnu),
])
def test_tensor_constants_through_metadata(array: np.ndarray) -> None:
    const = relay.Constant(array, span=layer_span("w"))
    back = round_trip(module(lambda x: relay.Tuple([x, const, const])))
    data = back["main"].body.fields[1].data.numpy()
    assert data.dtype == array.dtype
    assert data.tobytes() == array.tobytes()


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
                                   "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                                   "float4_e2m1fn", "int4", "uint4", "int2", "uint2"])
def test_low_precision_dtypes_in_types(dtype: str) -> None:
    assert parse_type(f"Tensor[(2, 3), {dtype}]") == TensorType((2, 3), dtype)
    x, y = relay.var("x", shape=(2, 3), dtype=dtype), relay.var("y", shape=(2, 3))
    mod = IRModule.from_expr(relay.Function([x, y], relay.Tuple([x, relay.cast(y, dtype)])))
    assert f"Tensor[(2, 3), {dtype}]" in astext(mod)
    round_trip(mod)


def test_spans_single_sequential_quoted_positions() -> None:
    weird = ['a b', 'x,y', 'q"uote', 'end*/here', '<img src=x onerror=alert(1)>', 'naïve 名前',
             'ty=oops', 'back\\slash', 'line\nbreak', '-dash', '123', 'conv1/Conv2D:0']
    spans = [
        layer_span("conv1"), SequentialSpan([layer_span("conv1"), layer_span("bn1")]),
        SequentialSpan([layer_span(n) for n in weird]), SequentialSpan([layer_span("solo")]),
        Span("model.py", 3, 4, 0, 0), Span("model.py", 3, 4, 5, 6), Span("m", 0, 0, 1, 1),
        SequentialSpan([Span("a b", 1, 2, 3, 4), layer_span("c")]),
    ]

    def body(x: relay.Var) -> relay.Expr:
        node: relay.Expr = x
        for span in spans:
            node = call("nn.relu", node, span=span)
        return relay.Tuple([node, relay.const(1.0, span=spans[2])], span=spans[4])

    round_trip(module(body))


def test_dynamic_shapes_and_types() -> None:
    x = relay.var("x", shape=(Any(), 3, Any()))
    t = relay.var("t", TupleType([TensorType((Any(),), "int64"), TensorType((), "bool")]))
    f = relay.var("f", FuncType([TensorType((1,))], TupleType([])))
    i = relay.var("i", IncompleteType())
    fn = relay.Function([x, t, f, i], relay.Tuple([x, t, f, i]),
                        TupleType([TensorType((Any(), 3, Any())), TupleType([])]))
    round_trip(IRModule.from_expr(fn))


def test_global_names_and_calls() -> None:
    mod = IRModule()
    x = relay.var("x", shape=(1,))
    odd = relay.GlobalVar("my fn.v2")
    mod[odd] = relay.Function([x], call("nn.relu", x))
    y = relay.var("y", shape=(1,))
    mod["main"] = relay.Function([y], relay.Call(odd, [relay.Call(odd, [y])]))
    back = round_trip(mod)
    assert "my fn.v2" in back and 'def @"my fn.v2"' in astext(mod)


def test_free_vars_in_expressions() -> None:
    x, y = relay.var("x", shape=(1,), span=layer_span("x")), relay.var("y")
    expr = call("add", call("nn.relu", x), call("multiply", x, y))
    text = astext(expr)
    assert text.splitlines()[1:3] == ["free_var %x: Tensor[(1), float32] /* x */;",
                                      "free_var %y;"]
    back = round_trip(expr)
    assert len(relay.analysis.free_vars(back)) == 2
    assert parse(text)["main"].params[0].type_annotation == TensorType((1,))


def test_100k_let_chain() -> None:
    x = relay.var("x", shape=(1,))
    vars_ = [relay.Var(f"v{i}") for i in range(100_000)]
    body: relay.Expr = vars_[-1]
    for i in range(len(vars_) - 1, -1, -1):
        prev = vars_[i - 1] if i else x
        body = relay.Let(vars_[i], call("nn.relu", prev), body)
    mod = IRModule.from_expr(relay.Function([x], body))
    assert_parsed_equal(mod, parse(astext(mod)))


def test_show_types_comments_are_accepted() -> None:
    x = relay.var("x", shape=(2,))
    relu = call("nn.relu", x, span=layer_span("r"))
    relu.set_checked_type(TensorType((2,)))
    mod = IRModule.from_expr(relay.Function([x], call("add", relu, x)))
    text = astext(mod, show_types=True)
    assert "/* ty=Tensor[(2), float32] */" in text
    assert_parsed_equal(mod, parse(text))


def test_metadata_given_separately() -> None:
    w = np.arange(6, dtype="float32").reshape(2, 3)
    mod = module(lambda x: call("add", x, relay.const(w)))
    text = astext(mod, show_meta_data=False)
    assert "#[metadata]" not in text
    with pytest.raises(ParseError, match="no metadata"):
        parse(text)
    back = parse(text, metadata={"relay.Constant": [w]})
    assert_parsed_equal(mod, back)


def test_hand_written_tvm_text() -> None:
    text = """#[version = "0.0.5"]
    // a comment
    def @main(%data: Tensor[(1, 4), float32], %w: Tensor[(8, 4), float32]) {
      %0 = nn.dense(%data, %w, units=8) /* fc1 */;
      %1 = add(%0, 1f);
      %2 = split(%1, indices_or_sections=2, axis=1);
      %3 = %2.0;
      nn.relu(%3) /* relu */
    }
    """
    mod = fromtext(text)
    body = mod["main"].body
    assert body.op.name == "nn.relu" and body.span == layer_span("relu")
    dense = body.args[0].tuple_value.args[0].args[0]
    assert dense.attrs.units == 8 and dense.span == layer_span("fc1")
    assert dense.attrs.type_key == Op.get("nn.dense").info.attrs_type_key
    assert parse_type("Tensor[(1, ?), int8]") == TensorType((1, Any()), "int8")


def test_bare_expression_becomes_main() -> None:
    mod = parse("%0 = nn.relu(%x);\nadd(%0, %y)")
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["x", "y"]
    assert main.body.op.name == "add" and main.body.args[0].op.name == "nn.relu"
    assert len(parse('#[version = "0.0.5"]\n')) == 0


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("text, message, line, column", [
    ("def @main(%x) {\n  nn.not_an_op(%x)\n}", "operator 'nn.not_an_op' is not registered", 2, 3),
    ("def @main(%x) {\n  %0 = nn.relu(%y);\n  %0\n}", "undefined variable %y", 2, 16),
    ("def @main(%x) {\n  %1\n}", "undefined variable %1", 2, 3),
    ("def @main(%x) {\n  nn.relu(%x) /* bad name */\n}", "expected ','", 2, 22),
    ("def @main(%x) {\n  nn.relu(%x /* open\n}", "unterminated comment", 2, 14),
    ("def @main(%x) {\n  @nope(%x)\n}", "undefined global function @nope", 2, 3),
    ("def @main(%x) {\n  meta[relay.Constant][0]\n}", "no metadata", 2, 3),
    ("def @main(%x: Tensor[(1, 2), floaty]) {\n  %x\n}", "invalid dtype 'floaty'", 1, 30),
    ("def @main(%x) {\n  add(%x, 3000000000)\n}", "invalid number", 2, 11),
    ("def @main(%x) {\n  add(%x, %x\n}", "expected ','", 3, 1),
    ("def @main(%x) {\n  %x\n}\ndef @main(%y) {\n  %y\n}", "defined twice", 4, 5),
    ("def @main(%x) {\n  %x ; \n}", "expected '}'", 2, 6),
    ("def @main(%x) {\n  nn.relu(%x) $\n}", "unexpected character '$'", 2, 15),
])
def test_parse_errors_are_located(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(ParseError) as info:
        parse(text, source_name="prog.relay")
    err = info.value
    assert message in err.message
    assert (err.line, err.column) == (line, column)
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"prog.relay:{line}:{column}: ")
    assert rendered[1].strip() == text.splitlines()[line - 1].strip()
    assert rendered[2].index("^") - 2 == column - 1


def test_metadata_index_out_of_range() -> None:
    mod = module(lambda x: call("add", x, relay.const(np.ones((2, 3), "float32"))))
    text = astext(mod).replace("meta[relay.Constant][0]", "meta[relay.Constant][5]")
    with pytest.raises(ParseError, match="out of range"):
        parse(text)
