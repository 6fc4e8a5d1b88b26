"""Comparing a module with what the parser read back from its text; ops and calls for
hand-built programs."""

from __future__ import annotations

from typing import Any

from engine import relay
from engine.ir import IRModule, Op, assert_structural_equal, register_op
from engine.ir.op import list_ops
from engine.ir.traversal import post_order
from engine.relay.op.op import op_attrs


def register_ops(names: list[str]) -> None:
    """Register each op of `names` not registered yet (a bare op, no type relation)."""
    present = set(list_ops())
    for name in names:
        if name not in present:
            register_op(name)


def op_call(name: str, *args: Any, span: Any = None, **attrs: Any) -> relay.Call:
    """A call with the op's attrs type (omitted attributes hold their defaults)."""
    kw = {"span": span} if span is not None else {}
    return relay.Call(Op.get(name), list(args),
                      op_attrs(name, attrs, Op.get(name).info.attrs_type_key), **kw)


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
