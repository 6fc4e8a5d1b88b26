"""The Relay text printer: `astext`, `type_text` and `print_ir` (text + source map).

    r = print_ir(mod)
    r.text                # the Relay text
    r.source_map          # [SourceMapEntry(node_id, kind, start, end, spans, op, is_ref), ...]
    r.source_map_table()  # the same map as int columns (`printer.table.SourceMapTable`)

Modules: `document` (blocks, their cache, assembly, `PrintResult`), `expr` (one
function or expression in graph normal form), `writer` (lines with origins),
`format` (lexical pieces shared with the parser), `table` (the column source map).

Importing this package registers the printer with the IR core, so `str(expr)`,
`mod.astext()` and `str(type)` print Relay text.
"""

from engine.ir.expr import Expr
from engine.ir.module import IRModule
from engine.ir.text import register_printer
from engine.ir.type import Type
from engine.relay.printer.document import (
    PrintResult,
    SourceMapEntry,
    astext,
    forget_printed,
    metadata_text,
    print_ir,
)
from engine.relay.printer.format import register_type_text, type_text
from engine.relay.printer.table import SourceMapTable

__all__ = ["PrintResult", "SourceMapEntry", "SourceMapTable", "astext", "forget_printed",
           "metadata_text", "print_ir", "register_type_text", "type_text"]


def _node_text(node: object, show_meta_data: bool) -> str:
    if not isinstance(node, (Expr, IRModule)):
        raise TypeError(f"not a Relay expression or module: {node!r}")
    return astext(node, show_meta_data=show_meta_data)


def _type_text(ty: object) -> str:
    if not isinstance(ty, Type):
        raise TypeError(f"not a Relay type: {ty!r}")
    return type_text(ty)


register_printer(_node_text, _type_text)
