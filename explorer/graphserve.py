"""The Graph view's HTTP answers: a snapshot's graph (whole, or lazy when it is big), the
members of the groups the page opens, and search. One `GraphIndex` per snapshot is kept in
a small LRU per app; the first answer's JSON is kept with it.

An index is built in a child of the fork server (explorer/runs/children.py), which sends
the first answer, then the index pickled: the build never competes for the server's
GIL with the other requests of the same click (the diff's texts, source maps and node
diff: a 50k-node graph built in-process took 7 s of wall time next to them instead of
0.9 s). The index is unpickled (~0.2 s at 50k nodes) when members or search first need it.
"""

from __future__ import annotations

import json
import multiprocessing.connection
import pickle
import signal
import threading
from collections import OrderedDict
from typing import Any

from flask import Response, current_app

from explorer.graphview import CONSTANT, GraphIndex
from explorer.protocol import ApiError, bad_request
from explorer.protocol.graph import GraphHit, GraphMembers, GraphSearch, SnapshotGraph
from explorer.runs.child_call import ErrorTuple
from explorer.runs.children import die_with_parent, exit_description, mp_context
from explorer.store import Store

LAZY_NODES = 5000
"""Graphs of more nodes come lazy: groups first, a group's members when it is opened."""

SEARCH_LIMIT = 2000
BUILD_TIMEOUT = 300.0


class _Entry:
    """A snapshot's first answer (JSON) and its index: the child sends the index pickled
    after the first answer; it is unpickled when members or search first need it."""

    def __init__(self, first: bytes) -> None:
        self.first = first
        self._blob: bytes | None = None
        self._index: GraphIndex | None = None
        self._came = threading.Event()
        self._lock = threading.Lock()

    def receive(self, conn: Any, process: Any) -> None:
        """In a thread: the index the child sends after the first answer."""
        try:
            self._blob = conn.recv_bytes()
        except (EOFError, OSError):
            self._blob = None  # the child died: `index` builds it here
        finally:
            conn.close()
            process.join(5)
            self._came.set()

    def index(self, store: Store, snapshot_id: int) -> GraphIndex:
        self._came.wait(BUILD_TIMEOUT)
        with self._lock:
            if self._index is None:
                self._index = pickle.loads(self._blob) if self._blob else _build(store, snapshot_id)
                self._blob = None
            return self._index


def _build(store: Store, snapshot_id: int) -> GraphIndex:
    text = store.snapshot_part(snapshot_id, "text").decode()
    return GraphIndex(text, store.snapshot_source_map_table(snapshot_id))


def _failed(exc: Exception) -> ErrorTuple:
    return (500, "graph_failed", f"building the graph failed: {type(exc).__name__}: {exc}", None)


def _child_main(job: tuple[str, int, int], conn: Any) -> None:
    """In a child: send ("ok", the first answer's JSON) or ("error", ...), then the index."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    db_path, snapshot_id, lazy_nodes = job
    store = Store(db_path)
    try:
        index = _build(store, snapshot_id)
        graph: SnapshotGraph = index.graph(snapshot_id, lazy=len(index) > lazy_nodes)
        conn.send(("ok", json.dumps(graph, separators=(",", ":")).encode()))
    except ApiError as err:
        conn.send(("error", (err.status, err.code, err.message, err.detail)))
        return
    except Exception as exc:  # named for the page, never a bare failure
        conn.send(("error", _failed(exc)))
        return
    finally:
        store.close()
    conn.send_bytes(pickle.dumps(index, protocol=5))
    conn.close()


def _build_in_child(store: Store, snapshot_id: int, lazy_nodes: int) -> _Entry:
    """The first answer as soon as the child has it; its index follows in a thread."""
    ctx = mp_context()
    conn, end = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child_main, args=((store.path, snapshot_id, lazy_nodes), end),
                          daemon=True, name=f"explorer-graph-{snapshot_id}")
    process.start()
    end.close()
    try:
        if not multiprocessing.connection.wait([conn, process.sentinel], BUILD_TIMEOUT):
            raise ApiError(504, "graph_timeout", f"building the graph took longer than {BUILD_TIMEOUT:.0f} s")
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            process.join(5)
            raise ApiError(500, "graph_crashed", "the process building the graph stopped "
                           f"({exit_description(process.exitcode)})") from None
        if kind != "ok":
            raise ApiError(*payload)
    except ApiError:
        conn.close()
        if process.is_alive():
            process.kill()
        process.join(5)
        raise
    entry = _Entry(payload)
    threading.Thread(target=entry.receive, args=(conn, process), daemon=True,
                     name=f"graph-index-{snapshot_id}").start()
    return entry


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
        entry = _build_in_child(store, snapshot_id, self.lazy_nodes)
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
    index = _cache().get(store, snapshot_id).index(store, snapshot_id)
    wanted = parse_groups(raw, len(index.groups))
    return _json(GraphMembers(snapshot_id=snapshot_id, groups=sorted(wanted),
                              nodes=index.members(wanted)))


def graph_search(store: Store, snapshot_id: int, query: str | None, layers: list[str],
                 constants: bool) -> Response:
    """GET /api/snapshots/<id>/graph/search?q=... or ?layer=... (GraphSearch)."""
    index = _cache().get(store, snapshot_id).index(store, snapshot_id)
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
