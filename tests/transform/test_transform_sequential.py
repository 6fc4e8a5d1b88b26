"""Sequential: opt_level gating, disabled and required passes, dependencies, identity."""

from __future__ import annotations

import pytest
from transform_testlib import logging_pass, make_module, wrap_body

from engine.ir import IRModule, PassError
from engine.transform import (
    ModuleMutatedError,
    PassContext,
    Sequential,
    module_pass,
    register_pass,
    registry,
)


def _ran(log: list[str]) -> list[str]:
    return [e.removeprefix("pass ") for e in log if e.startswith("pass ")]


def test_opt_level_gating() -> None:
    log: list[str] = []
    seq = Sequential([logging_pass(f"L{n}", log, opt_level=n) for n in range(4)])
    with PassContext(opt_level=2):
        seq(make_module())
    assert _ran(log) == ["L0", "L1", "L2"]


def test_disabled_pass_never_runs_even_at_low_level() -> None:
    log: list[str] = []
    seq = Sequential([logging_pass("A", log), logging_pass("B", log)])
    with PassContext(opt_level=3, disabled_pass=["A"]):
        seq(make_module())
    assert _ran(log) == ["B"]


def test_required_pass_runs_above_opt_level_but_disabled_wins() -> None:
    log: list[str] = []
    seq = Sequential([logging_pass("Hi", log, opt_level=4), logging_pass("Lo", log)])
    with PassContext(opt_level=0, required_pass=["Hi"]):
        seq(make_module())
    assert _ran(log) == ["Hi", "Lo"]
    log.clear()
    with PassContext(opt_level=4, required_pass=["Hi"], disabled_pass=["Hi"]):
        seq(make_module())
    assert _ran(log) == ["Lo"]


def test_nested_sequential_is_gated_by_its_own_opt_level() -> None:
    log: list[str] = []
    inner = Sequential([logging_pass("In", log)], opt_level=3, name="inner")
    outer = Sequential([inner, logging_pass("Out", log)], opt_level=3)
    with PassContext(opt_level=2):
        outer(make_module())  # the top-level Sequential runs whatever its own level
    assert _ran(log) == ["Out"]


def test_required_names_resolve_through_registry_and_run_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    registry.list_passes()  # Relay's passes (registered by `import engine`) stay registered
    monkeypatch.setattr(registry, "_FACTORIES", dict(registry._FACTORIES))
    log: list[str] = []
    register_pass("TestDepA", lambda: logging_pass("TestDepA", log, opt_level=3),
                  override=True)
    main = logging_pass("Main", log, required=["TestDepA"])
    with PassContext(opt_level=0):
        Sequential([main])(make_module())  # required runs even above opt_level
    assert _ran(log) == ["TestDepA", "Main"]


def test_required_names_are_not_resolved_for_a_skipped_pass() -> None:
    log: list[str] = []
    main = logging_pass("Main2", log, opt_level=3, required=["NoSuchPassAnywhere"])
    with PassContext(opt_level=1):
        Sequential([main])(make_module())
    assert log == []


def test_unknown_required_name_fails_with_the_name() -> None:
    main = logging_pass("Main3", [], required=["NoSuchPassAnywhere"])
    with pytest.raises(PassError, match="NoSuchPassAnywhere"):
        Sequential([main], name="pipe")(make_module())


def test_unchanged_module_is_returned_as_is() -> None:
    mod = make_module()
    seq = Sequential([logging_pass("A", []), logging_pass("B", [])])
    assert seq(mod) is mod


def test_changed_module_is_new_and_input_untouched() -> None:
    mod = make_module()
    main_before = mod["main"]
    out = Sequential([logging_pass("Change", [], change=True), logging_pass("Keep", [])])(mod)
    assert out is not mod and out["main"] is not main_before
    assert mod["main"] is main_before and len(mod) == 1


def test_module_pass_mutating_its_argument_never_touches_the_input() -> None:
    @module_pass(opt_level=0)
    def in_place(mod: IRModule, ctx: PassContext) -> IRModule:
        mod["main"] = wrap_body(mod)["main"]
        return mod

    mod = make_module()
    main = mod["main"]
    out = in_place(mod)
    assert mod["main"] is main and out["main"] is not main


def test_pass_returning_a_non_module_is_a_pass_error() -> None:
    bad = module_pass(lambda mod, ctx: None, name="ReturnsNone")
    with pytest.raises(PassError, match="ReturnsNone") as err:
        bad(make_module())
    assert isinstance(err.value.__cause__, TypeError)
    with pytest.raises(TypeError, match="expects an IRModule"):
        bad("not a module")  # type: ignore[arg-type]


def test_immutable_module_check_catches_in_place_changes() -> None:
    from engine.transform import Pass, PassInfo

    class Sneaky(Pass):
        def apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
            mod["main"] = wrap_body(mod)["main"]
            return mod

    with PassContext(config={"testing.immutable_module": True}), \
            pytest.raises(PassError) as err:
        Sneaky(PassInfo(0, "Sneaky"))(make_module())
    assert isinstance(err.value.__cause__, ModuleMutatedError)
    Sneaky(PassInfo(0, "Sneaky"))(make_module())  # unchecked by default
