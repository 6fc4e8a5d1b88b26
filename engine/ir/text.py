"""Text hooks: the IR core prints through the printer that registered itself.

The IR knows no text format. A printer (the Relay one, `engine.relay.printer`)
calls `register_printer` when it is imported; `Expr.astext`, `IRModule.astext`
and `str()` of nodes, modules and types go through the registered functions.
Importing `engine` or `engine.relay` registers the Relay printer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

NodeText = Callable[[object, bool], str]
"""`(expr or module, show_meta_data) -> text`."""

TypeText = Callable[[object], str]
"""`(type) -> text`."""


@dataclass(frozen=True, slots=True)
class _Printer:
    node_text: NodeText
    type_text: TypeText


_registered: list[_Printer] = []


class NoPrinterError(RuntimeError):
    """Text was asked of the IR before any printer registered itself."""


def register_printer(node_text: NodeText, type_text: TypeText) -> None:
    """Make `node_text` / `type_text` the IR's printer (the last registration wins)."""
    _registered[:] = [_Printer(node_text, type_text)]


def _printer() -> _Printer:
    if not _registered:
        raise NoPrinterError("no IR printer is registered: import engine.relay (it registers "
                             "the Relay text printer) before printing IR")
    return _registered[0]


def node_text(node: object, show_meta_data: bool) -> str:
    """The registered printer's text of an expression or module."""
    return _printer().node_text(node, show_meta_data)


def type_text(ty: object) -> str:
    """The registered printer's text of a type."""
    return _printer().type_text(ty)
