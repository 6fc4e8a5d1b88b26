"""The fusion decision of FuseOps (TVM's `GraphPartitioner`): groups of ops by TOpPattern.

Every graph node starts as its own group; three phases then merge a node's
group into the group of its immediate post-dominator when every path between
them allows it:

0. out-elemwise-fusable ops (conv2d, dense) take the elementwise/broadcast
   ops after them; elemwise/broadcast ops join injective or reduction
   consumers;
1. injective ops (and tuples) join what follows when all paths are injective;
2. injective ops are fused into intermediate tuples already fused downstream.

A merge is refused when the group would exceed `max_depth` ops. Each refusal is
noted (fuse_remarks.py) and becomes a remark when the groups are final. All path
walks are iterative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.ir.expr import Expr
from engine.relay.op.op import (
    BROADCAST,
    COMM_REDUCE,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    OUT_ELEMWISE_FUSABLE,
    TUPLE,
)
from engine.relay.transform.fuse_ops_graph import (
    DomNode,
    GraphNode,
    IndexedForwardGraph,
    post_dominator_tree,
)
from engine.relay.transform.fuse_remarks import FusionNotes, no_dominator_reason, pattern_name
from engine.transform.remarks import op_name

PathCondition = Callable[[int, bool], bool]
"""`fcond(pattern of a group on the path, is_sink)`: may the path pass through it?"""


@dataclass(eq=False, slots=True)
class Group:
    """A union-find set of graph nodes that will become one fused function."""

    root_ref: Expr
    pattern: int
    anchor_ref: Expr | None = None
    parent: Group | None = None
    num_nodes: int = 1

    def find_root(self) -> Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node.parent is not None and node.parent is not root:  # path compression
            node.parent, node = root, node.parent
        return root


def _injective_only(kind: int, is_sink: bool) -> bool:
    return kind <= INJECTIVE


def _broadcast_only(kind: int, is_sink: bool) -> bool:
    return kind <= BROADCAST


def _into_anchor(kind: int, is_sink: bool) -> bool:
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= BROADCAST or kind in (COMM_REDUCE, INJECTIVE, OUT_ELEMWISE_FUSABLE)


class GraphPartitioner:
    """Partitions an IndexedForwardGraph into fusion groups."""

    def __init__(self, opt_level: int, max_depth: int) -> None:
        self.opt_level = opt_level
        self.max_depth = max_depth
        self.groups: list[Group] = []
        self.notes = FusionNotes()

    def partition(self, graph: IndexedForwardGraph) -> list[Group]:
        """One group per node (index-aligned); nodes fused together share a root."""
        self.groups = [Group(n.ref, n.pattern, n.ref if n.pattern == OUT_ELEMWISE_FUSABLE
                             else None) for n in graph.post_dfs_order]
        if self.opt_level == 0:
            return self.groups
        dom = post_dominator_tree(graph)
        for phase in range(3):
            self._run_fuse(graph, dom, phase)
        self.notes.emit(graph, self.groups)
        return self.groups

    # --- the phases ---------------------------------------------------------------------
    def _run_fuse(self, graph: IndexedForwardGraph, dom: list[DomNode], phase: int) -> None:
        for gnode, dnode, group in zip(graph.post_dfs_order, dom, self.groups):
            if group.pattern == OPAQUE:
                self.notes.note(gnode, "opaque", "an opaque op ends its fusion group")
            elif dnode.parent is None:
                self.notes.note(gnode, *no_dominator_reason(gnode))
            else:
                self._try_fuse(gnode, dnode, group, phase)

    def _try_fuse(self, gnode: GraphNode, dnode: DomNode, group: Group, phase: int) -> None:
        assert dnode.parent is not None
        sink = dnode.parent.gnode
        size = self._count_with_child(gnode, sink)
        if size > self.max_depth:
            self.notes.note(gnode, "depth-limit", f"the group would hold {size} ops, over "
                            f"relay.FuseOps.max_depth={self.max_depth}", size=size,
                            max_depth=self.max_depth)
            return
        if phase == 2:
            self._fuse_into_tuple(gnode, sink, group)
            return
        sink_group = self.groups[sink.index]
        if group.find_root() is sink_group.find_root():
            return
        if sink_group.pattern == TUPLE:
            self.notes.note(gnode, "multiple-consumers" if len(gnode.outputs) > 1 else "tuple",
                            "its uses meet only in a tuple, which ends fusion")
            return
        fcond = self._condition(group.pattern, dnode.pattern, phase)
        if fcond is None and dnode.pattern == OPAQUE:
            self.notes.note(gnode, "opaque", f"its path to {op_name(sink.ref)} passes "
                            "through an opaque op")
        elif fcond is None:
            self.notes.note(gnode, "pattern", f"its pattern {pattern_name(group.pattern)} does "
                            f"not fuse along {pattern_name(dnode.pattern)} paths to "
                            f"{op_name(sink.ref)}", producer=pattern_name(group.pattern),
                            path=pattern_name(dnode.pattern))
        elif not self._check_path(gnode, sink, fcond):
            self.notes.note(gnode, "path", f"a path to {op_name(sink.ref)} passes through "
                            "an op its pattern cannot fuse with")
        else:
            self._commit_fuse(gnode, sink)

    @staticmethod
    def _condition(pattern: int, dom_pattern: int, phase: int) -> PathCondition | None:
        """The path condition for fusing a group of `pattern` in `phase`, or None."""
        if pattern == OUT_ELEMWISE_FUSABLE:
            return _broadcast_only if phase == 0 and dom_pattern == ELEMWISE else None
        if pattern <= BROADCAST:
            fits = dom_pattern <= INJECTIVE or dom_pattern == COMM_REDUCE
            return _into_anchor if fits else None
        if pattern in (INJECTIVE, TUPLE):
            return _injective_only if phase == 1 else None
        return None  # comm-reduce: the reduction is the end of a group

    def _fuse_into_tuple(self, gnode: GraphNode, sink: GraphNode, group: Group) -> None:
        if group.pattern > INJECTIVE:
            return
        sink_group = self.groups[sink.index]
        root = sink_group.find_root()
        if root.pattern == TUPLE:
            return
        if sink_group.pattern == TUPLE and root.pattern <= INJECTIVE \
                and self._check_path(gnode, sink, _injective_only):
            self._commit_fuse(gnode, sink)

    # --- path walks (iterative) -------------------------------------------------------------
    @staticmethod
    def _between(src: GraphNode, sink: GraphNode) -> list[GraphNode]:
        """Nodes on the paths from `src` (excluded) to `sink` (included), each once."""
        seen: set[int] = set()
        order: list[GraphNode] = []
        stack = [out for out, _ in src.outputs]
        while stack:
            node = stack.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            order.append(node)
            if node is not sink:
                stack.extend(out for out, _ in node.outputs)
        return order

    def _check_path(self, src: GraphNode, sink: GraphNode, fcond: PathCondition) -> bool:
        return all(fcond(self.groups[n.index].find_root().pattern, n is sink)
                   for n in self._between(src, sink))

    def _commit_fuse(self, src: GraphNode, sink: GraphNode) -> None:
        target = self.groups[sink.index]
        self._merge(self.groups[src.index], target)
        for node in self._between(src, sink):
            self._merge(self.groups[node.index], target)

    def _count_with_child(self, child: GraphNode, sink: GraphNode) -> int:
        total = self.groups[sink.index].find_root().num_nodes
        total += self.groups[child.index].num_nodes
        for node in self._between(child, sink):
            if node is not sink:
                total += self.groups[node.index].num_nodes
        return total

    @staticmethod
    def _merge(child: Group, parent: Group) -> None:
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor_ref is not None:
            parent.anchor_ref = child.anchor_ref
            parent.pattern = max(child.pattern, parent.pattern)


__all__ = ["Group", "GraphPartitioner"]
