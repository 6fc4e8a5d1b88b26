"""Optimization remarks: what a pass did, did not do, and why (LLVM's `-Rpass` family).

A pass says, at the place it decides, one call:

    remark(APPLIED, "fold-scale-into-conv", "scale folded into the conv2d weight", node=conv)
    remark(MISSED, "opaque", "nn.dropout is opaque: it ends its fusion group", node=call)

The remark goes to the running pass's frame on the current PassContext (the same place
`add_stat` counts go), so two threads compiling at once never see each other's remarks,
and an instrument's `run_after_pass` reads them with `frame_remarks()`. Outside a pass the
call does nothing. A remark keeps the node's id (the explorer finds its line through the
printer's source map) and the layer names of its span, so it still names its layer when
the node itself is gone from the next snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.ir.expr import Call, Expr
from engine.ir.op import Op
from engine.transform.context import PassContext

APPLIED, MISSED, ANALYSIS = "applied", "missed", "analysis"
KINDS = (APPLIED, MISSED, ANALYSIS)


@dataclass(frozen=True, slots=True)
class Remark:
    """One remark: the pass, its kind, the rule that decided, where, and why."""

    pass_name: str
    kind: str
    rule: str
    message: str
    node_id: int = 0
    op: str = ""
    layers: tuple[str, ...] = ()
    args: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.pass_name, "kind": self.kind, "rule": self.rule,
                "message": self.message, "node_id": self.node_id, "op": self.op,
                "layers": list(self.layers), "args": dict(self.args)}

    def __str__(self) -> str:
        where = f" at #{self.node_id}" if self.node_id else ""
        layer = f" ({', '.join(self.layers)})" if self.layers else ""
        return f"{self.pass_name}: {self.kind} [{self.rule}]{where}{layer}: {self.message}"


def op_name(node: Expr | None) -> str:
    """The operator a call applies (`nn.conv2d`), else the node's kind."""
    if node is None:
        return ""
    if isinstance(node, Call):
        return node.op.name if isinstance(node.op, Op) else "call"
    return type(node).__name__


def remark(kind: str, rule: str, message: str, node: Expr | None = None,
           **args: Any) -> None:
    """Record a remark of the running pass (no-op outside a pass). `args` must be plain
    JSON values (numbers, strings, lists of them)."""
    if kind not in KINDS:
        raise ValueError(f"remark kind must be one of {KINDS}, not {kind!r}")
    frame = PassContext.current().current_frame
    if frame is None:
        return
    layers = node.span.source_names() if node is not None else ()
    frame.remarks.append(Remark(frame.name, kind, rule, message,
                                node.node_id if node is not None else 0, op_name(node),
                                tuple(layers), args))


def frame_remarks(ctx: PassContext | None = None) -> list[Remark]:
    """The remarks of the innermost running pass of `ctx` (default: the current context)."""
    frame = (ctx or PassContext.current()).current_frame
    return [] if frame is None else list(frame.remarks)


__all__ = ["ANALYSIS", "APPLIED", "KINDS", "MISSED", "Remark", "frame_remarks", "op_name",
           "remark"]
