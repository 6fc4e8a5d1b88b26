"""The dataflow graph of one snapshot, for the page's Graph view, read from its printed text
and source map (the expression tree explorer.nodediff builds), never by re-printing.

Nodes are the expressions that compute or hold a value (calls, constants, tuples, tuple
items, the module's inputs); an edge runs from each operand's producer to its user. A fused
function called once is drawn as a group of its body: its parameters are replaced by the
call's arguments and the call by the body's result, so the group reads as one box that
expands into its operators. Groups nest: global functions (when the module has several),
frontend layer paths (`encoder/layer.3/attention`, `layer1.0`), fused functions, and,
where one group would hold more boxes than a person reads at a glance, runs of consecutive
children (`%120 … %159`), so any graph opens collapsed to a few dozen boxes.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from flask import Response, current_app

from explorer.compiler import SourceMapTable
from explorer.nodediff import ExprTree, TreeNode, operands
from explorer.protocol.http import GraphGroup, GraphNode, SnapshotGraph
from explorer.store import Store

MAX_CHILDREN = 24
"""The most boxes a group shows when expanded; more are split into runs of consecutive ones."""

_TYPE = re.compile(r"/\* ty=(.*?) \*/")
_VALUE_KINDS = frozenset({"call", "constant", "tuple", "tuple_getitem", "let", "if", "var"})


@dataclass(slots=True)
class Group:
    kind: str  # "global" | "layer" | "function" | "range"
    label: str
    parent: Group | None
    node_ids: list[int] = field(default_factory=list)  # the fn and its call, for a function
    children: list[Group | int] = field(default_factory=list)  # groups and node ids
    line: int = 1 << 30
    index: int = -1


class _Builder:
    def __init__(self, text: str, source_map: list[dict[str, Any]] | SourceMapTable) -> None:
        self.text = text
        self.tree = ExprTree(text, source_map, local=False)
        self.subst: dict[int, TreeNode] = {}  # fused param / elided call -> what it stands for
        self.fn_group: dict[int, Group] = {}  # fused function node id -> its group
        self.root = Group("root", "", None)
        self.layer_groups: dict[tuple[str, ...], Group] = {(): self.root}
        self.nodes: list[GraphNode] = []
        self.node_group: dict[int, Group] = {}

    # --- functions and their calls ---------------------------------------------------
    def callee(self, call: TreeNode) -> TreeNode | None:
        first = call.children[0] if call.children else None
        if first is None or first.kind not in ("function", "global_var"):
            return None
        return self.tree.resolve(first) if first.kind == "function" else first

    def plan_functions(self) -> None:
        """Fused (nested) functions called once are inlined as groups."""
        calls: dict[int, list[TreeNode]] = {}
        for node in self.tree.defs.values():
            if node.kind == "call" and node.op is None:
                fn = self.callee(node)
                if fn is not None and fn.kind == "function":
                    calls.setdefault(fn.node_id, []).append(node)
        for node in self.tree.defs.values():
            if node.kind != "function" or node.parent is None:
                continue
            group = Group("function", _fn_label(self.tree, node), None, [node.node_id])
            self.fn_group[node.node_id] = group
            sites = calls.get(node.node_id, [])
            params = operands(node)[:-1]
            if len(sites) == 1 and len(sites[0].children) - 1 == len(params):
                call = sites[0]
                group.node_ids.append(call.node_id)
                self.subst[call.node_id] = operands(node)[-1]
                for param, arg in zip(params, call.children[1:], strict=True):
                    self.subst[param.node_id] = arg

    def producer(self, node: TreeNode) -> TreeNode:
        node = self.tree.resolve(node)
        seen = 0
        while node.node_id in self.subst and seen < 10_000:
            node = self.tree.resolve(self.subst[node.node_id])
            seen += 1
        return node

    # --- nodes ------------------------------------------------------------------------
    def enclosing_fn(self, node: TreeNode) -> TreeNode | None:
        up = node.parent
        while up is not None:
            if up.kind == "function":
                return up if up.parent is not None else None
            up = up.parent
        return None

    def shown(self, node: TreeNode) -> bool:
        if node.kind not in _VALUE_KINDS or node.node_id in self.subst:
            return False
        if node.kind == "var":  # a module input or a parameter nothing substitutes
            return not (node.parent is not None and node.parent.kind == "let")
        return True

    def inputs(self, node: TreeNode) -> list[int]:
        kids = node.children
        if node.kind == "call" and self.callee(node) is not None:
            kids = kids[1:]
        out = []
        for kid in kids:
            if kid.kind in ("global_var", "function"):
                continue
            out.append(self.producer(kid).node_id)
        return out

    def label(self, node: TreeNode) -> str:
        if node.kind == "call":
            if node.op:
                return node.op
            fn = self.callee(node)
            if fn is not None and fn.kind == "global_var":
                return self.text[fn.start:fn.end]
            return "call"
        if node.kind == "var":
            return self.text[node.start:node.end].split(":", 1)[0]
        return node.kind

    def add_nodes(self) -> None:
        for node in self.tree.defs.values():
            if not self.shown(node):
                continue
            local = _own_text(self.text, node)
            ty = _TYPE.search(local)
            self.nodes.append(GraphNode(
                id=node.node_id, kind=node.kind, op=node.op, label=self.label(node),
                type=ty.group(1) if ty else None, line=node.line, spans=list(node.spans),
                inputs=self.inputs(node), group=-1))

    # --- hierarchy --------------------------------------------------------------------
    def global_group(self, node: TreeNode) -> Group:
        if len(self.tree.roots) < 2:
            return self.root
        top = node
        while top.parent is not None:
            top = top.parent
        key = ("@global", str(top.node_id))
        if key not in self.layer_groups:
            name = next((n for n, r in self.tree.roots.items() if r is top), "fn")
            self.layer_groups[key] = Group("global", name, self.root)
            self.root.children.append(self.layer_groups[key])
        return self.layer_groups[key]

    def layer_group(self, base: Group, path: tuple[str, ...]) -> Group:
        key = (str(id(base)), *path)
        group = self.layer_groups.get(key)
        if group is None:
            parent = self.layer_group(base, path[:-1]) if len(path) > 1 else base
            group = Group("layer", path[-1], parent)
            parent.children.append(group)
            self.layer_groups[key] = group
        return group

    def place(self) -> None:
        consumers: dict[int, int] = {}
        for n in self.nodes:
            for i in n["inputs"]:
                consumers.setdefault(i, n["id"])
        fn_paths: dict[int, list[tuple[str, ...]]] = {}
        for n in self.nodes:
            tnode = self.tree.defs[n["id"]]
            fn = self.enclosing_fn(tnode)
            if fn is not None and fn.node_id in self.fn_group:
                fn_paths.setdefault(fn.node_id, []).append(_layer_path(n["spans"]))
        for fn_id, group in self.fn_group.items():
            base = self.global_group(self.tree.defs[fn_id])
            prefix = _common_prefix(fn_paths.get(fn_id, []))
            group.parent = self.layer_group(base, prefix) if prefix else base
            group.parent.children.append(group)
        for n in self.nodes:  # constants and inputs follow their first user
            tnode = self.tree.defs[n["id"]]
            fn = self.enclosing_fn(tnode)
            if fn is not None and fn.node_id in self.fn_group:
                group = self.fn_group[fn.node_id]
            elif n["kind"] == "constant" and n["id"] in consumers:
                continue
            else:
                base = self.global_group(tnode)
                path = _layer_path(n["spans"])
                group = self.layer_group(base, path) if path else base
            self.node_group[n["id"]] = group
            group.children.append(n["id"])
        for n in self.nodes:
            if n["id"] not in self.node_group:
                group = self._user_group(n["id"], consumers)
                self.node_group[n["id"]] = group
                group.children.append(n["id"])

    def _user_group(self, nid: int, consumers: dict[int, int]) -> Group:
        """The group of a constant's first user (following users up to one that is placed)."""
        user = consumers[nid]
        for _ in range(1000):
            if user in self.node_group:
                return self.node_group[user]
            user = consumers.get(user, user)
        return self.root

    def finish(self) -> list[Group]:
        lines = {n["id"]: n["line"] for n in self.nodes}
        _set_lines(self.root, lines)
        _prune(self.root)
        _chunk(self.root, lines)
        groups: list[Group] = []
        self.node_group = {}
        _number(self.root, groups, self.node_group)
        return groups


def _own_text(text: str, node: TreeNode) -> str:
    parts, pos = [], node.start
    for child in node.children:
        parts.append(text[pos:child.start])
        pos = max(pos, child.end)
    parts.append(text[pos:node.end])
    return "".join(parts)


def _fn_label(tree: ExprTree, fn: TreeNode) -> str:
    ops: list[str] = []
    stack = [fn]
    while stack:
        node = stack.pop()
        for kid in node.children:
            if kid.ref:
                continue
            if kid.kind == "call" and kid.op:
                ops.append(kid.op)
            stack.append(kid)
    names = [o.removeprefix("nn.") for o in sorted(set(ops), key=ops.index)]
    shown = "+".join(names[:3]) + ("+…" if len(names) > 3 else "")
    return f"fn {shown}" if shown else "fn"


@lru_cache(maxsize=65536)
def layer_path(name: str) -> tuple[str, ...]:
    """The groups a frontend layer name sits in: `/encoder/layer.3/attention/self/MatMul` ->
    (encoder, layer.3, attention, self); `layer1.0.conv1` -> (layer1, 0)."""
    parts = [p for p in name.split("/" if "/" in name else ".") if p]
    return tuple(parts[:-1])


def _layer_path(spans: list[str]) -> tuple[str, ...]:
    return layer_path(spans[0]) if spans else ()


def _common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    if not paths:
        return ()
    first = paths[0]
    n = len(first)
    for path in paths[1:]:
        n = min(n, len(path))
        for i in range(n):
            if path[i] != first[i]:
                n = i
                break
    return first[:n]


def _set_lines(group: Group, lines: dict[int, int]) -> int:
    best = 1 << 30
    for child in group.children:
        best = min(best, _set_lines(child, lines) if isinstance(child, Group) else lines[child])
    group.line = best
    return best


def _prune(group: Group) -> None:
    """Drop empty groups; a layer group of one child gives way to that child (its label
    joins the child's when the child is a layer group too)."""
    kept: list[Group | int] = []
    for child in group.children:
        if isinstance(child, Group):
            _prune(child)
            if not child.children:
                continue
            if child.kind == "layer" and len(child.children) == 1:
                only = child.children[0]
                if isinstance(only, Group):
                    if only.kind == "layer":
                        only.label = f"{child.label}/{only.label}"
                    only.parent = group
                kept.append(only)
                continue
        kept.append(child)
    group.children = kept


def _key_line(child: Group | int, lines: dict[int, int]) -> int:
    return child.line if isinstance(child, Group) else lines[child]


def _chunk(group: Group, lines: dict[int, int]) -> None:
    group.children.sort(key=lambda c: _key_line(c, lines))
    for child in group.children:
        if isinstance(child, Group):
            _chunk(child, lines)
    while len(group.children) > MAX_CHILDREN:
        size = MAX_CHILDREN
        runs: list[Group | int] = []
        for k in range(0, len(group.children), size):
            part = group.children[k:k + size]
            if len(part) == 1:
                runs.append(part[0])
                continue
            run = Group("range", "", group, children=part, line=_key_line(part[0], lines))
            for c in part:
                if isinstance(c, Group):
                    c.parent = run
            runs.append(run)
        group.children = runs


def _number(group: Group, out: list[Group], owner: dict[int, Group]) -> None:
    """Number the groups depth-first; `owner` gets each node's final group."""
    for child in group.children:
        if isinstance(child, Group):
            child.index = len(out)
            out.append(child)
            _number(child, out, owner)
        else:
            owner[child] = group


def _range_label(group: Group, first_label: dict[int, str]) -> str:
    def leaf(g: Group | int, last: bool) -> str:
        while isinstance(g, Group):
            g = g.children[-1 if last else 0]
        return first_label[g]

    return f"{leaf(group, False)} … {leaf(group, True)}"


def build_graph(text: str, source_map: list[dict[str, Any]] | SourceMapTable
                ) -> tuple[list[GraphNode], list[GraphGroup]]:
    """The nodes and groups of a snapshot (explorer.protocol.http.SnapshotGraph): a node's
    `group` and a group's `parent` index the groups (-1: the top level)."""
    b = _Builder(text, source_map)
    b.plan_functions()
    b.add_nodes()
    b.place()
    groups = b.finish()
    names = {n["id"]: f"{n['label']} (line {n['line']})" for n in b.nodes}
    for n in b.nodes:
        n["group"] = b.node_group[n["id"]].index
    size: dict[int, int] = {}
    for g in reversed(groups):
        size[g.index] = sum(size[c.index] if isinstance(c, Group) else 1 for c in g.children)
    return b.nodes, [GraphGroup(kind=g.kind, label=g.label or _range_label(g, names),
                                parent=g.parent.index if g.parent is not None else -1,
                                node_ids=g.node_ids, line=g.line, size=size[g.index])
                     for g in groups]


class GraphCache:
    """A small LRU of built graphs (their JSON bytes) by snapshot id, one per app."""

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._items: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: Store, snapshot_id: int) -> bytes:
        with self._lock:
            hit = self._items.get(snapshot_id)
            if hit is not None:
                self._items.move_to_end(snapshot_id)
                return hit
        text = store.snapshot_part(snapshot_id, "text").decode()
        nodes, groups = build_graph(text, store.snapshot_source_map_table(snapshot_id))
        graph = SnapshotGraph(snapshot_id=snapshot_id, nodes=nodes, groups=groups)
        raw = json.dumps(graph, separators=(",", ":")).encode()
        with self._lock:
            self._items[snapshot_id] = raw
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return raw


def snapshot_graph(store: Store, snapshot_id: int) -> Response:
    """GET /api/snapshots/<id>/graph (SnapshotGraph), built once per snapshot and app."""
    cache = current_app.extensions.setdefault("explorer.graphs", GraphCache())
    return Response(cache.get(store, snapshot_id), mimetype="application/json")
