"""Comparing a module with what the parser read back from its text."""

from __future__ import annotations

from typing import Any

from engine.ir import IRModule, assert_structural_equal
from engine.ir.traversal import post_order


def assert_parsed_equal(original: Any, parsed: Any) -> None:
    """The same structure, and every span the original knows kept; an expression without
    one was given its place in the text by the parser (as TVM's parser does)."""
    assert_structural_equal(original, parsed, map_free_vars=True)
    for old, new in zip(_all_nodes(original), _all_nodes(parsed), strict=True):
        if old.span:
            assert new.span == old.span, f"{new!r}: {new.span} != {old.span}"


def _all_nodes(node: Any) -> list[Any]:
    roots = [f for _, f in sorted(node.items(), key=lambda kv: kv[0].name_hint)] \
        if isinstance(node, IRModule) else [node]
    return [n for root in roots for n in post_order(root)]
