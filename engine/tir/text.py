"""Text hooks of TIR: nodes print through the printer that registered itself.

`engine.tir.printer` registers its functions when imported (importing `engine.tir`
imports it), so expressions, statements and functions stay free of printer imports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class _Printer:
    expr_text: Callable[[Any], str]
    stmt_text: Callable[[Any], str]
    func_text: Callable[[Any], str]
    func_lines: Callable[[Any], list[Any]]


_registered: list[_Printer] = []


def register_printer(expr_text: Callable[[Any], str], stmt_text: Callable[[Any], str],
                     func_text: Callable[[Any], str],
                     func_lines: Callable[[Any], list[Any]]) -> None:
    """Make these the TIR printer's functions (the last registration wins)."""
    _registered[:] = [_Printer(expr_text, stmt_text, func_text, func_lines)]


def printer() -> _Printer:
    if not _registered:
        raise RuntimeError("no TIR printer is registered: import engine.tir (it registers "
                           "engine.tir.printer) before printing TIR")
    return _registered[0]
