"""The bodies of the graph view's HTTP answers (docs/PROTOCOL.md, "HTTP": `GET
/api/snapshots/<id>/graph` and below): a snapshot's dataflow graph, the members of its
groups, and a search over it (explorer.graphserve, explorer.graphview).
"""

from typing import TypedDict


class GraphNode(TypedDict):
    """One expression of a snapshot's dataflow graph (explorer.graphview)."""

    id: int  # the node id of the source map
    kind: str  # call | constant | tuple | tuple_getitem | let | if | var
    op: str | None
    label: str
    type: str | None  # the printed type, when the text shows one
    line: int  # 1-based line of its definition in the snapshot's text
    spans: list[str]  # frontend layer names
    inputs: list[int]  # node ids of its operands' producers, in order
    group: int  # index into `groups`, -1: the top level


class GraphGroup(TypedDict):
    """A box that expands: a global function, a frontend layer path, a fused function (its
    parameters replaced by the call's arguments), or a run of consecutive children."""

    kind: str  # global | layer | function | range
    label: str
    parent: int  # index into `groups`, -1: the top level
    node_ids: list[int]  # a function group: the function's node id and its call's
    line: int  # first line of its members
    size: int  # nodes inside, at any depth
    own: int  # nodes directly inside that are not constants
    own_constants: int  # constants directly inside
    loaded: bool  # its own nodes are in `nodes` (else: GET .../graph/members?groups=)


class GraphHolders(TypedDict):
    """Every node of the graph, sent or not, as parallel arrays."""

    ids: list[int]  # node ids, in text order
    groups: list[int]  # the group directly holding each (-1: the top level)
    flags: list[int]  # bit 1: a constant; bit 2: a call without a span


class SnapshotGraph(TypedDict):
    """GET /api/snapshots/<id>/graph: the snapshot's dataflow graph and its groups. A graph
    of more than LAZY_NODES nodes comes `lazy`: `nodes` holds only the nodes of the groups
    open by default (and the top level), `links` the edges into the other groups."""

    snapshot_id: int
    lazy: bool
    nodes: list[GraphNode]
    groups: list[GraphGroup]
    holders: GraphHolders
    links: list[list[int]]  # [producer node id, consumer's group (not loaded), edge count]


class GraphMembers(TypedDict):
    """GET /api/snapshots/<id>/graph/members?groups=3,7: the nodes directly in those groups."""

    snapshot_id: int
    groups: list[int]
    nodes: list[GraphNode]


class GraphHit(TypedDict):
    id: int | None  # a node's id (a function group's: the function's), None: a layer group
    group: int | None  # a group that matched by its label
    line: int


class GraphSearch(TypedDict):
    """GET /api/snapshots/<id>/graph/search?q=relu (op, label, layer, node id) or
    ?layer=NAME (repeatable: the nodes with that span): matches in text order, at most
    `limit` (`total` counts them all)."""

    hits: list[GraphHit]
    total: int
