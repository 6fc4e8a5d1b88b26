"""The Relay text parser: reads back everything the printer writes.

    mod = parse(text, source_name="model.relay")   # an IRModule
    expr = parse_expr("%0 = nn.relu(%x); add(%0, 1f)")

Modules: `lexer` (tokens and span comments), `reader` (the recursive-descent
parser and the entry points re-exported here).
"""

from engine.relay.parser.reader import fromtext, parse, parse_expr, parse_type

__all__ = ["fromtext", "parse", "parse_expr", "parse_type"]
