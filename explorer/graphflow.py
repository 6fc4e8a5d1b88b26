"""The dataflow of one snapshot, read from its source-map table and text in array passes:
the printed expressions as a tree of table rows (an entry's children are the entries
directly inside its text range; a use of a bound name points to its definition), which
rows are graph nodes, and each node's operand producers.

Nothing here makes an object per expression: a node's record (label, type, spans) is made
only when asked for (`Dataflow.record`), so a 50,000-node snapshot's hierarchy and edges
cost a few hundred milliseconds and only the groups a user opens are ever turned into JSON.

A fused function called once stands for its body: its parameters are replaced by the
call's arguments and the call by the body's result. A fused function called more than once
keeps its parameters as nodes, each fed by the matching argument of every call, and each
call reads the body's result, so the function's group has edges in and out.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from typing import Any

import numpy as np

from explorer.compiler import SourceMapTable
from explorer.compiler import source_map_table as _columns
from explorer.protocol.graph import GraphNode

_TYPE = re.compile(r"/\* ty=(.*?) \*/")
VALUE_KINDS = frozenset({"call", "constant", "tuple", "tuple_getitem", "let", "if", "var"})
_C = _columns


def _offsets(text: str) -> np.ndarray:
    """The character offset of each line's start (1-based lines index it minus one)."""
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return np.asarray(starts, dtype=np.int64)


class Rows:
    """The source map's entries sorted by text position, as parallel lists by row."""

    def __init__(self, text: str, source_map: list[dict[str, Any]] | SourceMapTable) -> None:
        table = source_map if isinstance(source_map, SourceMapTable) \
            else SourceMapTable.from_json(source_map)
        rows = table.rows
        line_start = _offsets(text)
        last = len(line_start)

        def pos(line: int, col: int) -> np.ndarray:
            return np.asarray(line_start[np.clip(rows[:, line], 1, last) - 1] + rows[:, col])

        start, end = pos(_C.START_LINE, _C.START_COL), pos(_C.END_LINE, _C.END_COL)
        order = np.lexsort((-end, start))
        names = np.asarray([*table.names, None], dtype=object)  # op -1 -> None
        self.nid: list[int] = rows[order, _C.NODE].tolist()
        self.kind_ids: np.ndarray = rows[order, _C.KIND]
        self.names = table.names
        self.kind: list[str] = names[self.kind_ids].tolist()
        self.op: list[str | None] = names[rows[order, _C.OP]].tolist()
        self.start: list[int] = start[order].tolist()
        self.end: list[int] = end[order].tolist()
        self.ref: list[int] = rows[order, _C.REF].tolist()
        self.span_set: list[int] = rows[order, _C.SPANS].tolist()
        self.line: list[int] = rows[order, _C.START_LINE].tolist()
        self.span_sets = table.span_sets
        self.parent = self._parents()
        self._children(np.asarray(self.parent, dtype=np.int64))
        ref = np.asarray(self.ref, dtype=bool)
        nonref = np.flatnonzero(~ref)
        nid = np.asarray(self.nid, dtype=np.int64)
        ids, first = np.unique(nid[nonref], return_index=True)
        def_row = nonref[first]
        self.defs: dict[int, int] = dict(zip(ids.tolist(), def_row.tolist(), strict=True))
        self.def_rows: list[int] = sorted(self.defs.values())
        # each row resolved: a use of a bound name -> the row defining it
        at = np.minimum(np.searchsorted(ids, nid), max(len(ids) - 1, 0))
        known = ref & (ids[at] == nid) if len(ids) else np.zeros_like(ref)
        self.res: list[int] = np.where(known, def_row[at] if len(ids) else 0,
                                       np.arange(len(nid))).tolist()

    def __len__(self) -> int:
        return len(self.nid)

    def compact(self) -> None:
        """The int columns as machine arrays (8 bytes a value, not an object): for an index
        kept in a cache once its hierarchy is built (~1/4 of the memory at 50k nodes)."""
        for name in ("nid", "start", "end", "ref", "span_set", "line", "parent", "res", "_kid_order",
                     "_kid_off"):
            setattr(self, name, array("q", getattr(self, name)))

    def _parents(self) -> list[int]:
        parent = [-1] * len(self.nid)
        stack: list[int] = []
        end = self.end
        for i, s in enumerate(self.start):
            while stack and end[stack[-1]] <= s:
                stack.pop()
            if stack:
                parent[i] = stack[-1]
            stack.append(i)
        return parent

    def _children(self, parent: np.ndarray) -> None:
        order = np.argsort(parent, kind="stable")  # by parent, in text order within one
        counts = np.bincount(parent + 1, minlength=len(parent) + 1)
        self._kid_order: list[int] = order.tolist()
        self._kid_off: list[int] = np.concatenate(([0], np.cumsum(counts))).tolist()

    def children(self, r: int) -> list[int]:
        return self._kid_order[self._kid_off[r + 1]:self._kid_off[r + 2]]

    def resolve(self, r: int) -> int:
        return self.res[r]

    def spans(self, r: int) -> tuple[str, ...]:
        s = self.span_set[r]
        return self.span_sets[s] if s >= 0 else ()

    def operands(self, r: int) -> list[int]:
        kids = [c for c in self.children(r) if self.kind[c] != "global_var"]
        if self.kind[r] != "function" or not kids:
            return kids
        params = [c for c in kids if self.kind[c] == "var" and not self.ref[c]]
        return [*params, kids[-1]]

    def own_text(self, text: str, r: int) -> str:
        parts, pos = [], self.start[r]
        for c in self.children(r):
            parts.append(text[pos:self.start[c]])
            pos = max(pos, self.end[c])
        parts.append(text[pos:self.end[r]])
        return "".join(parts)


class Dataflow:
    """Graph nodes (rows), their producers, and the fused functions that become groups."""

    def __init__(self, text: str, source_map: list[dict[str, Any]] | SourceMapTable) -> None:
        self.text = text
        self.rows = Rows(text, source_map)
        self.subst: dict[int, int] = {}  # row of a fused param / elided call -> what it stands for
        self.fed: dict[int, list[int]] = {}  # row of a param / call of a multi-called function -> its feeds
        self.functions: list[tuple[int, list[int]]] = []  # fused function row, its call rows
        self.let_functions = False  # a let binds a function (an imported Loop's body)
        self._bind_lets()
        self._plan_functions()
        self.nodes: list[int] = [r for r in self.rows.def_rows if self._shown(r)]
        self.inputs: list[list[int]] = self._all_inputs()

    def callee(self, call: int) -> int | None:
        """The function row (or global var row) a call calls; a let-bound local function
        (an imported Loop's body, which calls itself) through its name."""
        rows = self.rows
        kids = rows.children(call)
        if not kids or rows.kind[kids[0]] not in ("function", "global_var", "var"):
            return None
        if rows.kind[kids[0]] == "var":
            fn = self.producer(kids[0])
            return fn if rows.kind[fn] == "function" else None
        return rows.resolve(kids[0]) if rows.kind[kids[0]] == "function" else kids[0]

    def _bind_lets(self) -> None:
        """A let's name stands for its value: its uses read the value's producer."""
        rows = self.rows
        for r in range(len(rows)):
            if rows.kind[r] == "let" and not rows.ref[r]:
                kids = rows.children(r)
                if len(kids) >= 2 and rows.kind[kids[0]] == "var" and not rows.ref[kids[0]]:
                    self.subst[kids[0]] = kids[1]
                    self.let_functions |= rows.kind[kids[1]] == "function"

    def _plan_functions(self) -> None:
        rows = self.rows
        calls: dict[int, list[int]] = {}
        for r in rows.def_rows:
            if rows.kind[r] == "call" and rows.op[r] is None:
                fn = self.callee(r)
                if fn is not None and rows.kind[fn] == "function":
                    calls.setdefault(fn, []).append(r)
        for r in rows.def_rows:
            if rows.kind[r] != "function" or rows.parent[r] < 0:
                continue
            sites = calls.get(r, [])
            self.functions.append((r, sites))
            body = rows.operands(r)
            params, result = body[:-1], body[-1]
            sites = [s for s in sites if len(rows.children(s)) - 1 == len(params)]
            if len(sites) == 1:
                self.subst[sites[0]] = result
                for param, arg in zip(params, rows.children(sites[0])[1:], strict=True):
                    self.subst[param] = arg
            elif sites:  # called more than once: params fed by every call, calls read the result
                for k, param in enumerate(params):
                    self.fed[param] = [rows.children(s)[1 + k] for s in sites]
                for s in sites:
                    self.fed[s] = [result]

    def producer(self, r: int) -> int:
        res, subst = self.rows.res, self.subst
        r = res[r]
        for _ in range(10_000):
            if r not in subst:
                break
            r = res[subst[r]]
        return r

    def _shown(self, r: int) -> bool:
        rows = self.rows
        kind = rows.kind[r]
        if kind not in VALUE_KINDS or r in self.subst:
            return False
        if kind == "var":  # a module input or a parameter nothing substitutes
            up = rows.parent[r]
            return not (up >= 0 and rows.kind[up] == "let")
        return True

    def _all_inputs(self) -> list[list[int]]:
        """Each node's operand producers (node ids, in order), in array passes: every row
        inside a node is an operand but a callee (a function or a global)."""
        rows = self.rows
        n = len(rows)
        res = np.asarray(rows.res, dtype=np.int64)
        step = np.arange(n)  # a substituted row -> what it stands for, resolved
        for r, v in self.subst.items():
            step[r] = res[v]
        prod = res
        for _ in range(10_000):
            nxt = step[prod]
            if np.array_equal(nxt, prod):
                break
            prod = nxt
        callee = [i for i, name in enumerate(rows.names) if name in ("global_var", "function")]
        parent = np.asarray(rows.parent, dtype=np.int64)
        is_node = np.zeros(n + 1, dtype=bool)  # (index -1: no parent)
        is_node[self.nodes] = True
        for r in self.fed:
            is_node[r] = False
        operand = ~np.isin(rows.kind_ids, callee)
        for r in self.nodes if self.let_functions else ():  # called by its let-bound name
            if rows.kind[r] == "call" and rows.op[r] is None and self.callee(r) is not None:
                operand[rows.children(r)[0]] = False
        nid = np.asarray(rows.nid, dtype=np.int64)
        operand &= nid != nid[parent]  # a let block's own binding: not an input of itself
        kids = np.flatnonzero(is_node[parent] & operand)
        users = parent[kids]
        by_user = np.argsort(users, kind="stable")
        users, kids = users[by_user], kids[by_user]
        src: list[int] = nid[prod[kids]].tolist()
        first = np.searchsorted(users, self.nodes, "left").tolist()
        last = np.searchsorted(users, self.nodes, "right").tolist()
        out = [src[a:b] for a, b in zip(first, last, strict=True)]
        for k, r in enumerate(self.nodes):
            if r in self.fed:
                out[k] = [rows.nid[self.producer(x)] for x in self.fed[r]
                          if rows.kind[x] not in ("global_var", "function")]
        return out

    def enclosing_fn(self, r: int) -> int:
        """The fused (nested) function row around row `r`, or -1."""
        rows = self.rows
        up = rows.parent[r]
        while up >= 0:
            if rows.kind[up] == "function":
                return up if rows.parent[up] >= 0 else -1
            up = rows.parent[up]
        return -1

    def root_of(self, r: int) -> int:
        while self.rows.parent[r] >= 0:
            r = self.rows.parent[r]
        return r

    def roots(self) -> dict[int, str]:
        """Global function rows -> their names."""
        rows = self.rows
        out = {}
        for r in range(len(rows)):
            if rows.parent[r] < 0 and rows.kind[r] == "function":
                name = next((self.text[rows.start[c]:rows.end[c]] for c in rows.children(r)
                             if rows.kind[c] == "global_var"), "")
                out[r] = name
        return out

    def label(self, r: int) -> str:
        rows = self.rows
        kind = rows.kind[r]
        if kind == "call":
            if rows.op[r]:
                return str(rows.op[r])
            fn = self.callee(r)
            if fn is not None and rows.kind[fn] == "global_var":
                return self.text[rows.start[fn]:rows.end[fn]]
            return f"call {self.fn_label(fn)}" if fn is not None else "call"
        if kind == "var":
            return self.text[rows.start[r]:rows.end[r]].split(":", 1)[0]
        return kind

    def fn_label(self, fn: int) -> str:
        """`fn conv2d+add+relu`: the operators called in the function, in text order (its
        rows are the ones after it that start before it ends)."""
        rows = self.rows
        last = bisect_left(rows.start, rows.end[fn], lo=fn + 1)
        kind, op, ref = rows.kind, rows.op, rows.ref
        ops: list[str] = [o for r in range(fn + 1, last)
                          if (o := op[r]) and kind[r] == "call" and not ref[r]]
        names = [o.removeprefix("nn.") for o in sorted(set(ops), key=ops.index)]
        shown = "+".join(names[:3]) + ("+…" if len(names) > 3 else "")
        return f"fn {shown}" if shown else "fn"

    def record(self, k: int, group: int) -> GraphNode:
        """The protocol record of node `k` (an index into `nodes`)."""
        rows, r = self.rows, self.nodes[k]
        ty = _TYPE.search(rows.own_text(self.text, r))
        return GraphNode(id=rows.nid[r], kind=rows.kind[r], op=rows.op[r], label=self.label(r),
                         type=ty.group(1) if ty else None, line=rows.line[r],
                         spans=list(rows.spans(r)), inputs=self.inputs[k], group=group)
