"""Targets (tvm.target) and building for a vector target: blocked layouts lower and compute."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tvm
from engine import relay
from engine.relay.backend.build_module import check_numerics
from engine.target import Target, TargetError


def test_target_parses_kind_and_options() -> None:
    t = Target("llvm -mcpu=core-avx2")
    assert t.kind.name == "llvm" and t.mcpu == "core-avx2" and t.keys == ("cpu",)
    assert str(t) == "llvm -mcpu=core-avx2" and Target(t) == t
    assert Target("cuda").keys == ("cuda", "gpu") and str(tvm.target.cuda()) == "cuda -model=unknown"
    assert Target({"kind": "llvm", "mcpu": "skylake"}).mcpu == "skylake"
    with pytest.raises(TargetError, match="unknown target kind 'tpu'"):
        Target("tpu")
    with pytest.raises(TargetError, match="-key=value"):
        Target("llvm mcpu")


def test_target_scope_is_current_and_nests() -> None:
    assert Target.current() is None
    with Target("cuda") as outer:
        assert Target.current() is outer
        with Target("llvm"):
            assert Target.current().kind.name == "llvm"
        assert Target.current() is outer
    with pytest.raises(TargetError, match="no target is in scope"):
        Target.current(allow_none=False)


def conv_relu() -> tvm.IRModule:
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 16, 8, 8))
    w = relay.const(rng.random((16, 16, 3, 3), dtype="float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), channels=16, kernel_size=(3, 3)))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def test_build_takes_the_scoped_target() -> None:
    with Target("cuda"), tvm.transform.PassContext(opt_level=3):
        lib = relay.build(conv_relu(), target=None)
    assert lib.target == "cuda"


def test_vector_target_blocks_layouts_and_every_kernel_still_computes() -> None:
    mod = conv_relu()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=Target("llvm -mcpu=core-avx2"))
    text = lib.ir_mod.astext(show_meta_data=False)
    assert 'dst_layout="NCHW8c"' in text and "nn.contrib_conv2d_NCHWc" in text
    results = check_numerics(lib, snapshots=True)
    transforms = [k for k in results if k.startswith("fused_layout_transform")]
    assert len(transforms) == 2 and all(results[k] == "ok" for k in transforms)
    from engine.contrib import graph_executor

    data = np.random.default_rng(1).random((1, 16, 8, 8), dtype="float32")
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    module.set_input("x", data)
    module.run()
    expected = relay.create_executor("graph", mod=mod).evaluate()(data).numpy()
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_target_kind_is_parsed_in_one_place() -> None:
    from engine.target import keys_of, kind_of, target_kind

    cases = {None: "llvm", "": "llvm", "llvm -mcpu=skylake": "llvm", "cpu": "llvm",
             "nvidia/geforce-rtx-3070": "cuda", "gpu": "cuda", "metal": "metal"}
    for given, kind in cases.items():
        assert kind_of(given) == kind
    assert kind_of({"kind": "cuda", "arch": "sm_80"}) == "cuda"
    assert kind_of(Target("rocm")) == "rocm" and keys_of("rocm") == ("rocm", "gpu")
    assert keys_of("no-such-kind") == ()
    # the strategies' two schedule families, chosen by the target's keys
    assert [target_kind(t) for t in ("llvm", "c", "cuda", "nvptx", "vulkan", "odd",
                                           Target("opencl"), {"kind": "cuda"})] == \
        ["llvm", "llvm", "cuda", "cuda", "cuda", "llvm", "cuda", "cuda"]
