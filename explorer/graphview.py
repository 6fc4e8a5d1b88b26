"""The dataflow graph of one snapshot, for the page's Graph view, read from its printed text
and source map (explorer.graphflow's array passes over the source-map table), never by
re-printing.

Nodes are the expressions that compute or hold a value (calls, constants, tuples, tuple
items, the module's inputs); an edge runs from each operand's producer to its user. A fused
function called once is drawn as a group of its body: its parameters are replaced by the
call's arguments and the call by the body's result, so the group reads as one box that
expands into its operators. Groups nest: global functions (when the module has several),
frontend layer paths (`encoder/layer.3/attention`, `layer1.0`), fused functions, and,
where one group would hold more boxes than a person reads at a glance, runs of consecutive
children (`%120 … %159`), so any graph opens collapsed to a few dozen boxes.

A `GraphIndex` is built once per snapshot; a big graph's first answer (`lazy`) holds the
groups, the group of every node and the edges into groups not sent, with the records of
the groups open by default only; the page asks for a group's members when it opens one.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from explorer.compiler import SourceMapTable
from explorer.graphflow import Dataflow
from explorer.protocol.graph import GraphGroup, GraphHolders, GraphNode, SnapshotGraph

MAX_CHILDREN = 24
"""The most boxes a group shows when expanded; more are split into runs of consecutive ones."""

OPEN_BUDGET = 48
"""Boxes a graph opens with, at most (static/src/graph/model.js OPEN_BUDGET)."""


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
    """Places the dataflow's nodes in groups: global functions, layer paths, fused functions."""

    def __init__(self, flow: Dataflow) -> None:
        self.flow = flow
        self.fn_group: dict[int, Group] = {}  # fused function row -> its group
        self.root = Group("root", "", None)
        self.layer_groups: dict[tuple[str, ...], Group] = {(): self.root}
        self.node_group: dict[int, Group] = {}
        self.globals = flow.roots()

    def plan_functions(self) -> None:
        rows = self.flow.rows
        for fn, sites in self.flow.functions:
            group = Group("function", self.flow.fn_label(fn), None, [rows.nid[fn]])
            if len(sites) == 1:
                group.node_ids.append(rows.nid[sites[0]])
            self.fn_group[fn] = group

    def global_group(self, r: int) -> Group:
        if len(self.globals) < 2:
            return self.root
        top = self.flow.root_of(r)
        key = ("@global", str(top))
        if key not in self.layer_groups:
            self.layer_groups[key] = Group("global", self.globals.get(top) or "fn", self.root)
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
        flow, rows = self.flow, self.flow.rows
        ids = [rows.nid[r] for r in flow.nodes]
        consumers: dict[int, int] = {}
        for nid, inputs in zip(ids, flow.inputs, strict=True):
            for i in inputs:
                consumers.setdefault(i, nid)
        fns = [flow.enclosing_fn(r) for r in flow.nodes]
        paths = [_layer_path(rows.spans(r)) for r in flow.nodes]
        fn_paths: dict[int, list[tuple[str, ...]]] = {}
        for fn, path in zip(fns, paths, strict=True):
            if fn in self.fn_group:
                fn_paths.setdefault(fn, []).append(path)
        for fn, group in self.fn_group.items():
            base = self.global_group(fn)
            prefix = _common_prefix(fn_paths.get(fn, []))
            group.parent = self.layer_group(base, prefix) if prefix else base
            group.parent.children.append(group)
        for r, nid, fn, path in zip(flow.nodes, ids, fns, paths, strict=True):
            if fn in self.fn_group:  # constants and inputs follow their first user
                group = self.fn_group[fn]
            elif rows.kind[r] == "constant" and nid in consumers:
                continue
            else:
                base = self.global_group(r)
                group = self.layer_group(base, path) if path else base
            self.node_group[nid] = group
            group.children.append(nid)
        for nid in ids:
            if nid not in self.node_group:
                group = self._user_group(nid, consumers)
                self.node_group[nid] = group
                group.children.append(nid)

    def _user_group(self, nid: int, consumers: dict[int, int]) -> Group:
        """The group of a constant's first user (following users up to one that is placed)."""
        user = consumers[nid]
        for _ in range(1000):
            if user in self.node_group:
                return self.node_group[user]
            user = consumers.get(user, user)
        return self.root

    def finish(self) -> list[Group]:
        rows = self.flow.rows
        lines = {rows.nid[r]: rows.line[r] for r in self.flow.nodes}
        _set_lines(self.root, lines)
        _prune(self.root)
        _chunk(self.root, lines)
        groups: list[Group] = []
        self.node_group = {}
        _number(self.root, groups, self.node_group)
        return groups


def layer_path(name: str) -> tuple[str, ...]:
    """The groups a frontend layer name sits in: `/encoder/layer.3/attention/self/MatMul` ->
    (encoder, layer.3, attention, self); `layer1.0.conv1` -> (layer1, 0)."""
    sep = "/" if "/" in name else "."
    name = name.rstrip(sep)
    return _path_of(name[:max(0, name.rfind(sep))], sep)


@lru_cache(maxsize=65536)
def _path_of(prefix: str, sep: str) -> tuple[str, ...]:
    """(the names of a layer share a few prefixes: `chain/op0` ... `chain/op49999`)"""
    return tuple(p for p in prefix.split(sep) if p)


def _layer_path(spans: tuple[str, ...]) -> tuple[str, ...]:
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


def _range_label(group: Group, name: Any) -> str:
    def leaf(g: Group | int, last: bool) -> str:
        while isinstance(g, Group):
            g = g.children[-1 if last else 0]
        return str(name(g))

    return f"{leaf(group, False)} … {leaf(group, True)}"


CONSTANT, BARE = 1, 2
"""GraphHolders flags: a constant; a call without a span."""


class GraphIndex:
    """A snapshot's graph, kept per snapshot: the groups, the group holding each node, the
    operand edges; node records are made only for the groups asked for (`members`)."""

    def __init__(self, text: str, source_map: list[dict[str, Any]] | SourceMapTable) -> None:
        self.flow = flow = Dataflow(text, source_map)
        rows = flow.rows
        b = _Builder(flow)
        b.plan_functions()
        b.place()
        self._groups = b.finish()
        self.ids = [rows.nid[r] for r in flow.nodes]
        self.k_of = {nid: k for k, nid in enumerate(self.ids)}
        self.holder = [b.node_group[nid].index for nid in self.ids]
        self.flags = [(CONSTANT if rows.kind[r] == "constant" else 0)
                      | (BARE if rows.kind[r] == "call" and not rows.spans(r) else 0)
                      for r in flow.nodes]
        self.groups = self._records()
        rows.compact()

    def _records(self) -> list[GraphGroup]:
        rows, flow = self.flow.rows, self.flow
        size: dict[int, int] = {}
        for g in reversed(self._groups):
            size[g.index] = sum(size[c.index] if isinstance(c, Group) else 1 for c in g.children)

        def name(nid: int) -> str:
            r = rows.defs[nid]
            return f"{flow.label(r)} (line {rows.line[r]})"

        out = []
        for g in self._groups:
            own = [c for c in g.children if not isinstance(c, Group)]
            consts = sum(self.flags[self.k_of[c]] & CONSTANT for c in own)
            out.append(GraphGroup(kind=g.kind, label=g.label or _range_label(g, name),
                                  parent=g.parent.index if g.parent is not None else -1,
                                  node_ids=g.node_ids, line=g.line, size=size[g.index],
                                  own=len(own) - consts, own_constants=consts, loaded=True))
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def members(self, groups: set[int]) -> list[GraphNode]:
        """The records of the nodes directly in `groups` (-1: the top level), in text order."""
        return [self.flow.record(k, g) for k, g in enumerate(self.holder) if g in groups]

    def default_open(self, budget: int = OPEN_BUDGET) -> set[int]:
        """The groups a graph opens with expanded (the page's GraphModel.openDefault):
        breadth-first in text order while the boxes shown stay within `budget`."""
        kids: list[list[int]] = [[] for _ in self.groups]
        top: list[int] = []
        for i, rec in enumerate(self.groups):
            (top if rec["parent"] < 0 else kids[rec["parent"]]).append(i)
        shown = len(top) + sum(1 for k, g in enumerate(self.holder)
                               if g < 0 and not self.flags[k] & CONSTANT)
        opened: set[int] = set()
        queue = deque(top)
        while queue:
            g = queue.popleft()
            more = len(kids[g]) + self.groups[g]["own"]
            if shown - 1 + more > budget:
                continue
            opened.add(g)
            shown += more - 1
            queue.extend(kids[g])
        return opened

    def links(self, loaded: set[int]) -> list[list[int]]:
        """Operand edges into nodes not sent, by producer: [[producer id, the consumer's
        group, count]] (the page draws them to the consumer group's box)."""
        count: Counter[tuple[int, int]] = Counter()
        for k, inputs in enumerate(self.flow.inputs):
            hv = self.holder[k]
            if hv in loaded:
                continue
            for u in inputs:
                ku = self.k_of.get(u)
                if ku is not None and self.holder[ku] != hv:
                    count[(u, hv)] += 1
        return [[u, hv, n] for (u, hv), n in count.items()]

    def graph(self, snapshot_id: int, lazy: bool) -> SnapshotGraph:
        """The first answer: every node, or (lazy) those of the groups open by default."""
        groups = [dict(g) for g in self.groups]
        loaded = self.default_open() | {-1} if lazy else {-1, *range(len(groups))}
        for i, (g, rec) in enumerate(zip(groups, self.groups, strict=True)):
            # a group of groups only has no nodes to ask for
            g["loaded"] = i in loaded or rec["own"] + rec["own_constants"] == 0
        return SnapshotGraph(snapshot_id=snapshot_id, lazy=lazy, nodes=self.members(loaded),
                             groups=groups,  # type: ignore[typeddict-item]
                             holders=GraphHolders(ids=self.ids, groups=self.holder,
                                                  flags=self.flags),
                             links=self.links(loaded) if lazy else [])


def build_graph(text: str, source_map: list[dict[str, Any]] | SourceMapTable
                ) -> tuple[list[GraphNode], list[GraphGroup]]:
    """The nodes and groups of a snapshot (explorer.protocol.http.SnapshotGraph): a node's
    `group` and a group's `parent` index the groups (-1: the top level)."""
    index = GraphIndex(text, source_map)
    return index.members({-1, *range(len(index.groups))}), index.groups
