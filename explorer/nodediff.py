"""Node-level diff of two snapshots, from their printed text and source maps.

Each snapshot is read back as the expression tree the printer laid out (an entry's
children are the entries directly inside its text range; a use of a bound name points to
its definition). The trees are walked together from each global function down: a node
paired with the same node id is kept as is; a pair whose own text (operator and
attributes, with operands, binding names, types, spans and constant indexes taken out)
differs is *rewritten*; what the walk never pairs is *created* (after) or *removed*
(before). A pass that rebuilds the users of a rewritten node (new ids, same operator) shows
one rewrite, not a cascade: the same alignment the page's diff makes line by line.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.compiler import COUNTED_KINDS as COUNTED
from explorer.compiler import SourceMapTable
from explorer.compiler import source_map_table as _columns

END_COL, END_LINE, START_COL, START_LINE = (_columns.END_COL, _columns.END_LINE,
                                            _columns.START_COL, _columns.START_LINE)
KIND, NODE, OP, REF, SPANS = _columns.KIND, _columns.NODE, _columns.OP, _columns.REF, _columns.SPANS

_NOISE = re.compile(r"/\*.*?\*/|^%\d+ = |meta\[relay\.Constant\]\[\d+\]|\s+")


@dataclass(slots=True)
class _Node:
    node_id: int
    kind: str
    op: str | None
    start: int
    end: int
    ref: bool
    spans: tuple[str, ...] = ()
    children: list[_Node] = field(default_factory=list)
    parent: _Node | None = None
    local: str = ""
    line: int = 0

    @property
    def label(self) -> str:
        if self.kind == "call" and self.op:
            return self.op
        return {"call": "call", "function": "fn"}.get(self.kind, self.kind)


class _Tree:
    """One snapshot's expressions: definitions by node id, the global functions by name."""

    def __init__(self, text: str, source_map: list[dict[str, Any]] | SourceMapTable,
                 local: bool = True) -> None:
        starts = [0]
        for line in text.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        if isinstance(source_map, SourceMapTable):
            nodes = _nodes_of_table(source_map, starts)
        else:
            nodes = _nodes_of_entries(source_map, starts)
        nodes.sort(key=lambda n: (n.start, -n.end))
        self.defs: dict[int, _Node] = {}
        self.roots: dict[str, _Node] = {}
        stack: list[_Node] = []
        for node in nodes:
            while stack and stack[-1].end <= node.start:
                stack.pop()
            if stack:
                node.parent = stack[-1]
                stack[-1].children.append(node)
            if not node.ref:
                self.defs.setdefault(node.node_id, node)
            stack.append(node)
        for node in self.defs.values() if local else ():
            node.local = _local_text(text, node)
        for node in nodes:
            if node.kind == "function" and node.parent is None:
                name = next((text[c.start:c.end] for c in node.children if c.kind == "global_var"), "")
                self.roots[name] = node

    def resolve(self, node: _Node) -> _Node:
        return self.defs.get(node.node_id, node) if node.ref else node


def _nodes_of_entries(source_map: list[dict[str, Any]], starts: list[int]) -> list[_Node]:
    def offset(pos: list[int]) -> int:
        line, col = pos
        return starts[min(line, len(starts)) - 1] + col

    return [_Node(int(e["node_id"]), str(e["kind"]), e.get("op"), offset(e["start"]),
                  offset(e["end"]), bool(e.get("ref")), tuple(e.get("spans") or ()),
                  line=e["start"][0])
            for e in source_map]


def _nodes_of_table(table: SourceMapTable, starts: list[int]) -> list[_Node]:
    """The same nodes from the stored column table, without a dict per entry."""
    rows = table.rows
    line_start = np.asarray(starts, dtype=np.int64)
    last = len(starts)

    def offsets(line: int, col: int) -> list[int]:
        found: list[int] = (line_start[np.minimum(rows[:, line], last) - 1] + rows[:, col]).tolist()
        return found

    names, span_sets = table.names, table.span_sets
    cols = zip(rows[:, NODE].tolist(), rows[:, KIND].tolist(), rows[:, OP].tolist(),
               offsets(START_LINE, START_COL), offsets(END_LINE, END_COL),
               rows[:, REF].tolist(), rows[:, SPANS].tolist(), rows[:, START_LINE].tolist(),
               strict=True)
    return [_Node(nid, names[kind], names[op] if op >= 0 else None, start, end, bool(ref),
                  span_sets[spans] if spans >= 0 else (), line=line)
            for nid, kind, op, start, end, ref, spans, line in cols]


def _local_text(text: str, node: _Node) -> str:
    """The node's own text: its children's ranges, comments, binding, indexes cut out."""
    if node.kind == "function":
        return "fn"
    parts, pos = [], node.start
    for child in node.children:
        parts.append(text[pos:child.start])
        parts.append("_")
        pos = max(pos, child.end)
    parts.append(text[pos:node.end])
    return _NOISE.sub("", "".join(parts))


@dataclass(slots=True)
class _Walk:
    """Pairs before -> after: the same node ids, then a walk down from each global function
    (operands pair in order while both sides have as many), then, bottom-up, nodes of the
    same own text whose operands are paired (a rebuilt subgraph the walk did not reach)."""

    before: _Tree
    after: _Tree
    pairs: dict[int, _Node] = field(default_factory=dict)  # before node id -> after node
    paired_b: set[int] = field(default_factory=set)

    def run(self) -> None:
        for nid in self.before.defs.keys() & self.after.defs.keys():
            self.link(self.before.defs[nid], self.after.defs[nid])
        for name, root in self.after.roots.items():
            if name in self.before.roots:
                self.walk(self.before.roots[name], root)
        for _ in range(3):
            if not self.match_rebuilt():
                break

    def link(self, a: _Node, b: _Node) -> None:
        self.pairs[a.node_id] = b
        self.paired_b.add(b.node_id)

    def walk(self, a: _Node, b: _Node) -> None:
        work = [(a, b)]
        while work:
            a, b = work.pop()
            a, b = self.before.resolve(a), self.after.resolve(b)
            if a.node_id in self.pairs or b.node_id in self.paired_b:
                if self.pairs.get(a.node_id) is not b or a.node_id == b.node_id:
                    continue
            else:
                self.link(a, b)
            ka, kb = _operands(a), _operands(b)
            if len(ka) == len(kb):
                work.extend(reversed(list(zip(ka, kb, strict=True))))
            else:
                work.extend(self.resync(a, b))

    def resync(self, a: _Node, b: _Node) -> list[tuple[_Node, _Node]]:
        """Operands that moved (a node replaced by a chain of another length): nodes a few
        levels below either side pair when their own text agrees."""
        below_b = self.below(self.after, b)
        found = []
        for node in self.below(self.before, a):
            twin = next((m for m in below_b if m.node_id not in self.paired_b and _same(node, m)), None)
            if twin is not None:
                below_b.remove(twin)
                found.append((node, twin))
        return found

    @staticmethod
    def below(tree: _Tree, node: _Node, depth: int = 3) -> list[_Node]:
        out: list[_Node] = []
        level = [node]
        for _ in range(depth):
            level = [tree.resolve(c) for n in level for c in _operands(n)]
            out.extend(level)
        return out

    def key(self, tree: _Tree, node: _Node, before: bool) -> tuple[Any, ...]:
        operands: list[int | None] = []
        for child in _operands(node):
            nid = tree.resolve(child).node_id
            if before:
                paired = self.pairs.get(nid)
                operands.append(None if paired is None else paired.node_id)
            else:
                operands.append(nid if nid in self.paired_b else None)
        return (node.kind, node.op, node.local, tuple(operands))

    def match_rebuilt(self) -> int:
        waiting: dict[tuple[Any, ...], list[_Node]] = {}
        for node in self.before.defs.values():
            if node.node_id not in self.pairs:
                waiting.setdefault(self.key(self.before, node, True), []).append(node)
        found = 0
        for node in self.after.defs.values():
            if node.node_id in self.paired_b:
                continue
            key = self.key(self.after, node, False)
            if None in key[3] or not waiting.get(key):
                continue
            self.link(waiting[key].pop(0), node)
            found += 1
        return found


def _rewrite(a: _Node, b: _Node) -> bool:
    """A pair whose own text differs, counted when either side computes a value."""
    return not _same(a, b) and (a.kind in COUNTED or b.kind in COUNTED)


def _same(a: _Node, b: _Node) -> bool:
    return (a.kind, a.op, a.local, len(_operands(a))) == (b.kind, b.op, b.local, len(_operands(b)))


def _operands(node: _Node) -> list[_Node]:
    kids = [c for c in node.children if c.kind != "global_var"]
    if node.kind != "function" or not kids:
        return kids
    params = [c for c in kids if c.kind == "var" and not c.ref]
    return [*params, kids[-1]]


def node_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """{rewritten: [after node ids], created: [...], removed: [before ids], summary}."""
    ta = _Tree(before["text"], before["source_map"])
    tb = _Tree(after["text"], after["source_map"])
    walk = _Walk(ta, tb)
    walk.run()
    rewritten = [(ta.defs[a], b) for a, b in walk.pairs.items()
                 if a != b.node_id and _rewrite(ta.defs[a], b)]
    created = [n for n in tb.defs.values() if n.node_id not in walk.paired_b and n.kind in COUNTED]
    removed = [n for n in ta.defs.values() if n.node_id not in walk.pairs and n.kind in COUNTED]
    return {"rewritten": sorted(b.node_id for _, b in rewritten),
            "created": sorted(n.node_id for n in created),
            "removed": sorted(n.node_id for n in removed),
            "summary": _summary(rewritten, created, removed)}


def _summary(rewritten: list[tuple[_Node, _Node]], created: list[_Node],
             removed: list[_Node]) -> dict[str, Any]:
    new_fns = {n.node_id for n in created if n.kind == "function"}
    grouped = sum(1 for n in created if n.kind == "call" and _enclosing_fn(n) in new_fns)
    summary = {
        "created": dict(Counter(n.label for n in created).most_common()),
        "removed": dict(Counter(n.label for n in removed).most_common()),
        "rewritten": dict(Counter(_rewrite_label(a, b) for a, b in rewritten).most_common()),
        "functions": len(new_fns),
        "grouped_calls": grouped,
        "layers": _by_layer(rewritten, created, removed),
    }
    summary["text"] = summary_text(summary)
    return summary


NO_LAYER = "(no layer)"


def _by_layer(rewritten: list[tuple[_Node, _Node]], created: list[_Node],
              removed: list[_Node]) -> dict[str, dict[str, int]]:
    """Per frontend layer (a span's source name), how many of its expressions were created,
    removed and rewritten; a node of several layers counts in each. Most changed first."""
    layers: dict[str, Counter[str]] = {}
    for key, nodes in (("rewritten", [b for _, b in rewritten]), ("created", created),
                       ("removed", removed)):
        for node in nodes:
            for layer in node.spans or (NO_LAYER,):
                layers.setdefault(layer, Counter())[key] += 1
    ranked = sorted(layers.items(), key=lambda kv: (-kv[1].total(), kv[0]))
    return {layer: dict(counts) for layer, counts in ranked}


def _enclosing_fn(node: _Node) -> int | None:
    up = node.parent
    while up is not None and up.kind != "function":
        up = up.parent
    return None if up is None else up.node_id


def _rewrite_label(a: _Node, b: _Node) -> str:
    return a.label if a.label == b.label else f"{a.label} → {b.label}"


def summary_text(summary: dict[str, Any]) -> str:
    """One line of words: 'rewrote 37 expressions (nn.bias_add → add ×37)'."""
    clauses = []
    if summary["functions"]:
        clauses.append(f"grouped {summary['grouped_calls']} calls into "
                       f"{_count(summary['functions'], 'function')}")
    for verb, key in (("rewrote", "rewritten"), ("created", "created"), ("removed", "removed")):
        counts: dict[str, int] = summary[key]
        total = sum(counts.values())
        if total:
            clauses.append(f"{verb} {_count(total, 'expression')} ({_top(counts)})")
    layers = [name for name in summary.get("layers", {}) if name != NO_LAYER]
    if clauses and layers:
        clauses.append(f"in {_count(len(layers), 'layer')}")
    return "; ".join(clauses) if clauses else "no expression changed (only names, types or layout)"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _top(counts: dict[str, int], limit: int = 4) -> str:
    items = [f"{name} ×{n}" for name, n in list(counts.items())[:limit]]
    rest = len(counts) - limit
    return ", ".join(items) + (f", {rest} more kinds" if rest > 0 else "")
