"""The exact hook order and exception semantics of instruments (TVM's pass_infra doc)."""

from __future__ import annotations

import pytest
from transform_testlib import Recorder, logging_pass, make_module

from engine.instrument import PassInstrument, pass_instrument
from engine.ir import PassError
from engine.transform import PassContext, Sequential


def test_full_event_sequence_two_instruments_two_passes() -> None:
    log: list[str] = []
    p1, p2 = logging_pass("P1", log), logging_pass("P2", log)
    mod = make_module()
    with PassContext(instruments=[Recorder("A", log), Recorder("B", log)]):
        mod = p1(mod)
        mod = p2(mod)
    assert log == [
        "A enter_pass_ctx", "B enter_pass_ctx",
        "A should_run P1", "B should_run P1",
        "A run_before_pass P1", "B run_before_pass P1",
        "pass P1",
        "A run_after_pass P1", "B run_after_pass P1",
        "A should_run P2", "B should_run P2",
        "A run_before_pass P2", "B run_before_pass P2",
        "pass P2",
        "A run_after_pass P2", "B run_after_pass P2",
        "A exit_pass_ctx", "B exit_pass_ctx",
    ]


def test_enter_raises_exits_earlier_ones_and_never_enters_later_ones() -> None:
    log: list[str] = []
    ctx = PassContext(instruments=[Recorder("A", log), Recorder("B", log, "enter_pass_ctx"),
                                   Recorder("C", log)])
    with pytest.raises(RuntimeError, match="B broke in enter_pass_ctx"), ctx:
        log.append("body")
    assert log == ["A enter_pass_ctx", "B enter_pass_ctx", "A exit_pass_ctx"]
    assert ctx.instruments == ()
    assert PassContext.current() is not ctx
    assert not PassContext.current().instruments


def test_exit_raises_stops_later_exits_and_clears() -> None:
    log: list[str] = []
    ctx = PassContext(instruments=[Recorder("A", log), Recorder("B", log, "exit_pass_ctx"),
                                   Recorder("C", log)])
    with pytest.raises(RuntimeError, match="B broke in exit_pass_ctx"), ctx:
        pass
    assert log == ["A enter_pass_ctx", "B enter_pass_ctx", "C enter_pass_ctx",
                   "A exit_pass_ctx", "B exit_pass_ctx"]
    assert ctx.instruments == ()
    assert PassContext.current() is not ctx


def _run_one_pass(log: list[str], raise_in: str) -> None:
    with PassContext(instruments=[Recorder("A", log, raise_in), Recorder("B", log)]):
        logging_pass("P", log)(make_module())


def test_should_run_raises() -> None:
    log: list[str] = []
    with pytest.raises(RuntimeError, match="A broke in should_run"):
        _run_one_pass(log, "should_run")
    assert log == ["A enter_pass_ctx", "B enter_pass_ctx", "A should_run P",
                   "A exit_pass_ctx", "B exit_pass_ctx"]


def test_run_before_pass_raises() -> None:
    log: list[str] = []
    with pytest.raises(RuntimeError, match="A broke in run_before_pass"):
        _run_one_pass(log, "run_before_pass")
    assert log == ["A enter_pass_ctx", "B enter_pass_ctx", "A should_run P", "B should_run P",
                   "A run_before_pass P", "A exit_pass_ctx", "B exit_pass_ctx"]


def test_run_after_pass_raises() -> None:
    log: list[str] = []
    with pytest.raises(RuntimeError, match="A broke in run_after_pass"):
        _run_one_pass(log, "run_after_pass")
    assert log == ["A enter_pass_ctx", "B enter_pass_ctx", "A should_run P", "B should_run P",
                   "A run_before_pass P", "B run_before_pass P", "pass P",
                   "A run_after_pass P", "A exit_pass_ctx", "B exit_pass_ctx"]


def test_pass_raises_runs_failed_hooks_and_wraps_in_pass_error() -> None:
    log: list[str] = []
    mod = make_module()
    with pytest.raises(PassError) as err, \
            PassContext(instruments=[Recorder("A", log), Recorder("B", log)]):
        logging_pass("Ok", log)(mod)
        logging_pass("Bad", log, fail=True)(mod)
    assert log == ["A enter_pass_ctx", "B enter_pass_ctx",
                   "A should_run Ok", "B should_run Ok", "A run_before_pass Ok",
                   "B run_before_pass Ok", "pass Ok", "A run_after_pass Ok", "B run_after_pass Ok",
                   "A should_run Bad", "B should_run Bad", "A run_before_pass Bad",
                   "B run_before_pass Bad", "pass Bad",
                   "A run_after_pass_failed Bad", "B run_after_pass_failed Bad",
                   "A exit_pass_ctx", "B exit_pass_ctx"]
    assert err.value.pass_name == "Bad"
    assert err.value.passes_before == ["Ok"]
    assert not PassContext.current().instruments
    assert isinstance(err.value.__cause__, ValueError)
    assert "'Bad'" in str(err.value) and "Ok" in str(err.value) and "exploded" in str(err.value)


def test_failed_hook_gets_the_input_module_and_the_original_error() -> None:
    seen: list[tuple] = []

    class Keep(PassInstrument):
        def run_after_pass_failed(self, mod, info, exc):
            seen.append((mod, info.name, exc))

    mod = make_module()
    with pytest.raises(PassError), PassContext(instruments=[Keep()]):
        logging_pass("Bad", [], fail=True)(mod)
    assert seen[0][0] is mod and seen[0][1] == "Bad"
    assert isinstance(seen[0][2], ValueError)


def test_should_run_false_skips_pass_and_returns_input() -> None:
    log: list[str] = []
    mod = make_module()
    with PassContext(instruments=[Recorder("A", log, run=False), Recorder("B", log)]):
        out = logging_pass("P", log, change=True)(mod)
    assert out is mod
    assert log == ["A enter_pass_ctx", "B enter_pass_ctx", "A should_run P", "B should_run P",
                   "A exit_pass_ctx", "B exit_pass_ctx"]


def test_should_run_not_asked_for_required_passes() -> None:
    log: list[str] = []
    with PassContext(required_pass=["P"],
                     instruments=[Recorder("A", log, run=False)]):
        logging_pass("P", log)(make_module())
    assert log == ["A enter_pass_ctx", "A run_before_pass P", "pass P", "A run_after_pass P",
                   "A exit_pass_ctx"]


def test_override_instruments_exits_old_then_enters_new() -> None:
    log: list[str] = []
    ctx = PassContext(instruments=[Recorder("A", log)])
    with ctx:
        ctx.override_instruments([Recorder("B", log), Recorder("C", log)])
        logging_pass("P", log)(make_module())
    assert log == ["A enter_pass_ctx", "A exit_pass_ctx", "B enter_pass_ctx",
                   "C enter_pass_ctx", "B should_run P", "C should_run P",
                   "B run_before_pass P", "C run_before_pass P", "pass P",
                   "B run_after_pass P", "C run_after_pass P",
                   "B exit_pass_ctx", "C exit_pass_ctx"]


def test_override_on_default_context_and_broken_enter_clears() -> None:
    log: list[str] = []
    ctx = PassContext.current()
    try:
        ctx.override_instruments([Recorder("A", log)])
        logging_pass("P", log)(make_module())
        with pytest.raises(RuntimeError):
            ctx.override_instruments([Recorder("B", log, "enter_pass_ctx")])
        assert not ctx.instruments
    finally:
        ctx.override_instruments(None)
    assert log == ["A enter_pass_ctx", "A should_run P", "A run_before_pass P", "pass P",
                   "A run_after_pass P", "A exit_pass_ctx", "B enter_pass_ctx"]


def test_hook_error_inside_sequential_is_not_wrapped() -> None:
    log: list[str] = []
    seq = Sequential([logging_pass("P", log)], name="outer")
    with pytest.raises(RuntimeError, match="A broke"), \
            PassContext(instruments=[Recorder("A", log, "run_after_pass")]):
        seq(make_module())
    # the inner pass's hook raised; the Sequential still gets its failed hook
    assert "A run_after_pass_failed outer" in log
    assert "A run_after_pass outer" not in log


def test_pass_error_of_nested_pass_is_not_rewrapped() -> None:
    log: list[str] = []
    inner = Sequential([logging_pass("A1", log), logging_pass("Bad", log, fail=True)],
                       name="inner")
    outer = Sequential([logging_pass("Z", log), inner], name="outer")
    with pytest.raises(PassError) as err, PassContext(instruments=[Recorder("R", log)]):
        outer(make_module())
    assert err.value.pass_name == "Bad"
    assert err.value.passes_before == ["Z", "A1"]
    assert [e for e in log if "failed" in e] == ["R run_after_pass_failed Bad",
                                                 "R run_after_pass_failed inner",
                                                 "R run_after_pass_failed outer"]


def test_keyboard_interrupt_is_not_wrapped() -> None:
    def body(mod, ctx):
        raise KeyboardInterrupt

    from engine.transform import module_pass

    log: list[str] = []
    with pytest.raises(KeyboardInterrupt), PassContext(instruments=[Recorder("A", log)]):
        module_pass(body, name="Stop")(make_module())
    assert "A run_after_pass_failed Stop" in log


def test_pass_instrument_decorator_on_plain_class(capsys: pytest.CaptureFixture[str]) -> None:
    @pass_instrument
    class MyTest:
        def enter_pass_ctx(self) -> None:
            print("enter ctx")

        def exit_pass_ctx(self) -> None:
            print("exit ctx")

        def run_before_pass(self, mod, info) -> None:
            print("run before " + info.name)

        def run_after_pass(self, mod, info) -> None:
            print("run after " + info.name)

    inst = MyTest()
    assert isinstance(inst, PassInstrument) and inst.name == "MyTest"
    assert inst.should_run(None, None) is True  # inherited default
    with PassContext(instruments=[inst]):
        logging_pass("InferType", [])(make_module())
    assert capsys.readouterr().out == ("enter ctx\nrun before InferType\n"
                                       "run after InferType\nexit ctx\n")


def test_pass_instrument_decorator_forms() -> None:
    @pass_instrument()
    class WithArgs:
        def __init__(self, n: int) -> None:
            self.n = n

    assert WithArgs(3).n == 3 and isinstance(WithArgs(3), PassInstrument)
    assert WithArgs.__name__ == "WithArgs"
    with pytest.raises(TypeError):
        pass_instrument(lambda: None)
    with pytest.raises(TypeError, match="not a PassInstrument"):
        PassContext(instruments=[object()])


def test_should_run_every_instrument_is_asked() -> None:
    log: list[str] = []
    with PassContext(instruments=[Recorder("A", log, run=False), Recorder("B", log, run=False)]):
        logging_pass("P", log)(make_module())
    assert "A should_run P" in log and "B should_run P" in log and "pass P" not in log
