"""Instruments that print or dump the IR around passes.

`PrintBeforeAll` / `PrintAfterAll` print to stdout as TVM's do;
`PrintAfterChange` (ours) prints only after a pass that changed the module;
`DumpIR(dir)` writes the module after every pass to `dir/NNN_PassName.txt`.
Each takes an optional `printer(mod) -> str` (default: the Relay text printer).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from engine.ir.module import IRModule
from engine.transform.hooks import PassInstrument
from engine.transform.module_diff import ModuleState, module_state, same_state

Printer = Callable[[IRModule], str]


def _default_text(mod: IRModule) -> str:
    return str(mod)


class PrintBeforeAll(PassInstrument):
    """Print the module before every pass."""

    def __init__(self, printer: Printer | None = None, file: TextIO | None = None) -> None:
        self.printer = printer or _default_text
        self.file = file

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        out = self.file or sys.stdout
        print(f"Before Running Pass: {info}", file=out)
        print(self.printer(mod), file=out)


class PrintAfterAll(PassInstrument):
    """Print the module after every pass."""

    def __init__(self, printer: Printer | None = None, file: TextIO | None = None) -> None:
        self.printer = printer or _default_text
        self.file = file

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        out = self.file or sys.stdout
        print(f"After Running Pass: {info}", file=out)
        print(self.printer(mod), file=out)


class PrintAfterChange(PassInstrument):
    """Print the module after a pass only if the pass changed it (other functions, or
    types newly recorded on the same ones)."""

    def __init__(self, printer: Printer | None = None, file: TextIO | None = None) -> None:
        self.printer = printer or _default_text
        self.file = file
        self._before: list[ModuleState] = []

    def enter_pass_ctx(self) -> None:
        self._before = []

    def run_before_pass(self, mod: IRModule, info: Any) -> None:
        self._before.append(module_state(mod))

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        before = self._before.pop() if self._before else None
        if before is not None and same_state(before, module_state(mod)):
            return
        out = self.file or sys.stdout
        print(f"After Running Pass (changed): {info}", file=out)
        print(self.printer(mod), file=out)

    def run_after_pass_failed(self, mod: IRModule, info: Any, exc: BaseException) -> None:
        if self._before:
            self._before.pop()


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class DumpIR(PassInstrument):
    """Write the module after each pass to `dump_dir/NNN_PassName.txt` (NNN from 000)."""

    def __init__(self, dump_dir: str | Path = "./module_dump",
                 printer: Printer | None = None) -> None:
        self.dump_dir = Path(dump_dir)
        self.printer = printer or (lambda mod: mod.astext())
        self.counter = 0

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        name = _UNSAFE.sub("_", str(info.name)) or "pass"
        path = self.dump_dir / f"{self.counter:03d}_{name}.txt"
        self.counter += 1
        path.write_text(self.printer(mod), encoding="utf-8")

    @property
    def files(self) -> list[Path]:
        """The dumps written so far, in order."""
        return sorted(self.dump_dir.glob("[0-9][0-9][0-9]*_*.txt"))
