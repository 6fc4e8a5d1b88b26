"""The TE compiler cache: structurally equal fused functions share one kernel (TVM's
TECompiler, CCacheKey), each call keeps its own spans; different shapes or attrs do not
share; numerics are those of the unshared build."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import engine as tvm
from engine import relay
from engine.ir.span import SourceName, Span
from engine.relay.backend.build_module import GraphExecutorFactoryModule, check_numerics
from engine.relay.backend.te_compiler import TECompiler
from engine.relay.transform import InferType

RNG = np.random.default_rng(21)


def _w(*shape: int) -> relay.Expr:
    return relay.const(RNG.standard_normal(shape).astype("float32"))


def _span(name: str) -> Span:
    return Span(SourceName(name), 0, 0, 0, 0)


def _conv_relu(x: relay.Expr, layer: str, channels: int = 4, strides: tuple[int, int] = (1, 1),
               in_channels: int = 4) -> relay.Expr:
    conv = relay.nn.conv2d(x, _w(channels, in_channels, 3, 3), padding=(1, 1), strides=strides,
                           channels=channels, kernel_size=(3, 3))
    return replace(relay.nn.relu(replace(conv, span=_span(f"{layer}/conv"))),
                   span=_span(f"{layer}/relu"))


def _build(body: relay.Expr, x: relay.Var) -> GraphExecutorFactoryModule:
    with tvm.transform.PassContext(opt_level=3, config={"te.keep_schedule_record": True}):
        return relay.build(relay.Function([x], body), target="llvm")


def _tvm_ops(lib: object) -> list[int]:
    bm = lib.build_module  # type: ignore[attr-defined]
    return [k for k in range(bm.num_nodes) if bm.get_lowered(k) is not None]


def _run(lib: object, x: np.ndarray) -> np.ndarray:
    from engine.contrib import graph_executor

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))  # type: ignore[index]
    m.set_input("x", x)
    m.run()
    return np.asarray(m.get_output(0).numpy())


def _interpret(func: relay.Function, x: np.ndarray) -> np.ndarray:
    mod = tvm.IRModule.from_expr(func)
    return np.asarray(relay.create_executor("debug", mod=mod).evaluate()(x).numpy())


def test_two_identical_convs_share_one_kernel_with_both_call_sites() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    body = _conv_relu(_conv_relu(x, "block1"), "block2")
    lib = _build(body, x)
    bm = lib.build_module
    nodes = _tvm_ops(lib)
    assert len(nodes) == 2
    assert len(bm.lowered) == 1
    kernel = next(iter(bm.lowered.values()))
    assert [bm.get_lowered(k) for k in nodes] == [kernel, kernel]
    assert [sorted(bm.get_node_info(k)["spans"]) for k in nodes] == [
        ["block1/conv", "block1/relu"], ["block2/conv", "block2/relu"]]
    assert [sorted(span.source_names()) for span in kernel.calls] == [
        ["block1/conv", "block1/relu"], ["block2/conv", "block2/relu"]]
    names = {lib.graph.nodes[k].name for k in nodes}
    assert names == {kernel.name}
    assert kernel.name in lib.ir_mod.astext()


def test_different_shapes_or_attrs_make_different_kernels() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    strided = _conv_relu(_conv_relu(x, "a"), "b", strides=(2, 2))  # attrs differ
    lib = _build(strided, x)
    assert len(lib.build_module.lowered) == 2
    y = relay.var("x", shape=(1, 4, 8, 8))
    wider = _conv_relu(_conv_relu(y, "a", channels=8), "b", channels=8, in_channels=8)
    assert len(_build(wider, y).build_module.lowered) == 2


def test_shared_kernels_compute_the_interpreters_result_exactly() -> None:
    x = relay.var("x", shape=(1, 4, 6, 6))
    body = _conv_relu(_conv_relu(_conv_relu(x, "b1"), "b2"), "b3")
    func = relay.Function([x], body)
    lib = _build(body, x)
    assert len(lib.build_module.lowered) == 1 and len(_tvm_ops(lib)) == 3
    data = RNG.standard_normal((1, 4, 6, 6)).astype("float32")
    np.testing.assert_array_equal(_run(lib, data), _interpret(func, data))
    assert set(check_numerics(lib).values()) == {"ok"}


def _fused(name: str, shape: tuple[int, ...], bias: float = 1.0) -> relay.Function:
    """A typed primitive function relu(p + bias), its constant inside (as link_params)."""
    p = relay.var(name, shape=shape)
    body = replace(relay.nn.relu(relay.add(p, relay.const(bias))), span=_span(name))
    func = relay.Function([p], body).with_attr("Primitive", 1)
    typed = InferType()(tvm.IRModule.from_expr(func))["main"]
    assert isinstance(typed, relay.Function) and typed.is_primitive()
    return typed


def test_the_cache_key_ignores_names_and_spans_but_not_types_or_constants() -> None:
    compiler = TECompiler("llvm")
    first, new = compiler.lower(_fused("a", (2, 3)), lambda: "k0")
    again, new_again = compiler.lower(_fused("b", (2, 3)), lambda: "k1")
    other, new_other = compiler.lower(_fused("c", (3, 2)), lambda: "k2")
    biased, new_biased = compiler.lower(_fused("d", (2, 3), bias=2.0), lambda: "k3")
    assert (new, new_again, new_other, new_biased) == (True, False, True, True)
    assert again is first and other is not first and biased is not first
    assert [first.name, other.name, biased.name] == ["k0", "k2", "k3"]
