"""FuseOps remarks: why a producer was not fused into its consumer, and what was fused.

The partitioner notes, at each place it refuses a merge, the rule and the reason
(`FusionNotes.note`, one call per decision; a later phase's note replaces an earlier
one). Once the groups are final, `emit` turns the notes of producers that ended in a
group apart from all their consumers into MISSED remarks, and every group of more than
one op into one APPLIED remark at its root.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from engine.ir.expr import Call, Expr
from engine.relay.op.op import OpPattern
from engine.relay.transform.fuse_ops_graph import GraphNode, IndexedForwardGraph
from engine.transform.remarks import APPLIED, MISSED, op_name, remark


class Group(Protocol):
    """What the notes read of a fusion group (fuse_partition.Group)."""

    root_ref: Expr
    pattern: int
    num_nodes: int

    def find_root(self) -> Group: ...

PATTERN_NAMES = {OpPattern.ELEMWISE: "elemwise", OpPattern.BROADCAST: "broadcast",
                 OpPattern.INJECTIVE: "injective", OpPattern.COMM_REDUCE: "comm_reduce",
                 OpPattern.OUT_ELEMWISE_FUSABLE: "out_elemwise_fusable",
                 OpPattern.TUPLE: "tuple", OpPattern.OPAQUE: "opaque"}


def pattern_name(pattern: int) -> str:
    return PATTERN_NAMES.get(pattern, str(pattern))


class FusionNotes:
    """The last refusal noted for each graph node (by post-DFS index)."""

    def __init__(self) -> None:
        self.reasons: dict[int, tuple[str, str, dict[str, Any]]] = {}

    def note(self, gnode: GraphNode, rule: str, message: str, **args: Any) -> None:
        self.reasons[gnode.index] = (rule, message, args)

    def emit(self, graph: IndexedForwardGraph, groups: Sequence[Group]) -> None:
        """MISSED remarks for unfused producers, APPLIED ones for groups of several ops."""
        for gnode in graph.post_dfs_order:
            calls = [out for out, _ in gnode.outputs if isinstance(out.ref, Call)]
            if not isinstance(gnode.ref, Call) or not calls:
                continue  # a tuple or the function result is not something to fuse into
            root = groups[gnode.index].find_root()
            if any(groups[out.index].find_root() is root for out, _ in gnode.outputs):
                continue
            rule, message, args = self.reasons.get(gnode.index, (
                "consumer-taken", "its consumer was fused into another group first", {}))
            consumers = sorted({op_name(out.ref) for out in calls})
            remark(MISSED, rule, f"{op_name(gnode.ref)} not fused: {message}", gnode.ref,
                   consumers=consumers, **args)
        for group in {id(g.find_root()): g.find_root() for g in groups}.values():
            if group.num_nodes > 1:
                remark(APPLIED, "fused", f"{group.num_nodes} graph nodes fused into one "
                       f"{pattern_name(group.pattern)} function", group.root_ref,
                       nodes=group.num_nodes, pattern=pattern_name(group.pattern))


def no_dominator_reason(gnode: GraphNode) -> tuple[str, str]:
    """Why a node has no immediate post-dominator to fuse into."""
    if gnode.extern_ref:
        return "external-use", ("its value is used outside fusion's reach (the function "
                                "result, a let, an if, or a non-tensor use)")
    if len(gnode.outputs) > 1:
        return "multiple-consumers", (f"its {len(gnode.outputs)} consumers have no common "
                                      "post-dominator")
    return "no-consumer", "nothing consumes it"


__all__ = ["FusionNotes", "no_dominator_reason", "pattern_name"]
