"""Optimization remarks: the API (per pass, per context, no-op outside a pass) and the
remarks of FuseOps (why a producer was not fused), FoldScaleAxis, SimplifyExpr and
AlterOpLayout (which rule fired where)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.ir.expr import Expr
from engine.transform.remarks import APPLIED, MISSED, Remark, frame_remarks, remark


@tvm.instrument.pass_instrument
class Collect:
    """Collects the remarks of every pass as it finishes."""

    def __init__(self) -> None:
        self.remarks: list[Remark] = []

    def run_after_pass(self, mod: tvm.IRModule, info: object) -> None:
        self.remarks.extend(frame_remarks())


def _run(func: relay.Function, *passes: tvm.transform.Pass, opt_level: int = 3,
         config: dict[str, object] | None = None) -> list[Remark]:
    collect = Collect()
    mod = tvm.IRModule.from_expr(func)
    with tvm.transform.PassContext(opt_level=opt_level, instruments=[collect],
                                   config=config or {}):
        tvm.transform.Sequential([relay.transform.InferType(), *passes])(mod)
    return collect.remarks


def _of(remarks: list[Remark], node: Expr) -> list[Remark]:
    return [r for r in remarks if r.node_id == node.node_id]


def test_a_remark_outside_a_pass_is_dropped_and_a_bad_kind_refused() -> None:
    remark(APPLIED, "rule", "nothing runs")  # no frame: nothing to record, no error
    with pytest.raises(ValueError, match="remark kind"):
        remark("fired", "rule", "x")


def test_remarks_belong_to_the_pass_that_made_them() -> None:
    @tvm.transform.module_pass(opt_level=0, name="Noticing")
    def noticing(mod: tvm.IRModule, ctx: tvm.transform.PassContext) -> tvm.IRModule:
        remark(MISSED, "my-rule", "saw it", mod["main"].body, lanes=4)
        return mod

    x = relay.var("x", shape=(2,))
    func = relay.Function([x], relay.nn.relu(x))
    found = _run(func, noticing)
    assert [(r.pass_name, r.kind, r.rule, r.op, r.args) for r in found] == [
        ("Noticing", "missed", "my-rule", "nn.relu", {"lanes": 4})]
    assert found[0].to_json()["pass"] == "Noticing"


def test_two_threads_keep_their_own_remarks() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    results: dict[int, list[Remark]] = {}

    def work(k: int) -> None:
        body = x
        for _ in range(k + 2):
            body = relay.nn.dropout(relay.exp(body))
        results[k] = _run(relay.Function([x], body), relay.transform.FuseOps())

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [sum(r.rule == "opaque" for r in results[k]) for k in (0, 1)] == [2, 3]


def test_fuse_ops_says_why_a_producer_stayed_apart() -> None:
    x = relay.var("x", shape=(1, 3, 8, 8), span=None)
    w = relay.var("w", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(x, w, padding=(1, 1))
    relu = relay.nn.relu(conv)
    pool = relay.nn.max_pool2d(relu)
    drop = relay.nn.dropout(pool)
    out = relay.exp(drop)
    side = relay.exp(conv)
    found = _run(relay.Function([x, w], relay.Tuple([out, side])), relay.transform.FuseOps())
    assert [r.rule for r in _of(found, conv)] == ["multiple-consumers"]
    assert "consumers" in _of(found, conv)[0].args
    why_relu = _of(found, relu)
    assert [r.rule for r in why_relu] == ["pattern"] and "out_elemwise_fusable" in \
        why_relu[0].message
    assert [r.rule for r in _of(found, pool)] == ["opaque"]  # dropout is opaque
    assert all(r.pass_name == "FuseOps" for r in found)


def test_fuse_ops_names_the_depth_limit() -> None:
    x = relay.var("x", shape=(4,))
    chain = [x]
    for _ in range(5):
        chain.append(relay.exp(chain[-1]))
    found = _run(relay.Function([x], chain[-1]), relay.transform.FuseOps(),
                 config={"relay.FuseOps.max_depth": 2})
    limited = [r for r in found if r.kind == MISSED]
    assert limited and {r.rule for r in limited} == {"depth-limit"}
    assert limited[0].args["max_depth"] == 2
    assert {r.rule for r in found if r.kind == APPLIED} == {"fused"}


def test_fold_scale_axis_names_the_fold_and_the_refusal() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(2, 4, 3, 3))
    scale = relay.const(np.full((4, 1, 1), 0.5, "float32"))
    scaled = relay.multiply(x, scale)
    conv = relay.nn.conv2d(relay.nn.relu(scaled), w, channels=2, kernel_size=(3, 3))
    found = _run(relay.Function([x, w], conv), relay.transform.ForwardFoldScaleAxis())
    assert [(r.kind, r.rule, r.op) for r in found] == [
        ("applied", "forward-fold", "nn.conv2d")]
    negative = relay.const(np.full((4, 1, 1), -0.5, "float32"))
    conv2 = relay.nn.conv2d(relay.nn.relu(relay.multiply(x, negative)), w, channels=2,
                            kernel_size=(3, 3))
    refused = _run(relay.Function([x, w], conv2), relay.transform.ForwardFoldScaleAxis())
    assert [(r.kind, r.rule) for r in refused] == [("missed", "forward-fold")]
    assert "positive" in refused[0].message


def test_simplify_expr_names_the_rule() -> None:
    x = relay.var("x", shape=(2, 3))
    y = relay.add(x, relay.const(0.0))
    found = _run(relay.Function([x], relay.nn.relu(y)), relay.transform.SimplifyExpr())
    assert [(r.rule, r.op) for r in found] == [("eliminate_identity", "add")]
    assert found[0].node_id == y.node_id


def test_alter_op_layout_names_the_new_op() -> None:
    x = relay.var("x", shape=(1, 16, 8, 8))
    w = relay.var("w", shape=(16, 16, 3, 3))
    conv = relay.nn.conv2d(x, w, channels=16, kernel_size=(3, 3), padding=(1, 1))
    found = _run(relay.Function([x, w], relay.nn.relu(conv)),
                 relay.transform.AlterOpLayout("llvm -mcpu=core-avx2"))
    assert [(r.rule, r.op, r.args["new_op"]) for r in found] == [
        ("FTVMAlterOpLayout", "nn.conv2d", "nn.contrib_conv2d_NCHWc")]
