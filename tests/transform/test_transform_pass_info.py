"""PassInfo values and the string forms of passes."""

from __future__ import annotations

import pytest

from engine.transform import ModulePass, PassInfo, Sequential


def test_pass_info_fields_and_equality() -> None:
    info = PassInfo(2, "FoldConstant", ["InferType"])
    assert (info.opt_level, info.name, info.required) == (2, "FoldConstant", ("InferType",))
    assert info == PassInfo(2, "FoldConstant", ("InferType",))
    assert info != PassInfo(3, "FoldConstant", ("InferType",))
    assert "FoldConstant" in str(info) and "opt_level: 2" in str(info)


@pytest.mark.parametrize("args", [
    ("2", "X", None), (2, "", None), (2, 3, None), (2, "X", "InferType"), (2, "X", [1]),
    (True, "X", None),
])
def test_pass_info_rejects_bad_fields(args: tuple) -> None:
    with pytest.raises(TypeError):
        PassInfo(*args)


def test_str_of_pass_shows_name_and_level() -> None:
    p = ModulePass(lambda mod, ctx: mod, PassInfo(3, "MyPass"))
    assert str(p) == "Run Module pass: MyPass at the optimization level 3"
    seq = Sequential([p], opt_level=1, name="pipe")
    assert str(seq).startswith("Run Sequential pass: pipe at the optimization level 1")
    assert "[MyPass]" in str(seq)


def test_sequential_defaults_and_validation() -> None:
    seq = Sequential()
    assert (seq.info.name, seq.info.opt_level, seq.passes) == ("sequential", 0, ())
    with pytest.raises(TypeError):
        Sequential(ModulePass(lambda m, c: m, PassInfo(0, "A")))  # not a list
    with pytest.raises(TypeError):
        Sequential([lambda m: m])
