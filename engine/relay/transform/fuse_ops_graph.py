"""The dataflow analysis behind FuseOps (TVM's `IndexedForwardGraph` and `DominatorTree`).

`IndexedForwardGraph.create(body)` numbers every expression of a function body
in post-DFS order (children first) and records, for each node, its fusion
pattern (`TOpPattern`), the edges to the nodes that consume it (each with the
pattern of that use) and whether something outside fusion's reach (the
function result, a `let`, an `if`, a non-tensor use) refers to it
(`extern_ref`). `post_dominator_tree(graph)` gives each node its immediate
post-dominator and the combined (max) pattern of the paths to it.

Everything is iterative: a chain of 100,000 ops needs no recursion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from engine.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from engine.ir.op import Op
from engine.ir.type import TensorType, TupleType
from engine.relay.op.op import (
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    TUPLE,
)

SIMPLE_CONST_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})
"""Scalar constants of these dtypes are fused into their consumers (as TVM's code generator)."""


@dataclass(slots=True, eq=False)
class GraphNode:
    """One expression of the indexed forward graph."""

    ref: Expr
    index: int = -1
    pattern: int = OPAQUE
    extern_ref: bool = False
    outputs: list[tuple[GraphNode, int]] = field(default_factory=list)


Link = tuple[Expr, int | None]
"""A child and the pattern of its use by the parent (None: an external, unfusable use)."""


def _is_tensor(expr: Expr) -> bool:
    return expr.has_type and isinstance(expr.checked_type, TensorType)


def _call_links(call: Call) -> tuple[int, list[Link]]:
    if not isinstance(call.op, Op):
        return OPAQUE, [(call.op, OPAQUE), *((a, OPAQUE) for a in call.args)]
    pattern = call.op.get_attr("TOpPattern")
    pattern = OPAQUE if pattern is None else int(pattern)
    out = call.checked_type if call.has_type else None
    links: list[Link] = []
    for arg in call.args:
        edge = pattern
        if (edge == BROADCAST and isinstance(out, TensorType) and _is_tensor(arg)
                and arg.checked_type.shape == out.shape):  # type: ignore[attr-defined]
            edge = ELEMWISE
        links.append((arg, edge))
    return pattern, links


def _tuple_links(tup: Tuple) -> tuple[int, list[Link]]:
    return TUPLE, [(f, INJECTIVE if _is_tensor(f) else None) for f in tup.fields]


def _getitem_links(item: TupleGetItem) -> tuple[int, list[Link]]:
    value = item.tuple_value
    ty = value.checked_type if value.has_type else None
    if isinstance(ty, TupleType) and all(isinstance(f, TensorType) for f in ty.fields):
        return INJECTIVE, [(value, INJECTIVE)]
    return OPAQUE, [(value, None)]


def _constant_pattern(const: Constant) -> int:
    data = const.data
    if data.ndim == 0 and data.dtype in SIMPLE_CONST_DTYPES:
        return ELEMWISE
    return OPAQUE


def _function_links(fn: Function) -> tuple[int, list[Link]]:
    if fn.is_primitive() or "Compiler" in fn.attrs:
        return OPAQUE, []  # an already fused (or external) function is a leaf
    return OPAQUE, [*((p, None) for p in fn.params), (fn.body, None)]


_LINKS: dict[type, Callable[[Expr], tuple[int, list[Link]]]] = {
    Call: _call_links,  # type: ignore[dict-item]
    Tuple: _tuple_links,  # type: ignore[dict-item]
    TupleGetItem: _getitem_links,  # type: ignore[dict-item]
    Constant: lambda e: (_constant_pattern(e), []),  # type: ignore[arg-type]
    Var: lambda e: (OPAQUE, []),
    GlobalVar: lambda e: (OPAQUE, []),
    Function: _function_links,  # type: ignore[dict-item]
    Let: lambda e: (OPAQUE, [(e.var, None), (e.value, None), (e.body, None)]),  # type: ignore
    If: lambda e: (OPAQUE, [(e.cond, None), (e.true_branch, None),  # type: ignore[attr-defined]
                            (e.false_branch, None)]),  # type: ignore[attr-defined]
}


def node_links(expr: Expr) -> tuple[int, list[Link]]:
    """The fusion pattern of `expr` and its children with the pattern of each use."""
    try:
        handler = _LINKS[type(expr)]
    except KeyError:
        raise TypeError(f"FuseOps cannot index a {type(expr).__name__} node") from None
    pattern, links = handler(expr)
    return pattern, [(child, p) for child, p in links if not isinstance(child, Op)]


class IndexedForwardGraph:
    """Expressions in post-DFS order with their consumers (TVM's IndexedForwardGraph)."""

    def __init__(self) -> None:
        self.node_map: dict[Expr, GraphNode] = {}
        self.post_dfs_order: list[GraphNode] = []

    @staticmethod
    def create(body: Expr) -> IndexedForwardGraph:
        graph = IndexedForwardGraph()
        for expr, pattern, links in _post_order_links(body):
            graph._add(expr, pattern, links)
        graph._node(body).extern_ref = True
        return graph

    def _node(self, expr: Expr) -> GraphNode:
        node = self.node_map.get(expr)
        if node is None:
            node = self.node_map[expr] = GraphNode(expr)
        return node

    def _add(self, expr: Expr, pattern: int, links: list[Link]) -> None:
        node = self._node(expr)
        node.pattern = pattern
        node.index = len(self.post_dfs_order)
        self.post_dfs_order.append(node)
        for child, edge in links:
            child_node = self._node(child)
            if edge is None:
                child_node.extern_ref = True
            else:
                child_node.outputs.append((node, edge))

    def __len__(self) -> int:
        return len(self.post_dfs_order)

    def __iter__(self) -> Iterator[GraphNode]:
        return iter(self.post_dfs_order)


def _post_order_links(root: Expr) -> list[tuple[Expr, int, list[Link]]]:
    """Every node under `root` (children first, each once) with its pattern and links."""
    out: list[tuple[Expr, int, list[Link]]] = []
    seen: set[Expr] = set()
    stack: list[tuple[Expr, tuple[int, list[Link]] | None]] = [(root, None)]
    while stack:
        node, expanded = stack.pop()
        if expanded is not None:
            out.append((node, *expanded))
            continue
        if node in seen:
            continue
        seen.add(node)
        info = node_links(node)
        stack.append((node, info))
        for child, _ in reversed(info[1]):
            if child not in seen:
                stack.append((child, None))
    return out


# --- post-dominator tree ------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class DomNode:
    """A node of the post-dominator tree: its immediate post-dominator and path pattern."""

    gnode: GraphNode
    parent: DomNode | None = None
    depth: int = 1
    pattern: int = OPAQUE


def _lca(lhs: DomNode | None, rhs: DomNode | None, pattern: int
         ) -> tuple[DomNode | None, int]:
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None, pattern
        if lhs.depth < rhs.depth:
            pattern, rhs = max(pattern, rhs.pattern), rhs.parent
        elif rhs.depth < lhs.depth:
            pattern, lhs = max(pattern, lhs.pattern), lhs.parent
        else:
            pattern = max(pattern, lhs.pattern, rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs, pattern


def _least_common_ancestor(outputs: Sequence[tuple[GraphNode, int]],
                           nodes: list[DomNode | None]) -> tuple[DomNode | None, int]:
    pattern = ELEMWISE
    if not outputs:
        return None, pattern
    first, edge = outputs[0]
    parent = nodes[first.index]
    pattern = max(pattern, edge)
    for out, edge in outputs[1:]:
        parent, pattern = _lca(parent, nodes[out.index], pattern)
        pattern = max(pattern, edge)
    return parent, pattern


def post_dominator_tree(graph: IndexedForwardGraph) -> list[DomNode]:
    """One DomNode per graph node (same index), built from the sinks back."""
    nodes: list[DomNode | None] = [None] * len(graph)
    for gnode in reversed(graph.post_dfs_order):
        if gnode.extern_ref:
            nodes[gnode.index] = DomNode(gnode)
            continue
        parent, pattern = _least_common_ancestor(gnode.outputs, nodes)
        depth = parent.depth + 1 if parent is not None else 1
        nodes[gnode.index] = DomNode(gnode, parent, depth, pattern)
    return nodes  # type: ignore[return-value]


__all__ = ["DomNode", "GraphNode", "IndexedForwardGraph", "node_links", "post_dominator_tree"]
