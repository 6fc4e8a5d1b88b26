"""Built-ins: PassTimingInstrument, PrintBeforeAll/AfterAll/AfterChange, DumpIR, PrintIR,
and the trace callback."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from transform_testlib import logging_pass, make_module

from engine.instrument import (
    DumpIR,
    PassTimingInstrument,
    PrintAfterAll,
    PrintAfterChange,
    PrintBeforeAll,
)
from engine.ir import FuncType, IRModule, PassError, TensorType
from engine.transform import PassContext, PrintIR, Sequential, module_pass

LINE = re.compile(r"^(\t*)(\S+): (\d+)us \[(\d+)us\] \((\d+\.\d\d)%; (\d+\.\d\d)%\)( FAILED)?$")


@module_pass(opt_level=0, name="Sleepy")
def sleepy(mod: IRModule, ctx: PassContext) -> IRModule:
    time.sleep(0.002)
    return mod


def test_timing_tree_nests_sequential_children() -> None:
    timing = PassTimingInstrument()
    inner = Sequential([sleepy, logging_pass("Quick", [])], name="inner")
    with PassContext(instruments=[timing]):
        Sequential([inner, sleepy], name="outer")(make_module())
        text = timing.render()
        roots = timing.profiles
    lines = text.splitlines()
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), text
    assert [(len(m.group(1)), m.group(2)) for m in parsed] == [
        (0, "outer"), (1, "inner"), (2, "Sleepy"), (2, "Quick"), (1, "Sleepy")]
    outer, inner_p = roots[0], roots[0].children[0]
    assert outer.duration_us >= inner_p.duration_us + outer.children[1].duration_us
    assert inner_p.children[0].duration_us >= 2000
    assert parsed[0].group(5) == "100.00"  # the only root takes all the time
    assert abs(outer.self_us - (outer.duration_us - sum(
        c.duration_us for c in outer.children))) < 1e-6
    assert outer.as_dict()["children"][0]["name"] == "inner"


def test_timing_is_cleared_on_exit_and_after_override_none() -> None:
    timing = PassTimingInstrument()
    ctx = PassContext.current()
    try:
        ctx.override_instruments([timing])
        mod = sleepy(make_module())
        logging_pass("Other", [])(mod)
        text = timing.render()
        assert "Sleepy" in text and "Other" in text
        ctx.override_instruments(None)
        sleepy(make_module())
        assert timing.render() == ""
    finally:
        ctx.override_instruments(None)
    with PassContext(instruments=[timing]):
        sleepy(make_module())
    assert timing.render() == ""


def test_timing_marks_failed_passes_and_keeps_the_tree_balanced() -> None:
    timing = PassTimingInstrument()
    with pytest.raises(PassError), PassContext(instruments=[timing]):
        try:
            Sequential([logging_pass("Bad", [], fail=True)], name="pipe")(make_module())
        finally:
            text = timing.render()
    assert text.splitlines()[0].endswith("FAILED") and "\tBad" in text


def test_print_before_and_after_all(capsys: pytest.CaptureFixture[str]) -> None:
    with PassContext(instruments=[PrintBeforeAll(), PrintAfterAll()]):
        logging_pass("Noisy", [], change=True)(make_module())
    out = capsys.readouterr().out
    before, after = out.index("Before Running Pass: "), out.index("After Running Pass: ")
    assert before < after
    assert "pass name: Noisy" in out[before:after] and "tinfra.relu(%0)" in out[before:after]
    assert "tinfra.neg(" in out[after:]  # the module after the pass
    assert "tinfra.neg(" not in out[before:after]


def test_print_after_change_prints_only_changed(capsys: pytest.CaptureFixture[str]) -> None:
    with PassContext(instruments=[PrintAfterChange(printer=lambda m: "<module>")]):
        mod = logging_pass("Same", [])(make_module())
        logging_pass("Changes", [], change=True)(mod)
    out = capsys.readouterr().out
    assert "Changes" in out and "Same" not in out
    assert out.count("<module>") == 1


def test_print_after_change_sees_types_recorded_in_place(
        capsys: pytest.CaptureFixture[str]) -> None:
    @module_pass(opt_level=0, name="TypeInPlace")
    def type_in_place(mod: IRModule, ctx: PassContext) -> IRModule:
        main = mod["main"]
        if not main.has_type:
            main.set_checked_type(FuncType([], TensorType((3, 4), "float32")))
        return mod

    mod = make_module()
    with PassContext(instruments=[PrintAfterChange(printer=lambda m: "<module>")]):
        assert type_in_place(mod) is mod
        type_in_place(mod)  # already typed: unchanged
    out = capsys.readouterr().out
    assert out.count("TypeInPlace") == 1


def test_print_after_change_nested_compares_each_pass_with_its_own_input() -> None:
    lines: list[str] = []

    class Sink:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    inst = PrintAfterChange(printer=lambda m: "", file=Sink())  # type: ignore[arg-type]
    seq = Sequential([logging_pass("Changes", [], change=True), logging_pass("Same", [])],
                     name="pipe")
    with PassContext(instruments=[inst]):
        seq(make_module())
    headers = [line for line in lines if line.startswith("After")]
    assert ["pass name: Changes" in h for h in headers] == [True, False]
    assert "pass name: pipe" in headers[1]


def test_dump_ir_writes_numbered_files(tmp_path: Path) -> None:
    dump = DumpIR(tmp_path / "dumps")
    seq = Sequential([logging_pass("First", []), logging_pass("Second", [], change=True)],
                     name="pipe")
    with PassContext(instruments=[dump]):
        seq(make_module())
    names = [p.name for p in dump.files]
    assert names == ["000_First.txt", "001_Second.txt", "002_pipe.txt"]
    second = (tmp_path / "dumps" / "001_Second.txt").read_text()
    assert second.startswith("#[version") and "tinfra.neg(" in second
    assert "tinfra.neg(" not in (tmp_path / "dumps" / "000_First.txt").read_text()


def test_dump_ir_with_injected_printer_and_unsafe_names(tmp_path: Path) -> None:
    dump = DumpIR(tmp_path, printer=lambda m: f"{len(m)} functions")
    with PassContext(instruments=[dump]):
        logging_pass("a/b c", [])(make_module())
    assert (tmp_path / "000_a_b_c.txt").read_text() == "1 functions"


def test_print_ir_writes_to_stderr_and_changes_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    mod = make_module()
    out = PrintIR("after import")(mod)
    captured = capsys.readouterr()
    assert out is mod
    assert captured.out == ""
    assert captured.err.startswith("PrintIR(after import):\n")
    assert "def @main(" in captured.err and "/* relu0 */" in captured.err
    p = PrintIR()
    assert (p.info.name, p.info.opt_level) == ("PrintIR", 0)


def test_trace_callback_sees_each_pass_before_and_after() -> None:
    events: list[tuple[str, bool, Any]] = []

    def trace(mod: IRModule, info: Any, is_before: bool) -> None:
        events.append((info.name, is_before, mod))

    mod = make_module()
    seq = Sequential([logging_pass("A", []), logging_pass("B", [], change=True)])
    with PassContext(trace=trace):
        out = seq(mod)
    assert [(n, b) for n, b, _ in events] == [("A", True), ("A", False), ("B", True),
                                              ("B", False)]
    assert events[0][2] is mod and events[3][2] is out


def test_trace_not_called_for_skipped_passes() -> None:
    events: list[str] = []
    seq = Sequential([logging_pass("High", [], opt_level=3), logging_pass("Low", [])])
    with PassContext(opt_level=1, trace=lambda m, i, b: events.append(i.name)):
        seq(make_module())
    assert events == ["Low", "Low"]
