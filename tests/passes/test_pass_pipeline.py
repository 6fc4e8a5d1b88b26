"""The standard pipeline and relay.optimize: relay.build's order, gating by opt_level,
disabled passes, params binding (with spans), and a relay-built ResNet end to end."""

from __future__ import annotations

from typing import Any

import numpy as np

import engine as tvm
from engine import relay
from engine.instrument import PassInstrument
from engine.ir.expr import Call, Constant, Function
from engine.ir.span import layer_span
from engine.relay.interpreter import evaluate
from engine.relay.transform.pipeline import (
    bind_params_by_name,
    optimize,
    pipeline_steps,
    skip_int32_cast,
    standard_pipeline,
)


class Recorder(PassInstrument):
    def __init__(self) -> None:
        self.ran: list[str] = []

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self.ran.append(info.name)


def _small_net() -> tvm.IRModule:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    y = relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1))
    y = relay.nn.batch_norm(y, *(relay.var(n, shape=(4,)) for n in ("g", "b", "m", "v")))[0]
    y = relay.nn.relu(y)
    return tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))


def _params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"w": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
            "g": (rng.random(4) + 0.5).astype("float32"),
            "b": rng.random(4).astype("float32"), "m": rng.random(4).astype("float32"),
            "v": (rng.random(4) + 0.5).astype("float32")}


def _run(mod: tvm.IRModule, opt_level: int, **ctx: Any) -> tuple[tvm.IRModule, list[str]]:
    rec = Recorder()
    with tvm.transform.PassContext(opt_level=opt_level, instruments=[rec], **ctx):
        out = standard_pipeline()(mod)
    return out, rec.ran


def test_pass_order_is_relay_builds() -> None:
    names = [s.name for s in pipeline_steps()]
    order = ["RemoveUnusedFunctions", "SimplifyInference", "EliminateCommonSubexpr",
             "FoldConstant", "FoldScaleAxis", "CanonicalizeOps", "AlterOpLayout", "FuseOps"]
    positions = [names.index(n) for n in order]
    assert positions == sorted(positions)
    assert names[-2:] == ["FuseOps", "InferType"]
    seq = standard_pipeline()
    made = [p.info.name for p in seq.passes]
    assert "CombineParallelConv2D" not in made  # not in this engine: left out
    assert made.count("FoldConstant") == 2 and made.count("SimplifyExpr") == 3


def test_o3_runs_every_pass_and_o0_only_level_zero_ones() -> None:
    _, o3 = _run(_small_net(), 3)
    assert {"FoldScaleAxis", "BackwardFoldScaleAxis", "AlterOpLayout", "CanonicalizeOps",
            "EliminateCommonSubexpr", "FuseOps"} <= set(o3)
    _, o0 = _run(_small_net(), 0)
    assert "FoldScaleAxis" not in o0 and "FoldConstant" not in o0
    assert "AlterOpLayout" not in o0 and "EliminateCommonSubexpr" not in o0
    assert {"SimplifyInference", "FuseOps"} <= set(o0)


def test_disabled_pass_is_skipped() -> None:
    out, ran = _run(_small_net(), 3, disabled_pass=["FuseOps"])
    assert "FuseOps" not in ran
    assert not any(isinstance(c, Call) and isinstance(c.op, Function)
                   for c in _nodes(out["main"]))


def _nodes(func: Function) -> list[Any]:
    found: list[Any] = []
    relay.analysis.post_order_visit(func.body, found.append)
    return found


def test_optimize_binds_params_folds_and_fuses() -> None:
    rng = np.random.default_rng(0)
    mod, params = _small_net(), _params(rng)
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    want = evaluate(mod, {"x": data, **params})
    with tvm.transform.PassContext(opt_level=3):
        opt, out_params = relay.optimize(mod, target="llvm", params=params)
    assert set(out_params) == set(params)
    assert [p.name_hint for p in opt["main"].params] == ["x"]
    main = opt["main"]
    assert isinstance(main.body, Call) and isinstance(main.body.op, Function)
    assert main.body.op.is_primitive()
    kinds = [n.op.name for n in _nodes(main.body.op) if isinstance(n, Call)]
    assert kinds == ["nn.conv2d", "add", "nn.relu"]  # batch norm folded away
    np.testing.assert_allclose(evaluate(opt, {"x": data}), want, rtol=1e-4, atol=1e-5)


def test_bind_params_by_name_keeps_the_parameter_span() -> None:
    w = relay.var("w", shape=(2,))
    from dataclasses import replace

    w = replace(w, span=layer_span("fc.weight"))
    x = relay.var("x", shape=(2,))
    func = relay.Function([x, w], relay.add(x, w))
    bound = bind_params_by_name(func, {"w": np.ones(2, "float32")})
    assert [p.name_hint for p in bound.params] == ["x"]
    const = bound.body.args[1]
    assert isinstance(const, Constant) and const.span.source_names() == ("fc.weight",)
    assert bind_params_by_name(func, {}) is func


def test_cse_skip_keeps_int32_casts_apart() -> None:
    x = relay.var("x", shape=(2,))
    assert skip_int32_cast(x.astype("int32"))
    assert not skip_int32_cast(x.astype("float16")) and not skip_int32_cast(x)


def test_optimize_resnet18_workload() -> None:
    from engine.relay.testing import resnet

    mod, params = resnet.get_workload(num_layers=18, image_shape=(3, 32, 32), num_classes=10)
    data = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype("float32")
    want = evaluate(mod, {"data": data, **{k: v.numpy() for k, v in params.items()}})
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = optimize(mod, "llvm", params)
    text = opt.astext(show_meta_data=False)
    assert "batch_norm" not in text and "Primitive=1" in text
    # the workload names only its convs and dense layers: each fused kernel with one names it
    fused = [n.op for n in _nodes(opt["main"]) if isinstance(n, Call)
             and isinstance(n.op, Function)]
    for func in fused:
        inside = {s for c in _nodes(func) if isinstance(c, Call) for s in c.span.source_names()}
        assert set(func.span.source_names()) == inside
    assert sum(1 for f in fused if "conv0" in f.span.source_names()) == 1
    np.testing.assert_allclose(evaluate(opt, {"data": data}), want, rtol=1e-3, atol=1e-5)
