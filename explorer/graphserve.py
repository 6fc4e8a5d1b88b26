"""The Graph view's HTTP answers: a snapshot's graph (whole, or lazy when it is big), the
members of the groups the page opens, and search. One `GraphIndex` per snapshot is kept in
a small LRU per app; the first answer's JSON is kept with it."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

from flask import Response, current_app

from explorer.graphview import CONSTANT, GraphIndex
from explorer.protocol import bad_request
from explorer.protocol.http import GraphHit, GraphMembers, GraphSearch, SnapshotGraph
from explorer.store import Store

LAZY_NODES = 5000
"""Graphs of more nodes come lazy: groups first, a group's members when it is opened."""

SEARCH_LIMIT = 2000


@dataclass(slots=True)
class _Entry:
    index: GraphIndex
    first: bytes  # the SnapshotGraph answer, as JSON


class GraphCache:
    """A small LRU of graph indexes by snapshot id, one per app. An index is built once
    even when asked for twice at the same time, and building one starts the next
    snapshot's (the next pass's, as a user steps through a run) in the background. An index
    of a 50k-node snapshot keeps ~40 MB (its text, source map and compacted columns): a few
    are kept."""

    def __init__(self, size: int = 4, prefetch: bool = True, lazy_nodes: int = LAZY_NODES) -> None:
        self._size = size
        self._prefetch = prefetch
        self.lazy_nodes = lazy_nodes
        self._items: OrderedDict[int, _Entry] = OrderedDict()
        self._building: dict[int, threading.Event] = {}
        self._lock = threading.Lock()

    def cached(self, snapshot_id: int) -> bool:
        with self._lock:
            return snapshot_id in self._items

    def get(self, store: Store, snapshot_id: int) -> _Entry:
        while True:
            with self._lock:
                hit = self._items.get(snapshot_id)
                if hit is not None:
                    self._items.move_to_end(snapshot_id)
                    return hit
                busy = self._building.get(snapshot_id)
                if busy is None:
                    done = self._building[snapshot_id] = threading.Event()
                    break
            busy.wait()  # built by another request or the prefetch: take it from the cache
        try:
            entry = self._build(store, snapshot_id)
        finally:
            with self._lock:
                del self._building[snapshot_id]
            done.set()
        if self._prefetch:
            threading.Thread(target=self._warm, args=(store, snapshot_id + 1), daemon=True,
                             name=f"graph-prefetch-{snapshot_id + 1}").start()
        return entry

    def _build(self, store: Store, snapshot_id: int) -> _Entry:
        text = store.snapshot_part(snapshot_id, "text").decode()
        index = GraphIndex(text, store.snapshot_source_map_table(snapshot_id))
        graph: SnapshotGraph = index.graph(snapshot_id, lazy=len(index) > self.lazy_nodes)
        entry = _Entry(index, json.dumps(graph, separators=(",", ":")).encode())
        with self._lock:
            self._items[snapshot_id] = entry
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return entry

    def _warm(self, store: Store, snapshot_id: int) -> None:
        with self._lock:
            if snapshot_id in self._items or snapshot_id in self._building:
                return
            done = self._building[snapshot_id] = threading.Event()
        try:
            self._build(store, snapshot_id)
        except Exception:  # a guess: no such snapshot, or one it cannot read (the request says why)
            pass
        finally:
            with self._lock:
                del self._building[snapshot_id]
            done.set()


def _cache() -> GraphCache:
    cache: GraphCache = current_app.extensions.setdefault("explorer.graphs", GraphCache())
    return cache


def _json(value: object) -> Response:
    return Response(json.dumps(value, separators=(",", ":")), mimetype="application/json")


def snapshot_graph(store: Store, snapshot_id: int) -> Response:
    """GET /api/snapshots/<id>/graph (SnapshotGraph)."""
    return Response(_cache().get(store, snapshot_id).first, mimetype="application/json")


def parse_groups(raw: str | None, count: int) -> set[int]:
    """`?groups=3,7,-1` as group indexes, each checked against the graph's `count` groups."""
    if not raw:
        raise bad_request("bad_groups", "groups is required: comma-separated group indexes")
    try:
        wanted = {int(part) for part in raw.split(",")}
    except ValueError:
        raise bad_request("bad_groups", f"groups must be comma-separated integers, not {raw!r}") from None
    bad = sorted(g for g in wanted if not -1 <= g < count)
    if bad:
        raise bad_request("bad_groups", f"no group {bad[0]} in this graph ({count} groups)")
    return wanted


def graph_members(store: Store, snapshot_id: int, raw: str | None) -> Response:
    """GET /api/snapshots/<id>/graph/members?groups=3,7 (GraphMembers)."""
    index = _cache().get(store, snapshot_id).index
    wanted = parse_groups(raw, len(index.groups))
    return _json(GraphMembers(snapshot_id=snapshot_id, groups=sorted(wanted),
                              nodes=index.members(wanted)))


def graph_search(store: Store, snapshot_id: int, query: str | None, layers: list[str],
                 constants: bool) -> Response:
    """GET /api/snapshots/<id>/graph/search?q=... or ?layer=... (GraphSearch)."""
    index = _cache().get(store, snapshot_id).index
    if layers:
        hits = layer_hits(index, set(layers))
    elif query and query.strip():
        hits = search(index, query, constants)
    else:
        raise bad_request("bad_query", "search needs q (op, layer or node id) or layer")
    return _json(GraphSearch(hits=hits[:SEARCH_LIMIT], total=len(hits)))


def layer_hits(index: GraphIndex, layers: set[str]) -> list[GraphHit]:
    """The nodes with one of `layers` among their spans."""
    rows, flow = index.flow.rows, index.flow
    sets = {i for i, s in enumerate(rows.span_sets) if layers.intersection(s)}
    return [GraphHit(id=index.ids[k], group=None, line=rows.line[r])
            for k, r in enumerate(flow.nodes) if rows.span_set[r] in sets]


def search(index: GraphIndex, query: str, constants: bool) -> list[GraphHit]:
    """Nodes and groups matching `query`, as the page's GraphModel.search matches them: a node
    id, an operator or label, a layer name (a part of a span), a group's label."""
    q = query.strip().lower()
    as_id = int(q) if q.isdigit() else None
    rows, flow = index.flow.rows, index.flow
    sets = {i for i, s in enumerate(rows.span_sets) if any(q in x.lower() for x in s)}
    hits: list[GraphHit] = []
    for k, r in enumerate(flow.nodes):
        nid = index.ids[k]
        if nid != as_id and (not constants and index.flags[k] & CONSTANT):
            continue
        if nid == as_id or rows.span_set[r] in sets or q in (rows.op[r] or "").lower() \
                or q in flow.label(r).lower():
            hits.append(GraphHit(id=nid, group=None, line=rows.line[r]))
    for i, g in enumerate(index.groups):
        if g["kind"] != "range" and (q in g["label"].lower() or as_id in g["node_ids"]):
            hits.append(GraphHit(id=g["node_ids"][0] if g["node_ids"] else None, group=i,
                                 line=g["line"]))
    return sorted(hits, key=lambda h: h["line"])
