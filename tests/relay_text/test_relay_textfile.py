"""Relay text with its constants beside it (engine.relay.textfile) and the reproducer
folder of one pass (engine.relay.testing.reproducer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import engine as tvm
from engine import relay
from engine.relay.parser import parse
from engine.relay.testing.reproducer import PassSpec, apply_recorded_pass, write_reproducer
from engine.relay.textfile import load_relay, module_text, same_code, save_relay, with_metadata


def _conv_module() -> tvm.IRModule:
    rng = np.random.default_rng(1)
    x = relay.var("x", shape=(1, 3, 6, 6))
    w = relay.const(rng.standard_normal((4, 3, 3, 3)).astype("float32"))
    b = relay.const(rng.standard_normal(4).astype("float32"))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))


def test_constants_travel_beside_the_text(tmp_path: Path) -> None:
    mod = _conv_module()
    paths = save_relay(mod, tmp_path / "m")
    assert [p.name for p in paths] == ["m.relay", "m.npz"]
    assert "#[metadata]" not in paths[0].read_text()
    back = relay.transform.InferType()(load_relay(paths[0]))
    text, arrays = module_text(mod)
    back_text, back_arrays = module_text(back)
    assert same_code(text, back_text)
    assert all(np.array_equal(a, b) for a, b in zip(arrays, back_arrays, strict=True))
    inline = parse(with_metadata(text, arrays))  # one self-contained text instead
    assert same_code(module_text(relay.transform.InferType()(inline))[0], text)


def test_same_code_ignores_comments_and_spacing_only() -> None:
    assert same_code("%0 = add(%x, 1f) /* fc1 */;\n", "%0  = add(%x, 1f);")
    assert not same_code("add(%x, 1f)", "add(%x, 2f)")


def test_a_reproducer_notes_when_the_pass_does_not_remake_the_recorded_module(
        tmp_path: Path) -> None:
    mod = _conv_module()
    recorded = module_text(relay.transform.FoldConstant()(mod))[0]
    same = write_reproducer(mod, PassSpec("FoldConstant"), tmp_path / "a", recorded)
    assert same["matches_recorded"] is True and same["keeps_numerics"] is True
    other = write_reproducer(mod, PassSpec("FoldConstant"), tmp_path / "b", "def @main() { 1f }")
    assert other["matches_recorded"] is False
    assert "does not make the code the recorded run printed" in \
        (tmp_path / "b" / "README.md").read_text()
    spec = json.loads((tmp_path / "a" / "pass.json").read_text())
    assert spec["pass"] == "FoldConstant" and spec["plugins"] == []
    after = apply_recorded_pass(tmp_path / "a", load_relay(tmp_path / "a" / "before.relay"))
    assert module_text(after)[0] == (tmp_path / "a" / "after.relay").read_text()
